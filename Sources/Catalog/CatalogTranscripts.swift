// Transcripts and search (issue 38): a recording's transcript is a row of its own that goes with the
// recording's (deleted with it, cut with it by a trim in the trim's transaction); `search` is an FTS5
// index of every recording's title, notes and transcript text, kept by triggers in the same
// transactions as the rows it indexes, so it is never behind them, after a crash either.
import Foundation
import GRDB
import RecdAPI

/// A transcript as stored: made (`segments`) or failed (`error`).
public struct StoredTranscript: Sendable, Equatable {
    public var state: TranscriptState
    public var language: String?
    public var model: String
    public var error: String?
    public var segments: [TranscriptSegment]
    public init(state: TranscriptState, language: String?, model: String, error: String?, segments: [TranscriptSegment]) {
        self.state = state; self.language = language; self.model = model; self.error = error; self.segments = segments
    }
}

extension Catalog {
    static func migrateTranscripts(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE transcript (
                recordingID TEXT PRIMARY KEY NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                state TEXT NOT NULL CHECK (state IN ('done', 'failed')),
                language TEXT, model TEXT NOT NULL, error TEXT,
                text TEXT NOT NULL DEFAULT '', segments TEXT NOT NULL DEFAULT '[]');
            -- One row per recording, its rowid the recording's (no VACUUM renumbers them: recd runs none,
            -- and a migration that rebuilds the recording table must rebuild this index too).
            CREATE VIRTUAL TABLE search USING fts5(title, notes, transcript, tokenize = 'unicode61 remove_diacritics 2');
            -- The order of results: bm25 with a title worth ten times a transcript, notes five. As the
            -- table's rank, so that `ORDER BY rank LIMIT n` is sorted inside FTS5 and only the n rows
            -- returned get their snippets.
            INSERT INTO search (search, rank) VALUES ('rank', 'bm25(10.0, 5.0, 1.0)');
            INSERT INTO search (rowid, title, notes, transcript) SELECT rowid, title, notes, '' FROM recording;
            CREATE TRIGGER search_insert AFTER INSERT ON recording BEGIN
                INSERT INTO search (rowid, title, notes, transcript) VALUES (new.rowid, new.title, new.notes, '');
            END;
            CREATE TRIGGER search_update AFTER UPDATE OF title, notes ON recording BEGIN
                UPDATE search SET title = new.title, notes = new.notes WHERE rowid = new.rowid;
            END;
            CREATE TRIGGER search_delete AFTER DELETE ON recording BEGIN
                DELETE FROM search WHERE rowid = old.rowid;
            END;
            CREATE TRIGGER search_transcript_insert AFTER INSERT ON transcript BEGIN
                UPDATE search SET transcript = new.text WHERE rowid = (SELECT rowid FROM recording WHERE id = new.recordingID);
            END;
            CREATE TRIGGER search_transcript_update AFTER UPDATE OF text ON transcript BEGIN
                UPDATE search SET transcript = new.text WHERE rowid = (SELECT rowid FROM recording WHERE id = new.recordingID);
            END;
            CREATE TRIGGER search_transcript_delete AFTER DELETE ON transcript BEGIN
                UPDATE search SET transcript = '' WHERE rowid = (SELECT rowid FROM recording WHERE id = old.recordingID);
            END;
            """)
    }

    public func transcript(id: UUID) throws -> StoredTranscript? {
        try wrap("read") { try pool.read { db in try Self.transcript(id: id.uuidString, db) } }
    }

    static func transcript(id: String, _ db: Database) throws -> StoredTranscript? {
        guard let row = try Row.fetchOne(db, sql: "SELECT state, language, model, error, segments FROM transcript WHERE recordingID = ?",
                                         arguments: [id]) else { return nil }
        let segments = try JSONDecoder().decode([TranscriptSegment].self, from: Data((row["segments"] as String).utf8))
        return StoredTranscript(state: TranscriptState(rawValue: row["state"]) ?? .failed, language: row["language"],
                                model: row["model"], error: row["error"], segments: segments)
    }

    /// The text of every transcript made (for the export), by recording.
    public func transcriptTexts() throws -> [UUID: String] {
        try wrap("read") {
            try pool.read { db in
                var texts: [UUID: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT recordingID, text FROM transcript WHERE state = 'done'") {
                    if let id = UUID(uuidString: row["recordingID"]) { texts[id] = row["text"] }
                }
                return texts
            }
        }
    }

    /// Saved recordings without a transcript (made or failed), newest first: the transcriber's queue.
    public func idsWithoutTranscript() throws -> [UUID] {
        try wrap("read") {
            try pool.read { db in
                try String.fetchAll(db, sql: """
                    SELECT id FROM recording WHERE state = 'ready' AND id NOT IN (SELECT recordingID FROM transcript)
                    ORDER BY createdAt DESC
                    """).compactMap(UUID.init(uuidString:))
            }
        }
    }

    /// Stores what the transcriber made of the file of `sizeBytes` bytes, unless the row changed since
    /// (deleted, a trim replaced its file: another size) or has one already. Returns whether it was stored.
    @discardableResult
    public func storeTranscript(id: UUID, _ t: StoredTranscript, transcribedFileSize sizeBytes: Int64?) throws -> Bool {
        let segments = String(decoding: try JSONEncoder().encode(t.segments), as: UTF8.self)
        return try wrap("store transcript") {
            try write { db in
                try db.execute(sql: """
                    INSERT INTO transcript (recordingID, state, language, model, error, text, segments)
                    SELECT id, ?, ?, ?, ?, ?, ? FROM recording WHERE id = ? AND state = 'ready' AND sizeBytes IS ?
                    ON CONFLICT (recordingID) DO NOTHING
                    """, arguments: [t.state.rawValue, t.language, t.model, t.error, Transcript.text(of: t.segments), segments,
                                     id.uuidString, sizeBytes])
                return db.changesCount == 1
            }
        }
    }

    /// Writes the transcript of `source` cut to `from..<to` (moved to start at 0) as `target`'s, in a
    /// trim's transaction: the words stay with the sound they were heard in. A failed one goes as it is.
    static func cutTranscript(of source: UUID, into target: UUID, from: Double, to: Double, _ db: Database) throws {
        guard var t = try transcript(id: source.uuidString, db) else { return }
        t.segments = t.segments.compactMap { $0.cut(from: from, to: to) }
        let segments = String(decoding: try JSONEncoder().encode(t.segments), as: UTF8.self)
        try db.execute(sql: """
            INSERT OR REPLACE INTO transcript (recordingID, state, language, model, error, text, segments) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [target.uuidString, t.state.rawValue, t.language, t.model, t.error, Transcript.text(of: t.segments), segments])
    }

    /// Forgets every failed transcript (tried again at this start: the failure may have been the
    /// transcriber's, since fixed).
    public func forgetFailedTranscripts() throws {
        try wrap("forget failed transcripts") { try write { db in try db.execute(sql: "DELETE FROM transcript WHERE state = 'failed'") } }
    }

    /// The index's own words, for suggestions (a view of the index, stored nowhere else).
    static func migrateSearchVocabulary(_ db: Database) throws {
        try db.execute(sql: "CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search, 'row')")
    }

    /// The FTS5 query of `terms`: every term, each by any of its spellings, each as a word's start.
    static func matchQuery(_ terms: [[String]]) -> String {
        terms.map { spellings in
            "(" + spellings.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }.joined(separator: " OR ") + ")"
        }.joined(separator: " AND ")
    }

    /// Whether any title, notes or transcript holds a word that starts with one of `spellings`.
    public func anyMatch(_ spellings: [String]) throws -> Bool {
        try wrap("search") {
            try pool.read { db in
                try Bool.fetchOne(db, sql: "SELECT 1 FROM search WHERE search MATCH ? LIMIT 1", arguments: [Self.matchQuery([spellings])]) ?? false
            }
        }
    }

    /// The words the library holds (titles, notes, transcripts) closest to `word` (folded as the index
    /// folds: lower case, no accents): at most two edits away (one for a word of four letters or
    /// fewer), nearest first, then the most used. For "did you mean".
    public func closestWords(to word: String, limit: Int) throws -> [String] {
        let wanted = Array(word.unicodeScalars)
        let most = wanted.count <= 4 ? 1 : 2
        return try wrap("suggest") {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT term, doc FROM search_vocab WHERE length(term) BETWEEN ? AND ?",
                                            arguments: [wanted.count - most, wanted.count + most])
                var found: [(term: String, distance: Int, docs: Int)] = []
                for row in rows {
                    let term: String = row["term"]
                    guard term != word, let d = Self.editDistance(wanted, Array(term.unicodeScalars), atMost: most) else { continue }
                    found.append((term, d, row["doc"]))
                }
                return found.sorted { ($0.distance, -$0.docs, $0.term) < ($1.distance, -$1.docs, $1.term) }.prefix(limit).map(\.term)
            }
        }
    }

    /// Optimal string alignment distance (insertions, deletions, substitutions, and swaps of two
    /// neighbours: "hte" is one from "the"); nil when over `atMost` (rows are cut short there).
    package static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], atMost: Int) -> Int? {
        if abs(a.count - b.count) > atMost { return nil }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1), previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var best = i
            for j in 1...b.count {
                var d = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d = min(d, before[j - 2] + 1) }
                current[j] = d
                best = min(best, d)
            }
            if best > atMost { return nil }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count] <= atMost ? previous[b.count] : nil
    }

    /// Recordings (not being recorded) whose title, notes or transcript hold every word of `terms`,
    /// (each word also as the start of a longer one: "harb" finds "harbour"), best first: each with the field matched, its text around the match («marked») and, for a
    /// transcript, its segments (to find the time). `terms`: each a list of spellings, any of which
    /// counts ("three", "3").
    public func search(_ terms: [[String]], limit: Int) throws -> [(recording: Recording, field: String, snippet: String, segments: [TranscriptSegment])] {
        guard !terms.isEmpty else { return [] }
        let match = Self.matchQuery(terms)
        return try wrap("search") {
            try pool.read { db in
                // The index alone first (its best `limit` rows and their snippets), then each row's
                // recording: a join in the ranked query would carry every match's row into the sort.
                let hits = try Row.fetchAll(db, sql: """
                    SELECT rowid, snippet(search, 0, '«', '»', '…', 12) AS inTitle, snippet(search, 1, '«', '»', '…', 12) AS inNotes,
                           snippet(search, 2, '«', '»', '…', 12) AS inTranscript
                    FROM search WHERE search MATCH ? ORDER BY rank LIMIT ?
                    """, arguments: [match, limit + 1])
                return try hits.compactMap { hit in
                    guard let id = try String.fetchOne(db, sql: "SELECT id FROM recording WHERE rowid = ?", arguments: [hit["rowid"]]),
                          let recording = try Recording.fetch(db, id: id), recording.state != .recording else { return nil }
                    let fields: [(String, String)] = [("title", hit["inTitle"]), ("notes", hit["inNotes"]), ("transcript", hit["inTranscript"])]
                    let (field, snippet) = fields.first { $0.1.contains("«") } ?? ("title", recording.title)
                    var segments: [TranscriptSegment] = []
                    if field == "transcript", let json = try String.fetchOne(db, sql: "SELECT segments FROM transcript WHERE recordingID = ?", arguments: [id]) {
                        segments = (try? JSONDecoder().decode([TranscriptSegment].self, from: Data(json.utf8))) ?? []
                    }
                    return (recording, field, snippet, segments)
                }.prefix(limit).map { $0 }
            }
        }
    }
}
