// The catalog's copy for a backup's snapshot (issue 48).
import Foundation
import GRDB

extension Catalog {
    /// Writes a consistent copy of the whole catalog to `path` (SQLite's `VACUUM INTO`: one read of
    /// a committed state, compacted; the live database and its WAL stay as they are). On the pool's
    /// writer, without a transaction (VACUUM refuses to run inside one): writes wait meanwhile,
    /// milliseconds for a catalog of thousands of recordings. Blocking.
    public func backupCopy(to path: String) throws {
        try wrap("backup copy") {
            try pool.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [path]) }
        }
    }

    /// In the copy at `path`: drops the rows of takes still being recorded (their file is not
    /// complete, so it is not in the snapshot; their waveform, poster and transcript rows go with
    /// them), and returns the `file` of every other recording whose file the snapshot should hold
    /// (saved and pending ones: missing ones have none). Blocking.
    public static func prepareBackupCopy(at path: String) throws -> [String] {
        do {
            var config = Configuration()
            config.foreignKeysEnabled = true
            let copy = try DatabaseQueue(path: path, configuration: config)
            defer { try? copy.close() }
            return try copy.write { db in
                try db.execute(sql: "DELETE FROM recording WHERE state = 'recording'")
                return try String.fetchAll(db, sql: "SELECT file FROM recording WHERE state IN ('ready', 'pending') ORDER BY file")
            }
        } catch let e as DatabaseError {
            throw CatalogError.database(operation: "backup copy at \(path)", underlying: "\(e)")
        }
    }
}

extension Catalog {
    /// The SHA-256 an imported recording's bytes had (nil for one recorded here). Blocking.
    public func contentHash(id: UUID) throws -> String? {
        try wrap("read content hash") {
            try pool.read { db in try String.fetchOne(db, sql: "SELECT contentHash FROM recording WHERE id = ?", arguments: [id.uuidString]) }
        }
    }
}
