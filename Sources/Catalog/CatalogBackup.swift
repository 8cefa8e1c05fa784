// The catalog's copy for a backup's snapshot (issue 48).
import Foundation
import GRDB

extension Catalog {
    /// Writes a consistent copy of the whole catalog to `path` (a new file): SQLite's online backup
    /// API, every page in one step, from a reader's snapshot of a committed state; the live database
    /// and its WAL stay as they are, and writes go on meanwhile. (`VACUUM INTO` ran on the pool's
    /// writer, so a take started while a backup was staging waited for the copy before its row went
    /// in and its capture began: its first 144–186 ms were lost, `bench/backup.py`.) Blocking.
    public func backupCopy(to path: String) throws {
        try wrap("backup copy") {
            let copy = try DatabaseQueue(path: path)
            defer { try? copy.close() }
            do {
                try pool.backup(to: copy)
            } catch let e as DatabaseError where e.resultCode == .SQLITE_FULL {
                // The backup API's error carries the code, not SQLite's words for it.
                throw CatalogError.database(operation: "backup copy", underlying: "database or disk is full (SQLite error 13) writing \(path)")
            }
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
