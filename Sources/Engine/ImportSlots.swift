// How many imports and enhanced copies do their media work at once.
import Storage

/// At most `count` imports hold a `BlockingPool` thread (and a media worker) at a time; the others
/// wait here, holding nothing. Why: the pool's 8 threads also serve every edit, delete and save, and
/// an import is a client's bytes run through FFmpeg for as long as the worker's stall limit allows:
/// a client sending many hostile or huge files at once could otherwise take every thread, and edits
/// would wait for the imports. An enhanced copy (a recording decoded, filtered and encoded: up to a
/// minute or two for an hour) takes one too. Waiters are served in order of arrival.
actor ImportSlots {
    private let count: Int
    private var busy = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { self.count = count }

    /// Runs `body` once a slot is free; the slot is given back when it returns or throws.
    func run<T: Sendable>(_ body: @Sendable () async throws(EngineError) -> T) async throws(EngineError) -> T {
        if busy < count {
            busy += 1
        } else {
            await withCheckedContinuation { waiting.append($0) }   // the slot is handed over by `leave`
        }
        defer { leave() }
        return try await body()
    }

    private func leave() {
        if waiting.isEmpty { busy -= 1 } else { waiting.removeFirst().resume() }
    }
}
