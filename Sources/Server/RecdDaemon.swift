// The daemon as a whole: engine + HTTP server on the Unix socket, run as services.
import Engine
import RecdAPI
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// Stops the sessions at SIGTERM/SIGINT (`Engine.stopSessions`). In the group twice: the first to
/// stop, while the server still serves, so `recording.stopped` (reason `shutdown`) and the playback's
/// events reach the clients listening before the server ends their streams; and the last, for
/// anything a request started meanwhile.
struct SessionsShutdownService: Service {
    let engine: Engine
    func run() async throws {
        try? await gracefulShutdown()
        await engine.stopSessions()
    }
}

/// Sends a heartbeat down every event stream every 15 s — while there is one: with no client
/// listening it waits for one, and an idle recd does not wake.
struct EventHeartbeatService: Service {
    let events: EventHub
    func run() async throws {
        // Cancelled (out of its wait or its sleep) as soon as shutdown begins.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await events.waitForHeartbeatListener()
                try await Task.sleep(for: .seconds(15))
                events.heartbeat()
            }
        }
    }
}

public struct SocketDirectoryError: Error, CustomStringConvertible {
    public var path: String
    public var problem: String
    public var description: String { "refusing to put the socket in \(path): \(problem)" }
}

public struct RecdDaemon {
    public var engine: Engine
    public var socketPath: String
    public var socketMode: mode_t
    /// The group that may use recd (the socket's group and the access policy's); nil = the owner alone.
    public var socketGroup: gid_t?
    /// Concurrent connections served; more get 503 `too_many_connections`.
    public var maxConnections: Int = 64
    /// Concurrent connections of one uid (at most `maxConnections`); more get 503 too.
    public var maxConnectionsPerPeer: Int = 16
    public var timeouts = ConnectionTimeouts()
    public var logger: Logger

    public init(engine: Engine, socketPath: String, socketMode: mode_t = 0o660, socketGroup: gid_t? = nil, logger: Logger) {
        self.engine = engine; self.socketPath = socketPath; self.socketMode = socketMode
        self.socketGroup = socketGroup; self.logger = logger
    }

    /// Resolves `--socket-group` (a name or a number).
    public static func group(named name: String) -> gid_t? {
        if let g = getgrnam(name) { return g.pointee.gr_gid }
        return gid_t(name)
    }

    /// The socket's directory must be ours and not writable by others: an existing one (say a
    /// `/tmp/recd-UID` made by someone else) could let another user replace the socket.
    static func checkSocketDirectory(_ dir: String) throws {
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            throw SocketDirectoryError(path: dir, problem: String(cString: strerror(errno)))
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw SocketDirectoryError(path: dir, problem: "it is not a directory (a symbolic link?)")
        }
        guard st.st_uid == geteuid() else {
            throw SocketDirectoryError(path: dir, problem: "it belongs to uid \(st.st_uid), not to this user (\(geteuid()))")
        }
        guard st.st_mode & 0o022 == 0 else {
            throw SocketDirectoryError(path: dir, problem: String(format: "others may write to it (mode %o)", st.st_mode & 0o777))
        }
    }

    /// Takes the instance lock, runs recovery, serves until SIGTERM/SIGINT: on the socket systemd
    /// passed (socket activation, `LISTEN_FDS`) or on one of its own at `socketPath`.
    public func run() async throws {
        let activated = SocketActivation.listenFDs()
        if activated.count > 1 {
            logger.warning("systemd passed \(activated.count) sockets; serving on the first")
        }
        // The socket systemd made has its path, mode and group from the .socket unit.
        let inherited = activated.first
        let socketPath = inherited.flatMap(SocketActivation.path(of:)) ?? self.socketPath
        if inherited == nil {
            try prepareSocketDirectory()
        }
        let lock = try InstanceLock.acquire(socketPath: socketPath)
        _ = engine.recover()   // logs what it found; status and check show it
        let policy = AccessPolicy(allowedGID: socketGroup)
        // Said once, so that who is trusted is never a surprise.
        let unmapped = policy.rootIsMapped ? "" : "; root is not mapped into recd's user namespace (PrivateUsers=), so root's clients are refused"
        logger.info("serving \(policy.who)\(socketGroup == nil ? " (no --socket-group names a group to let in)" : "")\(unmapped)")
        let router = RecdRoutes.router(engine: engine, identity: DaemonIdentity(socketPath: socketPath), policy: policy)
        let group = socketGroup
        let mode = socketMode
        let logger = self.logger
        let notifier = SystemdNotifier()
        // STOPPING=1 as soon as the signal arrives (ServiceLifecycle then stops the sessions and the server).
        // On a queue of its own: a source on a global queue (the default) is set up by a worker
        // of Dispatch's pool, whose first worker starts the pool's 1 s monitor (ConcurrencyOnEventLoops).
        let signalQueue = DispatchQueue(label: "recd.stopping-signals")
        let stopping = [SIGTERM, SIGINT].map { sig -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
            source.setEventHandler { notifier.notify("STOPPING=1") }
            source.resume()
            return source
        }
        defer { stopping.forEach { $0.cancel() } }
        let slots = ConnectionSlots(limit: maxConnections, perPeer: maxConnectionsPerPeer)
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [ConnectionLimitHandler(slots: slots, policy: policy)])
        let services: [any Service] = [SessionsShutdownService(engine: engine), EventHeartbeatService(events: engine.events),
                                       SystemdStatusService(engine: engine, notifier: notifier), LoudnessPassService(engine: engine), ChapterPassService(engine: engine),
                                       TranscriptionPassService(engine: engine), BackupsService(engine: engine), ListenResumeService(engine: engine)]
        let ready: @Sendable () -> Void = {
            logger.info("recd \(RecdVersion.current) listening on \(socketPath)")
            // Recovery is done and the socket accepts requests: ready.
            notifier.notify("READY=1\n" + SystemdNotifier.statusLine("idle"))
        }
        let server = RecdHTTPServer(listener: inherited.map { .inherited($0) } ?? .path(socketPath), responder: router.buildResponder(),
                                    configuration: http1, timeouts: timeouts, serverName: "recd", logger: logger, onServerRunning: {
            if inherited == nil {
                // Our own socket: its group and mode (systemd's has them from the .socket unit).
                if let group, chown(socketPath, uid_t.max, group) != 0 {
                    logger.error("cannot give the socket to group \(group): \(String(cString: strerror(errno)))")
                }
                chmod(socketPath, mode)
            }
            ready()
        })
        // Shut down in reverse order: the sessions' stop first (its events still reach the streams),
        // then the server, as in Hummingbird's Application, then the rest.
        let serviceGroup = ServiceGroup(configuration: .init(services: services + [server, SessionsShutdownService(engine: engine)],
                                                             gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await serviceGroup.run()
        // Said again before exiting: the signal's handler runs on a Dispatch thread, and a quick
        // shutdown can end the process before it does (systemd takes the repeat as it is).
        notifier.notify("STOPPING=1")
        if inherited == nil { unlink(socketPath) }   // ours; systemd's socket stays for the next activation
        withExtendedLifetime(lock) {}
        logger.info("recd stopped")
    }

    /// Creates the socket's directory (0700, or 0750 with the socket group) and checks an existing one.
    private func prepareSocketDirectory() throws {
        let dir = URL(fileURLWithPath: socketPath).deletingLastPathComponent().path
        let created = !FileManager.default.fileExists(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        if created, let group = socketGroup {
            // Only the owner and the socket's group may enter the directory we made.
            if chown(dir, uid_t.max, group) != 0 || chmod(dir, 0o750) != 0 {
                throw SocketDirectoryError(path: dir, problem: "cannot give it to group \(group): \(String(cString: strerror(errno)))")
            }
        }
        try Self.checkSocketDirectory(dir)
    }
}
