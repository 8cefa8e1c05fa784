// Enhanced copies (issue 47): one row per recording that has one, its file `Enhanced/<id>.m4a`.
import Foundation
import GRDB
import RecdAPI

extension Catalog {
    /// The row goes with its recording (the cascade), and with the sound it was made from: a change
    /// of the recording's duration (a trim in place) deletes it in the same transaction, so no path
    /// can leave a copy of sound the recording no longer holds. Its file, left without a row, is
    /// removed by the engine after such a change and by start-up recovery after a crash.
    static func migrateEnhanced(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE enhanced (
                recordingID TEXT PRIMARY KEY NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                createdAt DATETIME NOT NULL,
                duration REAL NOT NULL CHECK (duration >= 0),
                sizeBytes INTEGER NOT NULL CHECK (sizeBytes >= 0),
                filters TEXT NOT NULL,
                loudness REAL,
                truePeak REAL,
                originalLoudness REAL);
            CREATE TRIGGER enhanced_stale AFTER UPDATE OF duration ON recording WHEN old.duration IS NOT new.duration
            BEGIN DELETE FROM enhanced WHERE recordingID = new.id; END;
            """)
    }

    /// Recording `id`'s enhanced copy, nil when it has none (`notFound` when there is no such recording).
    public func enhancedCopy(of id: UUID) throws -> EnhancedCopy? {
        try wrap("read an enhanced copy") {
            try pool.read { db in
                guard try Recording.exists(db, key: id.uuidString) else { throw CatalogError.notFound(id: id.uuidString) }
                return try Self.enhancedCopy(of: id.uuidString, db)
            }
        }
    }

    static func enhancedCopy(of id: String, _ db: Database) throws -> EnhancedCopy? {
        guard let row = try Row.fetchOne(db, sql: "SELECT createdAt, duration, sizeBytes, filters, loudness, truePeak, originalLoudness FROM enhanced WHERE recordingID = ?",
                                         arguments: [id]) else { return nil }
        guard let created = StoredDate.read(row, 0) else { throw CatalogError.corruptRow(id: id, detail: "its enhanced copy's date does not read") }
        return EnhancedCopy(createdAt: created, duration: row[1], sizeBytes: row[2], filters: row[3], loudness: row[4], truePeak: row[5], originalLoudness: row[6])
    }

    /// Records `copy` as recording `id`'s (replacing one it had), if the recording is still in one of
    /// `states` with the duration `madeFrom` the copy was made from (`unexpectedState` otherwise: it
    /// was trimmed, or is being recorded again, meanwhile).
    public func commitEnhancedCopy(_ copy: EnhancedCopy, of id: UUID, madeFrom duration: Double?, states: Set<String>) throws {
        try wrap("record an enhanced copy") {
            try write { db in
                let r = try Recording.existing(db, id: id.uuidString, in: states)
                guard r.duration == duration else { throw CatalogError.unexpectedState(id: id.uuidString, state: r.state.rawValue) }
                try db.execute(sql: """
                    INSERT OR REPLACE INTO enhanced (recordingID, createdAt, duration, sizeBytes, filters, loudness, truePeak, originalLoudness)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id.uuidString, StoredDate.value(copy.createdAt), copy.duration, copy.sizeBytes, copy.filters,
                                     copy.loudness, copy.truePeak, copy.originalLoudness])
            }
        }
    }

    /// Forgets recording `id`'s enhanced copy; returns whether it had one (`notFound` when there is
    /// no such recording).
    @discardableResult
    public func deleteEnhancedCopy(of id: UUID) throws -> Bool {
        try wrap("delete an enhanced copy") {
            try write { db in
                guard try Recording.exists(db, key: id.uuidString) else { throw CatalogError.notFound(id: id.uuidString) }
                try db.execute(sql: "DELETE FROM enhanced WHERE recordingID = ?", arguments: [id.uuidString])
                return db.changesCount > 0
            }
        }
    }

    /// The recordings that have an enhanced copy (start-up recovery keeps their files, removes the rest).
    public func enhancedRecordingIDs() throws -> Set<UUID> {
        try wrap("list enhanced copies") {
            try pool.read { db in
                Set(try String.fetchAll(db, sql: "SELECT recordingID FROM enhanced").compactMap(UUID.init(uuidString:)))
            }
        }
    }
}
