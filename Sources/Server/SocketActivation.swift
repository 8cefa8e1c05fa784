// systemd socket activation: serving on a listening socket the service manager passed in.
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// The sd_listen_fds(3) protocol, without libsystemd.
public enum SocketActivation {
    /// The descriptors passed by the service manager (from 3 on), if `LISTEN_PID` is this process.
    /// The variables are removed, so that children do not take the sockets for theirs.
    public static func listenFDs(environment: [String: String] = ProcessInfo.processInfo.environment) -> [Int32] {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int32.init), count > 0 else { return [] }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        return (0..<count).map { fd in
            _ = fcntl(3 + fd, F_SETFD, FD_CLOEXEC)
            return 3 + fd
        }
    }

    /// The filesystem path a Unix listening socket is bound to (nil for other sockets).
    public static func path(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}

/// An HTTP/1 server on an inherited listening socket: Hummingbird's HTTP/1 channel and recd's router,
/// on an accept loop of our own (Hummingbird binds only by address). Graceful shutdown stops
/// accepting and quiesces open connections, as Hummingbird's own server does.
struct ActivatedHTTPServer: Service {
    let descriptor: Int32
    let responder: RouterResponder<RecdRequestContext>
    let configuration: HTTP1Channel.Configuration
    let serverName: String
    let logger: Logger
    let onServerRunning: @Sendable () async -> Void

    /// An IMF-fixdate (RFC 9110 §5.6.7): "Sun, 06 Nov 1994 08:49:37 GMT".
    static func httpDate(_ now: time_t = time(nil)) -> String {
        var t = now, tm = tm()
        gmtime_r(&t, &tm)
        var buffer = [CChar](repeating: 0, count: 40)
        let n = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &tm)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func run() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let quiescing = ServerQuiescingHelper(group: group)
        let responder = self.responder, logger = self.logger, serverName = self.serverName
        let childChannel = HTTP1Channel(responder: { request, responseWriter, channel in
            let context = RecdRequestContext(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch {
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = Self.httpDate()
            response.headers[.server] = serverName
            try await responseWriter.write(response: response.head, body: response.body)
        }, configuration: configuration)
        let server = try await ServerBootstrap(group: group)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .bind(NIOBSDSocket.Handle(descriptor)) { channel in childChannel.setup(channel: channel, logger: logger) }
        logger.info("serving on the socket systemd passed (fd \(descriptor))")
        await onServerRunning()
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { tasks in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        tasks.addTask { await childChannel.handle(value: connection, logger: logger) }
                    }
                }
            }
        } onGracefulShutdown: {
            quiescing.initiateShutdown(promise: nil)
        }
    }
}
