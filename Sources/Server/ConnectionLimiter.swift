// Limits on concurrent connections: in all and per peer, taken only once the peer is known.
// Over either, a connection's first request gets a clear 503.
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import RecdAPI
import Synchronization

/// The connection slots of the server, shared by every connection's `ConnectionLimitHandler`:
/// `limit` in all for the peers recd serves, and `perPeer` for each uid, served or not. Why both:
/// without the per-peer count one member could take every slot; and a peer the access check refuses
/// takes no slot of the `limit` (it only ever gets a 403), but still one of its own uid's, so that
/// it cannot hold an unbounded number of connections open either.
///
/// recd's own uid and root may hold all of the `limit` (their own clients: a player counting plays
/// from 32 connections, a test): `perPeer` protects them and each member from the others.
///
/// A connection over a limit stays open until its first request, to hear why (503). A uid may have
/// `waitingPerPeer` of those at once; one more is closed at once, unanswered: otherwise a peer could
/// open connections faster than they are refused and take every descriptor recd may have.
final class ConnectionSlots: Sendable {
    let limit: Int
    let perPeer: Int
    let waitingPerPeer = 16
    /// Slots held of the `limit`; per uid, its connections open (held or waiting to be refused) and
    /// the slots it holds.
    private let state = Mutex<(served: Int, byUID: [UInt32: (open: Int, held: Int)])>((0, [:]))

    /// uids whose own limit is the whole `limit`.
    let trusted: Set<UInt32>

    init(limit: Int, perPeer: Int, trusted: Set<UInt32> = [0, geteuid()]) {
        self.limit = limit
        self.perPeer = min(perPeer, limit)
        self.trusted = trusted
    }

    /// The slots `uid` may hold.
    func cap(_ uid: UInt32) -> Int { trusted.contains(uid) ? limit : perPeer }

    enum Refusal: Equatable { case serverFull, peerFull(uid: UInt32) }
    enum Admission: Equatable {
        /// A slot is held (one of the `limit` too if the peer is served).
        case held
        /// Over a limit: answer the first request with 503 and close.
        case refused(Refusal)
        /// Over a limit with as many refusals waiting as a uid may have: close now.
        case dropped
    }

    func take(uid: UInt32, served: Bool) -> Admission {
        state.withLock { s in
            var peer = s.byUID[uid, default: (0, 0)]
            let cap = cap(uid)
            if peer.open >= cap + waitingPerPeer { return .dropped }
            peer.open += 1
            defer { s.byUID[uid] = peer }
            if peer.held >= cap { return .refused(.peerFull(uid: uid)) }
            if served && s.served >= limit { return .refused(.serverFull) }
            peer.held += 1
            if served { s.served += 1 }
            return .held
        }
    }

    /// At the end of a connection `take` did not drop.
    func give(uid: UInt32, held: Bool, served: Bool) {
        state.withLock { s in
            guard var peer = s.byUID[uid] else { return }
            peer.open -= 1
            if held {
                peer.held -= 1
                if served { s.served -= 1 }
            }
            s.byUID[uid] = peer.open > 0 ? peer : nil
        }
    }

    func message(_ refusal: Refusal) -> String {
        switch refusal {
        case .serverFull: "recd is serving its limit of \(limit) connections; try again shortly"
        case .peerFull(let uid): "recd is serving its limit of \(cap(uid)) connections from uid \(uid); close one or try again shortly"
        }
    }
}

/// In each connection's pipeline after HTTP decoding. When the connection is set up it reads the
/// peer's credentials (before any slot is taken: who the peer is decides which slots it may have)
/// and takes its slots; a connection beyond a limit answers its first request with 503
/// `too_many_connections` (JSON, `Retry-After: 1`, `Connection: close`) and is closed, so a flood of
/// connections cannot starve the clients already served. One beyond the refusals a uid may have
/// waiting gets that 503 at once, before it asks, and is closed. A refused peer's request goes on
/// to the access check, which answers 403; the connection is closed once that answer is sent (with
/// `Connection: close`), so the peer cannot keep it by streaming a body after it.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    // Hummingbird's pipeline has converted NIO's HTTP/1 parts to swift-http-types' by here.
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let slots: ConnectionSlots
    private let policy: AccessPolicy
    /// What `slots` gave this connection, to give back at the end.
    private var taken: (uid: UInt32, held: Bool, served: Bool)?
    private var refusal: ConnectionSlots.Refusal?
    /// The peer is not served (the access check answers 403): its connection ends with the answer.
    private var closesAfterResponse = false

    init(slots: ConnectionSlots, policy: AccessPolicy) { self.slots = slots; self.policy = policy }

    func handlerAdded(context: ChannelHandlerContext) {
        // On the connection's event loop the socket options are read at once: the future is
        // complete before `whenComplete` returns, so no request is read before the decision.
        PeerCredentials.read(context.channel).assumeIsolated().whenComplete { [self] result in
            // Unreadable credentials (never seen on a Unix socket): no slot; the access check refuses.
            guard case .success(let (peer, groups)) = result else { closesAfterResponse = true; return }
            let served = policy.allows(peer, groups: groups)
            closesAfterResponse = !served
            switch slots.take(uid: peer.uid, served: served) {
            case .held: taken = (peer.uid, true, served)
            case .refused(let why): taken = (peer.uid, false, served); refusal = why
            case .dropped: answerAtOnceAndClose(context, .peerFull(uid: peer.uid))
            }
        }
    }

    /// The 503 written as bytes at the front of the pipeline, before any request has come (the HTTP
    /// handlers answer only requests), then the connection closed. A client is told why (recctl says
    /// recd is busy) instead of finding its connection reset; the descriptor goes as soon as before.
    private func answerAtOnceAndClose(_ context: ChannelHandlerContext, _ refusal: ConnectionSlots.Refusal) {
        guard let front = try? context.pipeline.syncOperations.context(handlerType: RequestBytesSignal.self) else {
            context.close(promise: nil)
            return
        }
        let json = String(decoding: refusalJSON(refusal), as: UTF8.self)
        let response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(json.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + json
        front.writeAndFlush(NIOAny(ByteBuffer(string: response))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    private func refusalJSON(_ refusal: ConnectionSlots.Refusal) -> Data {
        let body = APIErrorBody(code: .tooManyConnections, message: slots.message(refusal))
        return ((try? APIJSON.encoder().encode(body)) ?? Data()) + Data("\n".utf8)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let taken { slots.give(uid: taken.uid, held: taken.held, served: taken.served); self.taken = nil }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let refusal else { context.fireChannelRead(data); return }
        guard case .head = unwrapInboundIn(data) else { return }   // the rest of a refused request is dropped
        let json = refusalJSON(refusal)
        let head = HTTPResponse(status: .serviceUnavailable, headerFields: [
            .contentType: "application/json", .contentLength: String(json.count),
            .retryAfter: "1", .connection: "close",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: json))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard closesAfterResponse else { context.write(data, promise: promise); return }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let written = context.eventLoop.makePromise(of: Void.self)
            if let promise { written.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
