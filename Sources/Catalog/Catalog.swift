// The SQLite catalog of recordings (GRDB over the system libsqlite3, WAL mode).
import Foundation
import GRDB
import RecdAPI
import Synchronization

public enum CatalogError: Error, CustomStringConvertible, Sendable {
    case open(path: String, underlying: String)
    case notFound(id: String)
    case ambiguous(prefix: String, matches: [String])
    case prefixTooShort(prefix: String, minimum: Int)
    case corruptRow(id: String, detail: String)
    /// A conditional write found the row in another state.
    case unexpectedState(id: String, state: String)
    /// An import's content is already the recording `existingID`.
    case duplicate(existingID: String)
    /// The recording has no marker with that id.
    case markerNotFound(recording: String, marker: String)
    /// The recording holds as many markers as one may.
    case tooManyMarkers(id: String, limit: Int)
    case database(operation: String, underlying: String)

    public var description: String {
        switch self {
        case .open(let path, let e): return "cannot open catalog \(path): \(e)"
        case .notFound(let id): return "no recording with id '\(id)'"
        case .ambiguous(let p, let m): return "id prefix '\(p)' matches \(m.count) recordings: \(m.joined(separator: ", "))"
        case .prefixTooShort(let p, let n): return "id prefix '\(p)' is too short: give at least \(n) characters"
        case .corruptRow(let id, let d): return "catalog row \(id) is corrupt: \(d)"
        case .unexpectedState(let id, let state): return "recording \(id) is \(state)"
        case .duplicate(let id): return "the same content is already recording \(id)"
        case .markerNotFound(let r, let m): return "recording \(r) has no marker \(m)"
        case .tooManyMarkers(let id, let limit): return "recording \(id) already has \(limit) markers, the most one may hold"
        case .database(let op, let e): return "catalog \(op) failed: \(e)"
        }
    }
}

/// The catalog. Every write is one transaction; invariants (unique file, valid enums, non-negative
/// counts) live in the schema. Safe to share between tasks: GRDB's pool serializes writes.
public final class Catalog: Sendable {
    public static let minimumPrefixLength = 4

    package let pool: DatabasePool
    public let path: String
    /// `list`'s totals per filter, counted once and kept until a write could change them (every write
    /// but a play count), so paging through a large library does not count every row for each page.
    /// The generation tells a count that raced a write (read before it, stored after) from a good one.
    let totals = Mutex<(generation: Int, counts: [String: Int])>((0, [:]))

    public init(path: String) throws {
        self.path = path
        var config = Configuration()
        config.busyMode = .timeout(5)
        do {
            pool = try DatabasePool(path: path, configuration: config)
            // FULL: a committed state change survives power loss, not only a process crash (each
            // commit fsyncs the WAL). Set here, on the pool's one writer connection, after the pool
            // is open: GRDB's WAL set-up sets NORMAL after `prepareDatabase` runs (NORMAL lost
            // acknowledged changes to power cuts in the VM test).
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.migrator.migrate(pool)
        } catch {
            throw CatalogError.open(path: path, underlying: "\(error)")
        }
    }

    /// Every write but a play count: the transaction, then the cached totals are dropped (a row added,
    /// removed, or moved to another state or type).
    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        defer { totals.withLock { $0.generation += 1; $0.counts.removeAll() } }
        return try pool.write(updates)
    }

    /// SQLite's errors as `CatalogError.database`, naming the operation; anything else (a
    /// CatalogError, or an error thrown by a caller's closure) passes through.
    func wrap<T>(_ operation: String, _ body: () throws -> T) throws -> T {
        do { return try body() }
        catch let e as DatabaseError { throw CatalogError.database(operation: operation, underlying: "\(e)") }
    }
}
