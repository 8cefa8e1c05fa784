// Changing the catalog's rows: one transaction each (see `Catalog.write`).
import Foundation
import GRDB
import RecdAPI

extension Catalog {
    public func insert(_ r: Recording) throws {
        try wrap("insert") { try write { db in try r.insert(db) } }
    }

    /// Reads a row, lets `body` change it, and writes it back, all in one write transaction, so
    /// concurrent changes of the same row cannot interleave. Errors thrown by `body` roll back and
    /// pass through unchanged.
    @discardableResult
    public func modify(id: UUID, _ body: (inout Recording) throws -> Void) throws -> Recording {
        try wrap("update") {
            try write { db in
                var r = try Recording.existing(db, id: id.uuidString)
                try body(&r)
                precondition(r.id == id, "modify must not change the id")
                try r.update(db)
                // A take's markers are made at the time heard; the duration set at its end (or by
                // recovery, from what reached the disk before a kill or a power cut) can be shorter.
                // A marker is kept, at the end, rather than left pointing past it (chapters, the player).
                if let duration = r.duration, r.state != .recording {
                    try db.execute(sql: "UPDATE marker SET time = ? WHERE recordingID = ? AND time > ?",
                                   arguments: [duration, id.uuidString, duration])
                }
                return r
            }
        }
    }

    /// One play of a saved recording (see `countPlays`). Returns the row after it; throws `notFound`,
    /// or `unexpectedState` when the recording is not `ready` (previews never count).
    @discardableResult
    public func countPlay(id: UUID, at date: Date) throws -> Recording {
        try countPlays([(id, date)])[0].get()
    }

    /// Plays of saved recordings, all in one transaction: one commit, so one fsync under
    /// `synchronous=FULL`, however many there are (group commit). Each play is one SQL statement (the
    /// count is never read and written back from Swift, so no increment can be lost) and gets its own
    /// result: the row after it, or why it did not count (`notFound`; `unexpectedState` when the
    /// recording is not `ready`: previews never count) — one refused play does not undo the others.
    /// Throws only when the transaction itself fails (then none counted).
    public func countPlays(_ plays: [(id: UUID, at: Date)]) throws -> [Result<Recording, CatalogError>] {
        let ids = plays.map { $0.id.uuidString }
        return try wrap("count plays") {
            try pool.write { db in
                // The row after the play from the UPDATE itself (RETURNING): one statement per play.
                let count = try db.cachedStatement(sql: """
                    UPDATE recording SET playCount = playCount + 1, lastPlayedAt = ? WHERE id = ? AND state = 'ready'
                    RETURNING \(Recording.selection)
                    """)
                return try zip(plays, ids).map { play, id -> Result<Recording, CatalogError> in
                    if let recording = try Recording.fetchOne(count, arguments: [StoredDate.value(play.at), id]) {
                        return .success(recording)
                    }
                    guard let record = try Recording.fetch(db, id: id) else { return .failure(.notFound(id: id)) }
                    return .failure(.unexpectedState(id: id, state: record.state.rawValue))
                }
            }
        }
    }

    /// Deletes a row if, in the same transaction, it is still in `state`. Throws `notFound` or
    /// `unexpectedState` otherwise.
    public func delete(id: UUID, ifStateIn states: Set<String>) throws {
        try wrap("delete") {
            try write { db in
                _ = try Recording.existing(db, id: id.uuidString, in: states)
                try Recording.deleteOne(db, key: id.uuidString)
            }
        }
    }

    /// The row's file is gone: `missing`, remembering the state it had (pending or ready) for when
    /// the file is back. Returns false when the row is not pending or ready (any more).
    @discardableResult
    public func markMissing(id: UUID) throws -> Bool {
        try wrap("mark missing") {
            try write { db in
                // SQLite evaluates every right-hand side against the row as it was: `state` is the old one.
                try db.execute(sql: """
                    UPDATE recording SET missingFrom = state, state = 'missing'
                    WHERE id = ? AND state IN ('pending', 'ready')
                    """, arguments: [id.uuidString])
                return db.changesCount > 0
            }
        }
    }

    /// The file of a missing row is back, `sizeBytes` long. The same size as the row says: the state it
    /// had before (a saved recording is saved again, its flags as they were). Another size, or a row
    /// marked missing before recd remembered the state: pending and `recovered`, so the user looks.
    /// Returns the row after it, or nil when it is not missing (any more).
    public func fileIsBack(id: UUID, sizeBytes: Int64?) throws -> Recording? {
        try wrap("restore") {
            try write { db in
                try db.execute(sql: """
                    UPDATE recording SET
                      state = CASE WHEN missingFrom IS NOT NULL AND sizeBytes IS ?1 THEN missingFrom ELSE 'pending' END,
                      recovered = CASE WHEN missingFrom IS NOT NULL AND sizeBytes IS ?1 THEN recovered ELSE 1 END,
                      missingFrom = NULL
                    WHERE id = ?2 AND state = 'missing'
                    """, arguments: [sizeBytes, id.uuidString])
                guard db.changesCount > 0 else { return nil }
                return try Recording.fetch(db, id: id.uuidString)
            }
        }
    }

    /// Every row's file (relative path) with its id and state, for matching against `Recordings/`.
    /// Ids stay text here: parsing 100,000 UUIDs is a noticeable part of start-up; and an array,
    /// not a dictionary by file: the caller looks the files up in the listing, not the other way.
    public func fileRows() throws -> [(file: String, id: String, state: String)] {
        try wrap("read") {
            try pool.read { db in
                var out: [(file: String, id: String, state: String)] = []
                out.reserveCapacity(try Int.fetchOne(db, sql: "SELECT count(*) FROM recording") ?? 0)
                let rows = try Row.fetchCursor(db, sql: "SELECT file, id, state FROM recording")
                while let row = try rows.next() { out.append((row[0], row[1], row[2])) }
                return out
            }
        }
    }

    /// The recording whose import had these bytes (SHA-256, hex), if any.
    public func recording(withContentHash hash: String) throws -> Recording? {
        try wrap("read") { try pool.read { db in try Self.recording(withContentHash: hash, db) } }
    }

    static func recording(withContentHash hash: String, _ db: Database) throws -> Recording? {
        try Recording.filter(Column("contentHash") == hash).fetchOne(db)
    }

    /// Saved and pending recordings whose loudness is not measured yet, newest first.
    public func idsWithoutLoudness() throws -> [UUID] {
        try wrap("read") {
            try pool.read { db in
                try String.fetchAll(db, sql: """
                    SELECT id FROM recording WHERE loudness IS NULL AND state IN ('ready', 'pending') ORDER BY createdAt DESC
                    """).compactMap(UUID.init(uuidString:))
            }
        }
    }

    /// Stores a loudness measured from the file of `sizeBytes` bytes, unless the row has changed
    /// since (measured meanwhile, or its file replaced by a trim: another size). Returns whether it
    /// was stored.
    @discardableResult
    public func storeLoudness(id: UUID, _ loudness: Loudness, measuredFileSize sizeBytes: Int64?) throws -> Bool {
        let json = Recording.loudnessColumn(loudness)
        return try wrap("store loudness") {
            try write { db in
                try db.execute(sql: "UPDATE recording SET loudness = ? WHERE id = ? AND loudness IS NULL AND sizeBytes IS ?",
                               arguments: [json, id.uuidString, sizeBytes])
                return db.changesCount == 1
            }
        }
    }

    /// Deletes a row; returns whether it existed.
    @discardableResult
    public func delete(id: UUID) throws -> Bool {
        try wrap("delete") { try write { db in try Recording.deleteOne(db, key: id.uuidString) } }
    }
}
