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
/// connections cannot starve the clients already served. A refused peer's requests go on to the
/// access check, which answers 403.
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

    init(slots: ConnectionSlots, policy: AccessPolicy) { self.slots = slots; self.policy = policy }

    func handlerAdded(context: ChannelHandlerContext) {
        // On the connection's event loop the socket options are read at once: the future is
        // complete before `whenComplete` returns, so no request is read before the decision.
        PeerCredentials.read(context.channel).assumeIsolated().whenComplete { [self] result in
            // Unreadable credentials (never seen on a Unix socket): no slot; the access check refuses.
            guard case .success(let (peer, groups)) = result else { return }
            let served = policy.allows(peer, groups: groups)
            switch slots.take(uid: peer.uid, served: served) {
            case .held: taken = (peer.uid, true, served)
            case .refused(let why): taken = (peer.uid, false, served); refusal = why
            case .dropped: context.close(promise: nil)
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let taken { slots.give(uid: taken.uid, held: taken.held, served: taken.served); self.taken = nil }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let refusal else { context.fireChannelRead(data); return }
        guard case .head = unwrapInboundIn(data) else { return }   // the rest of a refused request is dropped
        let body = APIErrorBody(code: .tooManyConnections, message: slots.message(refusal))
        let json = (try? APIJSON.encoder().encode(body)) ?? Data()
        let head = HTTPResponse(status: .serviceUnavailable, headerFields: [
            .contentType: "application/json", .contentLength: String(json.count + 1),
            .retryAfter: "1", .connection: "close",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: json + Data("\n".utf8)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
