// How long a connection may wait between requests: a request head must arrive in time, and a
// keep-alive connection left idle is closed (as nginx's client_header_timeout and keepalive_timeout,
// Go's ReadHeaderTimeout and IdleTimeout). Without them a slot was held for as long as a client liked.
import Logging
import NIOCore
import NIOHTTPTypes

/// The two timeouts (`--request-head-timeout`, `--keep-alive-timeout`).
public struct ConnectionTimeouts: Sendable {
    /// From the first byte of a request (or from connect) until its head is complete. 10 s: a client
    /// on the same machine sends a head in microseconds; a head that takes seconds is stuck or hostile.
    public var requestHead: TimeAmount = .seconds(10)
    /// From the end of a response until the first byte of the next request. 60 s: long enough for a
    /// GUI's next click to reuse the connection, short enough that forgotten ones go.
    public var keepAlive: TimeAmount = .seconds(60)
    public init() {}
}

/// Sent inbound, before each read of raw bytes, by `RequestBytesSignal`: a request has begun to
/// arrive, which the HTTP parts only show once its whole head is there.
struct RequestBytesArrived {}

/// At the front of the pipeline, before HTTP decoding: raises `RequestBytesArrived`.
final class RequestBytesSignal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireUserInboundEventTriggered(RequestBytesArrived())
        context.fireChannelRead(data)
    }
}

/// After HTTP decoding: closes the connection when a request head does not arrive within
/// `requestHead` of its first byte (or of connect), or when no request begins within `keepAlive`
/// of the last response. No timer runs while a request is in progress: its body, and a response such
/// as an event stream, take as long as they take.
final class ConnectionTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeouts: ConnectionTimeouts
    private let logger: Logger
    /// Requests whose head was read and whose response has not ended.
    private var inProgress = 0
    /// Between requests, before a byte of the next one arrived (the keep-alive timer runs).
    private var idle = false
    private var timer: Scheduled<Void>?

    init(timeouts: ConnectionTimeouts, logger: Logger) { self.timeouts = timeouts; self.logger = logger }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context, timeouts.requestHead, "no request head")   // the first head, from connect
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel(); timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inProgress += 1
            idle = false
            timer?.cancel(); timer = nil
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is RequestBytesArrived else { context.fireUserInboundEventTriggered(event); return }
        // The next request began: its head now has `requestHead`, however long the wait was.
        if idle {
            idle = false
            arm(context, timeouts.requestHead, "no request head")
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), inProgress > 0 {
            inProgress -= 1
            if inProgress == 0 {
                idle = true
                arm(context, timeouts.keepAlive, "idle")
            }
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext, _ delay: TimeAmount, _ reason: String) {
        timer?.cancel()
        let logger = self.logger
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            logger.debug("closing a connection: \(reason) for \(Double(delay.nanoseconds) / 1e9) s")
            context.close(promise: nil)
        }
    }
}
