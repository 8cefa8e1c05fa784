// The catalog's schema: its migrations, in the order they ran on every catalog ever made.
import GRDB

extension Catalog {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1: recordings") { db in
            try db.create(table: "recording") { t in recordingColumns(t, checked: false) }
            // Newest first, and the seed's "most played" order (count desc, then newest).
            try db.create(index: "recording_by_created", on: "recording", columns: ["createdAt"])
            try db.execute(sql: "CREATE INDEX recording_by_plays ON recording(playCount DESC, createdAt DESC)")
            try db.create(index: "recording_by_state", on: "recording", columns: ["state", "createdAt"])
        }
        m.registerMigration("v2: journal") { db in
            // Multi-step operations that must finish or be undone as a whole after a crash
            // (delete all). A row here means "started, not committed".
            try db.create(table: "journal") { t in
                t.primaryKey("id", .text)
                t.column("kind", .text).notNull()
                t.column("startedAt", .datetime).notNull()
            }
        }
        m.registerMigration("v3: play-count indexes") { db in
            // The listing by plays and Quick Play (ready only) as pure index range scans, ties broken
            // by id inside the index, so neither sorts 100,000 rows.
            try db.execute(sql: "DROP INDEX recording_by_plays")
            try db.execute(sql: "CREATE INDEX recording_by_plays ON recording(playCount DESC, createdAt DESC, id)")
            try db.execute(sql: "CREATE INDEX recording_by_state_plays ON recording(state, playCount DESC, createdAt DESC, id)")
        }
        m.registerMigration("v4: waveforms") { db in
            // audiowaveform v2 binary data (16-bit, the recording's own resolution), one per recording;
            // it goes with its row.
            try createAttachmentTable("waveform", db)
        }
        m.registerMigration("v5: posters") { db in
            // JPEG of a video recording's first frame (the preview's "first frame shown"); it goes with its row.
            try createAttachmentTable("poster", db)
        }
        m.registerMigration("v6: state and droppedFrames checks") { db in
            // The states and counters the code writes, enforced by the schema as the other columns'
            // are: SQLite adds CHECKs only by rebuilding the table (its documented 12 steps; GRDB runs
            // the migration with foreign keys off and checks them before the commit, so the waveform
            // and poster rows that refer to a recording stay).
            try db.create(table: "recording_v6") { t in recordingColumns(t, checked: true) }
            let columns = "id, type, state, title, notes, purpose, createdAt, duration, sizeBytes, file, playCount, lastPlayedAt, recovered, droppedFrames"
            try db.execute(sql: "INSERT INTO recording_v6 (\(columns)) SELECT \(columns) FROM recording")
            try db.drop(table: "recording")
            try db.rename(table: "recording_v6", to: "recording")
            try db.create(index: "recording_by_created", on: "recording", columns: ["createdAt"])
            try db.create(index: "recording_by_state", on: "recording", columns: ["state", "createdAt"])
            try db.execute(sql: "CREATE INDEX recording_by_plays ON recording(playCount DESC, createdAt DESC, id)")
            try db.execute(sql: "CREATE INDEX recording_by_state_plays ON recording(state, playCount DESC, createdAt DESC, id)")
        }
        m.registerMigration("v7: content hashes of imports") { db in
            // SHA-256 of an imported file's bytes: the same content imported twice is found, not
            // stored twice. Recordings made here have none.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN contentHash TEXT")
            try db.execute(sql: "CREATE UNIQUE INDEX recording_by_content ON recording(contentHash) WHERE contentHash IS NOT NULL")
        }
        m.registerMigration("v8: loudness") { db in
            // EBU R128 integrated loudness, range and true peak of the recording's sound, as JSON
            // (`Loudness`); NULL until measured.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN loudness TEXT")
        }
        m.registerMigration("v9: formats") { db in
            // How the sound is encoded (`RecordingFormat`). Until now recd wrote AAC only: a file it
            // recorded (named after its row) with sound (a waveform: a silent video has none) is AAC.
            // Imports and adopted files, which may hold another codec, stay NULL (not known).
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN format TEXT CHECK (format IS NULL OR format IN ('aac', 'opus', 'flac'))")
            try db.execute(sql: """
                UPDATE recording SET format = 'aac'
                WHERE contentHash IS NULL AND id IN (SELECT recordingID FROM waveform)
                  AND file IN ('Recordings/audio_' || id || '.m4a', 'Recordings/video_' || id || '.mov')
                """)
        }
        m.registerMigration("v10: the state a missing recording had") { db in
            // `missing` forgot whether the recording was saved or pending; the file put back (as recctl
            // advises) then made a saved recording pending. NULL for every other state, and for rows
            // marked missing before this column.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN missingFrom TEXT CHECK (missingFrom IS NULL OR missingFrom IN ('pending', 'ready'))")
        }
        m.registerMigration("v11: transcripts and search") { db in try Catalog.migrateTranscripts(db) }
        m.registerMigration("v12: markers") { db in try Catalog.migrateMarkers(db) }
        m.registerMigration("v13: chapters to write") { db in try Catalog.migrateChapterWork(db) }
        m.registerMigration("v14: the search index's words") { db in try Catalog.migrateSearchVocabulary(db) }
        m.registerMigration("v15: enhanced copies") { db in try Catalog.migrateEnhanced(db) }
        m.registerMigration("v16: sources") { db in
            // `RecordingSource`. Imports are known by their content hash; a listening's utterance
            // made before this column is a `record`.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN source TEXT NOT NULL DEFAULT 'record' CHECK (source IN ('record', 'listen', 'import'))")
            try db.execute(sql: "UPDATE recording SET source = 'import' WHERE contentHash IS NOT NULL")
        }
        return m
    }

    /// The recording table's columns as v1 made them; `checked` adds the CHECKs on `state` and
    /// `droppedFrames` that v6 rebuilt the table for. (The column order is the table's: rows are
    /// read by position.)
    private static func recordingColumns(_ t: TableDefinition, checked: Bool) {
        t.primaryKey("id", .text)
        t.column("type", .text).notNull().check(sql: "type IN ('audio', 'video')")
        let state = t.column("state", .text).notNull()
        if checked { state.check(sql: "state IN ('recording', 'pending', 'ready', 'missing')") }
        t.column("title", .text).notNull().check(sql: "length(title) > 0")
        t.column("notes", .text).notNull().defaults(to: "")
        t.column("purpose", .text)
            .check(sql: "purpose IS NULL OR purpose IN ('motivational', 'craving', 'reflection', 'milestone')")
        t.column("createdAt", .datetime).notNull()
        t.column("duration", .double)
        t.column("sizeBytes", .integer)
        t.column("file", .text).notNull().unique()
        t.column("playCount", .integer).notNull().defaults(to: 0).check(sql: "playCount >= 0")
        t.column("lastPlayedAt", .datetime)
        t.column("recovered", .boolean).notNull().defaults(to: false)
        let droppedFrames = t.column("droppedFrames", .integer).notNull().defaults(to: 0)
        if checked { droppedFrames.check(sql: "droppedFrames >= 0") }
    }

    /// A table of one blob per recording, which goes with its row (deleted by the cascade).
    private static func createAttachmentTable(_ name: String, _ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE \(name) (
                recordingID TEXT PRIMARY KEY NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                data BLOB NOT NULL)
            """)
    }
}
