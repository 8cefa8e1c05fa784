// Fan-out of events to every listener of /v1/events, without ever blocking the publisher.
import Foundation
import Metering
import RecdAPI
import Storage
import Synchronization

/// Publishes events to subscribers. `publish` never blocks and never waits for a subscriber (it is
/// called from the capture and playback threads): each subscriber has a bounded queue; a full queue
/// skips meter events, and a subscriber that cannot take any other event is dropped (its stream
/// ends), so one stalled client never slows recording or other clients.
public final class EventHub: Sendable {
    /// Events a subscriber may have queued: ~25 s of 50 ms meters.
    public static let queueCapacity = 512

    /// What a subscriber receives: events, and heartbeats (so an idle stream shows it is alive and
    /// a vanished client is noticed at the next write).
    public enum Delivery: Sendable { case event(RecdEvent), heartbeat }

    private struct Subscriber {
        let continuation: AsyncStream<Delivery>.Continuation
        let types: Set<EventType>?
        let heartbeats: Bool
    }
    private struct State {
        var seq = 0
        var subscribers: [UUID: Subscriber] = [:]
        var meterListeners = 0
        /// Who waits for a subscriber that takes heartbeats (the heartbeat service, while there is none).
        var heartbeatWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var libraryObservers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    public init() {}

    /// A new subscription to `types` (all when nil). The stream ends when the subscriber is dropped
    /// or `unsubscribe` is called. `heartbeats`: whether it gets them (a client over the network does;
    /// recd's own listeners need none, and an idle recd with no client then never wakes for them).
    public func subscribe(types: Set<EventType>?, heartbeats: Bool = true) -> (id: UUID, events: AsyncStream<Delivery>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Delivery>.makeStream(bufferingPolicy: .bufferingOldest(Self.queueCapacity))
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.subscribers[id] = Subscriber(continuation: continuation, types: types, heartbeats: heartbeats)
            if Self.takesLevels(types) { s.meterListeners += 1 }
            guard heartbeats else { return [] }
            defer { s.heartbeatWaiters.removeAll() }
            return Array(s.heartbeatWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return (id, stream)
    }

    public func unsubscribe(_ id: UUID) {
        let removed = state.withLock { s -> Subscriber? in
            guard let sub = s.subscribers.removeValue(forKey: id) else { return nil }
            if Self.takesLevels(sub.types) { s.meterListeners -= 1 }
            return sub
        }
        removed?.continuation.finish()
    }

    /// Whether anyone listens to meters or listening's levels (neither is run for nobody).
    public var wantsMeters: Bool { state.withLock { $0.meterListeners > 0 } }

    /// Levels (`meter`, `listen.level`): many a second, each superseded by the next, so a slow client
    /// skips some rather than be dropped.
    static let levelTypes: Set<EventType> = [.meter, .listenLevel]
    static func takesLevels(_ types: Set<EventType>?) -> Bool { types.map { !$0.isDisjoint(with: levelTypes) } ?? true }

    public func heartbeat() {
        state.withLock { s in for sub in s.subscribers.values where sub.heartbeats { sub.continuation.yield(.heartbeat) } }
    }

    /// Returns once some subscriber takes heartbeats (at once if one does), or when the task is
    /// cancelled: the heartbeat timer runs only while someone listens.
    public func waitForHeartbeatListener() async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if Task.isCancelled || s.subscribers.values.contains(where: \.heartbeats) { return true }
                    s.heartbeatWaiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.heartbeatWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Ends every subscription (daemon shutdown: open streams must not hold it up).
    public func finishAll() {
        let all = state.withLock { s -> [Subscriber] in
            defer { s.subscribers.removeAll(); s.meterListeners = 0 }
            return Array(s.subscribers.values)
        }
        for sub in all { sub.continuation.finish() }
    }

    /// Calls `body` after each event that says the library's stored state changed (a recording made,
    /// edited, played, deleted; a take stopped; a transcript done): the backups' trigger. It must
    /// not block (it runs on the publisher's thread).
    public func observeLibraryChanges(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.libraryObservers.append(body) }
    }

    public func publish(_ payload: EventPayload) {
        let type = payload.type
        var dropped: [Subscriber] = []
        if [.libraryChanged, .recordingStopped, .transcriptDone].contains(type) {
            for observer in state.withLock({ $0.libraryObservers }) { observer() }
        }
        state.withLock { s in
            s.seq += 1
            let event = RecdEvent(seq: s.seq, at: Date(), payload: payload)
            for (id, sub) in s.subscribers where sub.types?.contains(type) ?? true {
                if case .dropped = sub.continuation.yield(.event(event)), !Self.levelTypes.contains(type) {
                    // It missed an event that matters: better a clear end than a silent gap.
                    s.subscribers.removeValue(forKey: id)
                    if Self.takesLevels(sub.types) { s.meterListeners -= 1 }
                    dropped.append(sub)
                }
            }
        }
        for sub in dropped { sub.continuation.finish() }
    }
}

/// Holds back a thread's events (meters, progress) until the event that announces them
/// (`recording.started`, `playback.started`) is out: listeners see them in a sensible order.
final class EventGate: Sendable {
    private let open = Atomic<Bool>(false)
    var isOpen: Bool { open.load(ordering: .acquiring) }
    func openGate() { open.store(true, ordering: .releasing) }
}

extension ChannelLevel {
    /// The channels of a meter reading, as the API shows them.
    static func from(_ r: LevelReading) -> [ChannelLevel] {
        (0..<r.peak.count).map { ChannelLevel(peak: r.peak[$0], rms: r.rms[$0], decay: r.decay[$0]) }
    }
}
