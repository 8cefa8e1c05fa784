// The daemon as a whole: engine + HTTP server on the Unix socket, run as services.
import Engine
import RecdAPI
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// Finalizes an active recording when the daemon is asked to stop (SIGTERM/SIGINT), so it is kept as
/// pending rather than lost.
struct RecorderShutdownService: Service {
    let recorder: Recorder
    func run() async throws {
        try? await gracefulShutdown()
        await recorder.shutdown()
    }
}

public struct RecdDaemon {
    public var engine: Engine
    public var socketPath: String
    public var socketMode: mode_t
    public var logger: Logger

    public init(engine: Engine, socketPath: String, socketMode: mode_t = 0o660, logger: Logger) {
        self.engine = engine; self.socketPath = socketPath; self.socketMode = socketMode; self.logger = logger
    }

    /// Takes the instance lock, runs recovery, serves until SIGTERM/SIGINT.
    public func run() async throws {
        let dir = URL(fileURLWithPath: socketPath).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let lock = try InstanceLock(socketPath: socketPath)
        let report = engine.recover()
        if !report.salvaged.isEmpty {
            logger.warning("recovery: \(report.salvaged.count) interrupted recording(s) salvaged as pending")
        }
        let router = RecdRoutes.router(engine: engine, identity: DaemonIdentity(socketPath: socketPath))
        let socketPath = self.socketPath
        let mode = socketMode
        let logger = self.logger
        let app = Application(
            router: router,
            configuration: .init(address: .unixDomainSocket(path: socketPath), serverName: "recd"),
            services: [RecorderShutdownService(recorder: engine.recorder)],
            onServerRunning: { _ in
                chmod(socketPath, mode)
                logger.info("recd \(RecdVersion.current) listening on \(socketPath)")
            },
            logger: logger)
        try await app.runService()
        withExtendedLifetime(lock) {}
        unlink(socketPath)
        logger.info("recd stopped")
    }
}
