// Each row's API JSON, kept between listings until a write could change it.
import Synchronization

/// The JSON of recently listed rows (`RecordingJSON`'s bytes), by id, so that a listing of rows
/// already rendered runs one index-only query for the page's ids and copies bytes: building 50
/// `Recording`s and writing their JSON was three quarters of a Quick Play reply (BENCHMARKS.md).
///
/// Consistency with the database, without holding a lock across a transaction (a seqlock's idea):
/// every write bumps `generation` before it starts and again after it ends, dropping what it may
/// change both times, and `writers` counts those under way. A reader notes the generation before
/// its read transaction; its snapshot then matches the cache only if no write started in between,
/// which `lookup` and `store` check under the lock (generation unchanged). A write that started
/// since makes the reader render every row from its own snapshot and keep nothing.
final class RenderedRows: Sendable {
    private struct State {
        var generation = 0
        var writers = 0
        var json: [String: [UInt8]] = [:]
    }
    private let state = Mutex(State())

    /// Rows kept at most (about 600 bytes each): the pages people look at, not the library. When
    /// full, everything is dropped and the next pages fill it again.
    static let capacity = 2048

    /// A write begins. `ids`: the only rows it can change (a play count), or nil for any row.
    func beginWrite(changing ids: [String]? = nil) {
        state.withLock { s in
            s.generation &+= 1
            s.writers += 1
            Self.drop(ids, from: &s)
        }
    }

    /// The write ended (committed or rolled back).
    func endWrite(changing ids: [String]? = nil) {
        state.withLock { s in
            s.generation &+= 1
            s.writers -= 1
            Self.drop(ids, from: &s)
        }
    }

    private static func drop(_ ids: [String]?, from s: inout State) {
        if let ids { for id in ids { s.json[id] = nil } } else { s.json.removeAll(keepingCapacity: true) }
    }

    /// The generation a read transaction starting now will see, or nil while a write is under way
    /// (its commit could land before the reader's snapshot or after).
    func readerGeneration() -> Int? {
        state.withLock { $0.writers == 0 ? $0.generation : nil }
    }

    /// The kept JSON of `ids` in order, nil for those not kept; nil as a whole if a write started
    /// since `generation` was read (the reader's snapshot may then be newer than what is kept).
    func lookup(_ ids: [String], at generation: Int) -> [[UInt8]?]? {
        state.withLock { s in
            guard s.generation == generation else { return nil }
            return ids.map { s.json[$0] }
        }
    }

    /// Keeps rows rendered from a snapshot taken at `generation`, unless a write started since.
    func store(_ rows: [(id: String, json: [UInt8])], at generation: Int) {
        state.withLock { s in
            guard s.generation == generation else { return }
            if s.json.count + rows.count > Self.capacity { s.json.removeAll(keepingCapacity: true) }
            for row in rows.prefix(Self.capacity) { s.json[row.id] = row.json }
        }
    }

    /// Rows kept now (tests).
    var count: Int { state.withLock { $0.json.count } }
}
