// Group commit of play counts: concurrent plays share one transaction and one fsync.
import Catalog
import Foundation
import RecdAPI
import Storage
import Synchronization

/// Counts plays with group commit. A play waits in a queue; one writer at a time (on `BlockingPool`)
/// takes everything queued, counts it in one transaction (`Catalog.countPlays`: one fsync under
/// `synchronous=FULL`) and answers each play once that commit is on the disk — so a reply still
/// means "durable", but 32 clients pay for one fsync instead of 32. While a commit is under way the
/// next plays gather behind it: the busier it is, the bigger the batches.
package final class PlayCountCommitter: Sendable {
    private struct Play: Sendable {
        let id: UUID
        let at: Date
        let reply: CheckedContinuation<Result<Recording, CatalogError>, any Error>
    }
    private struct State {
        var queue: [Play] = []
        var writing = false
    }
    private let state = Mutex(State())
    private let catalog: Catalog

    /// Plays counted in one transaction at most (a bound on one commit's length).
    static let maxBatch = 512

    package init(catalog: Catalog) { self.catalog = catalog }

    /// Counts one play of `id`; returns the row after it once it is durable. Throws `CatalogError`.
    func count(id: UUID, at date: Date = Date()) async throws -> Recording {
        let result = try await withCheckedThrowingContinuation { (reply: CheckedContinuation<Result<Recording, CatalogError>, any Error>) in
            let startWriter = state.withLock { s -> Bool in
                s.queue.append(Play(id: id, at: date, reply: reply))
                if s.writing { return false }
                s.writing = true
                return true
            }
            if startWriter { BlockingPool.shared.submit { _ in self.drain() } }
        }
        return try result.get()
    }

    /// The writer: commits what is queued, batch after batch, until the queue is empty.
    private func drain() {
        while true {
            let batch = state.withLock { s -> [Play] in
                if s.queue.isEmpty { s.writing = false; return [] }
                let n = min(s.queue.count, Self.maxBatch)
                defer { s.queue.removeFirst(n) }
                return Array(s.queue.prefix(n))
            }
            if batch.isEmpty { return }
            do {
                let results = try catalog.countPlays(batch.map { ($0.id, $0.at) })
                for (play, result) in zip(batch, results) { play.reply.resume(returning: result) }
            } catch {
                for play in batch { play.reply.resume(throwing: error) }
            }
        }
    }
}
