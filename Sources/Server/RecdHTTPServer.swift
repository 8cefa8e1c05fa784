// recd's HTTP/1 server: Hummingbird's HTTP/1 channel and recd's router on an accept loop of our own.
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// An HTTP/1 server on a Unix socket: one it binds at a path, or one systemd passed (socket
/// activation; Hummingbird binds only by address). Graceful shutdown stops accepting and quiesces
/// open connections, as Hummingbird's own server does.
///
/// Why not Hummingbird's `Application`: it runs a date-header cache that wakes every second, for
/// ever, to reformat the time (`DateCache`): an idle daemon should not wake at all. The Date header is
/// formatted here when a response is written instead (a strftime, about a microsecond).
struct RecdHTTPServer: Service {
    enum Listener: Sendable {
        /// Bind a new socket at this path (a stale one from a killed recd is replaced: the instance
        /// lock, taken before, says no live recd serves on it).
        case path(String)
        /// The listening socket systemd passed.
        case inherited(Int32)
    }
    let listener: Listener
    let responder: RouterResponder<RecdRequestContext>
    let configuration: HTTP1Channel.Configuration
    let timeouts: ConnectionTimeouts
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
        let responder = self.responder, logger = self.logger, serverName = self.serverName, timeouts = self.timeouts
        // The timeouts' two handlers: one that sees raw bytes (before HTTP decoding, added below) and
        // one that sees requests and responses (after the caller's handlers).
        var configuration = self.configuration
        let additional = configuration.additionalChannelHandlers
        configuration.additionalChannelHandlers = { additional() + [ConnectionTimeoutHandler(timeouts: timeouts, logger: logger)] }
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
        let setUp: @Sendable (any Channel) -> EventLoopFuture<HTTP1Channel.Value> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RequestBytesSignal())
            }.flatMap { childChannel.setup(channel: channel, logger: logger) }
        }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
        let server: NIOAsyncChannel<HTTP1Channel.Value, Never>
        switch listener {
        case .path(let path):
            server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: setUp)
        case .inherited(let descriptor):
            server = try await bootstrap.bind(NIOBSDSocket.Handle(descriptor), childChannelInitializer: setUp)
            logger.info("serving on the socket systemd passed (fd \(descriptor))")
        }
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
