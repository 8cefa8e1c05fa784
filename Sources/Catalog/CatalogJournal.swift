// The journal of multi-step operations (docs/storage.md): a row says one started, and the steps
// that must be atomic with a catalog change commit in the same transaction as it.
import Foundation
import GRDB
import RecdAPI

extension Catalog {
    /// Records that a multi-step operation started; returns its id.
    public func beginJournal(kind: String) throws -> String {
        let id = UUID().uuidString
        try wrap("journal") {
            try write { db in
                try db.execute(sql: "INSERT INTO journal (id, kind, startedAt) VALUES (?, ?, ?)",
                               arguments: [id, kind, StoredDate.value(Date())])
            }
        }
        return id
    }

    /// Operations started and not committed (what a crash interrupted).
    public func openJournal() throws -> [(id: String, kind: String)] {
        try wrap("journal") {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT id, kind FROM journal ORDER BY startedAt").map { ($0["id"], $0["kind"]) }
            }
        }
    }

    /// Closes a journal entry without doing anything else (the operation was rolled back).
    public func endJournal(id: String) throws {
        try wrap("journal") { try write { db in try db.execute(sql: "DELETE FROM journal WHERE id = ?", arguments: [id]) } }
    }

    /// The commit point of "delete all": every row and the journal entry go in one transaction.
    /// Returns the number of rows deleted.
    public func commitDeleteAll(journalID: String) throws -> Int {
        try wrap("delete all") {
            try write { db in
                let n = try Recording.deleteAll(db)
                try db.execute(sql: "DELETE FROM journal WHERE id = ?", arguments: [journalID])
                return n
            }
        }
    }

    /// Journal entries of file replacements (trim, import): the id is the temporary file's path
    /// relative to the data directory; see `commitReplacement`.
    public static let replacementKind = "replace"

    /// The commit point of writing a recording's file anew (a trim in place, a trim kept as a new
    /// recording): in one transaction, the row (`insert`: added; else its duration and size updated,
    /// if it is still in one of `states`), its waveform and poster (stored, or removed when nil: a
    /// stale one would not match the new file) and a journal entry naming `temporary`, the finished
    /// file that must then be renamed over the row's file. A crash before this leaves the old
    /// recording; after it, start-up recovery finishes the rename. Throws `notFound` /
    /// `unexpectedState` (nothing written) when the row is gone or has moved on.
    /// `contentHash`: an import's (with `insert`); a row with the same one makes this throw
    /// `duplicate` (nothing written).
    /// `transcriptCut`: a trim's — the source recording's transcript and markers, cut to the same span, go with `r`.
    public func commitReplacement(_ r: Recording, insert: Bool, states: Set<String>, waveform: Data?, poster: Data?,
                                  temporary: String, contentHash: String? = nil,
                                  transcriptCut: (source: UUID, from: Double, to: Double)? = nil) throws -> Recording {
        try wrap("replace file") {
            try write { db in
                if insert {
                    if let contentHash, let existing = try Self.recording(withContentHash: contentHash, db) {
                        throw CatalogError.duplicate(existingID: existing.id.uuidString)
                    }
                    try r.insert(db)
                    if let contentHash {
                        try db.execute(sql: "UPDATE recording SET contentHash = ? WHERE id = ?", arguments: [contentHash, r.id.uuidString])
                    }
                } else {
                    _ = try Recording.existing(db, id: r.id.uuidString, in: states)
                    // The cut's loudness is its own: measured again (NULL until then).
                    try db.execute(sql: "UPDATE recording SET duration = ?, sizeBytes = ?, loudness = ? WHERE id = ?",
                                   arguments: [r.duration, r.sizeBytes,
                                               r.loudness.map(Recording.loudnessColumn),
                                               r.id.uuidString])
                }
                for (table, data) in [(Attachment.waveform, waveform), (Attachment.poster, poster)] {
                    if let data {
                        try db.execute(sql: "INSERT OR REPLACE INTO \(table.rawValue) (recordingID, data) VALUES (?, ?)",
                                       arguments: [r.id.uuidString, data])
                    } else {
                        try db.execute(sql: "DELETE FROM \(table.rawValue) WHERE recordingID = ?", arguments: [r.id.uuidString])
                    }
                }
                if let cut = transcriptCut {
                    try Self.cutTranscript(of: cut.source, into: r.id, from: cut.from, to: cut.to, db)
                    try Self.cutMarkers(of: cut.source, into: r.id, from: cut.from, to: cut.to, db)
                }
                try db.execute(sql: "INSERT INTO journal (id, kind, startedAt) VALUES (?, ?, ?)",
                               arguments: [temporary, Self.replacementKind, StoredDate.value(Date())])
                return try Recording.existing(db, id: r.id.uuidString)
            }
        }
    }
}
