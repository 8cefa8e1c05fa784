// A limit on concurrent connections: over it, a connection's first request gets a clear 503.
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import RecdAPI
import Synchronization

/// Counts open connections across the server. Shared by every connection's `ConnectionLimitHandler`.
final class ConnectionCounter: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    init(limit: Int) { self.limit = limit }

    /// Takes a slot; false when all are taken (the slot is not held then).
    func enter() -> Bool {
        let now = open.wrappingAdd(1, ordering: .relaxed).newValue
        if now > limit { open.wrappingSubtract(1, ordering: .relaxed); return false }
        return true
    }
    func leave() { open.wrappingSubtract(1, ordering: .relaxed) }
}

/// In each connection's pipeline after HTTP decoding: a connection beyond the limit answers its
/// first request with 503 `too_many_connections` (JSON, `Retry-After: 1`, `Connection: close`)
/// and is closed, so a flood of connections cannot starve the clients already served.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    // Hummingbird's pipeline has converted NIO's HTTP/1 parts to swift-http-types' by here.
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let counter: ConnectionCounter
    private var admitted = false
    private var refusing = false

    init(counter: ConnectionCounter) { self.counter = counter }

    func handlerAdded(context: ChannelHandlerContext) {
        admitted = counter.enter()
        refusing = !admitted
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if admitted { counter.leave(); admitted = false }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusing else { context.fireChannelRead(data); return }
        guard case .head = unwrapInboundIn(data) else { return }   // the rest of a refused request is dropped
        let body = APIErrorBody(code: .tooManyConnections,
                                message: "recd is serving its limit of \(counter.limit) connections; try again shortly")
        let json = (try? APIJSON.encoder().encode(body)) ?? Data()
        let head = HTTPResponse(status: .serviceUnavailable, headerFields: [
            .contentType: "application/json", .contentLength: String(json.count + 1),
            .retryAfter: "1", .connection: "close",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: json + Data("\n".utf8)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}
