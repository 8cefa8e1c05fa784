// Markers (issue 47): rows of their own that go with their recording (the cascade), written at once —
// a take's markers are in the catalog as soon as they are made, so a kill -9 or a power cut keeps them
// as it keeps the take's row — and cut with the file in a trim's own transaction.
import Foundation
import GRDB
import RecdAPI

extension Catalog {
    static func migrateMarkers(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE marker (
                id TEXT PRIMARY KEY NOT NULL,
                recordingID TEXT NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                time REAL NOT NULL CHECK (time >= 0),
                label TEXT NOT NULL DEFAULT '' CHECK (length(label) <= \(Marker.labelLimit)),
                createdAt DATETIME NOT NULL);
            CREATE INDEX marker_by_recording ON marker(recordingID, time);
            """)
    }

    /// The file of a saved recording carries its markers as chapters (issue 47). Which files are
    /// behind their markers is a table, kept by triggers in the transaction of every change that
    /// makes one so — a marker added, changed or deleted on a saved recording, a save of a pending
    /// one that has markers, a trim's cut of them — so that no path can forget it and a crash
    /// forgets nothing: the chapter pass copies each file with its chapters and then clears its row,
    /// unless the markers changed again meanwhile (`generation`).
    static func migrateChapterWork(_ db: Database) throws {
        let queue = "INSERT INTO chapterWork (recordingID) VALUES (%@) ON CONFLICT(recordingID) DO UPDATE SET generation = generation + 1;"
        func ready(_ id: String) -> String { "EXISTS (SELECT 1 FROM recording WHERE id = \(id) AND state = 'ready')" }
        try db.execute(sql: """
            CREATE TABLE chapterWork (
                recordingID TEXT PRIMARY KEY NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                generation INTEGER NOT NULL DEFAULT 1);
            CREATE TRIGGER chapters_marker_insert AFTER INSERT ON marker WHEN \(ready("new.recordingID"))
                BEGIN \(queue.replacingOccurrences(of: "%@", with: "new.recordingID")) END;
            CREATE TRIGGER chapters_marker_update AFTER UPDATE ON marker WHEN \(ready("new.recordingID"))
                BEGIN \(queue.replacingOccurrences(of: "%@", with: "new.recordingID")) END;
            CREATE TRIGGER chapters_marker_delete AFTER DELETE ON marker WHEN \(ready("old.recordingID"))
                BEGIN \(queue.replacingOccurrences(of: "%@", with: "old.recordingID")) END;
            CREATE TRIGGER chapters_saved AFTER UPDATE OF state ON recording
                WHEN old.state = 'pending' AND new.state = 'ready' AND EXISTS (SELECT 1 FROM marker WHERE recordingID = new.id)
                BEGIN \(queue.replacingOccurrences(of: "%@", with: "new.id")) END;
            """)
    }

    /// The saved recordings whose file is behind their markers, with the generation of that change.
    public func chapterWork() throws -> [(id: UUID, generation: Int64)] {
        try wrap("read chapter work") {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT recordingID, generation FROM chapterWork").compactMap { row in
                    UUID(uuidString: row["recordingID"]).map { ($0, row["generation"]) }
                }
            }
        }
    }

    /// The file written with the chapters of `generation`: the row goes, unless the markers changed
    /// again since (a later generation: another copy is needed).
    public func finishChapterWork(id: UUID, generation: Int64) throws {
        try wrap("finish chapter work") {
            try write { db in
                try db.execute(sql: "DELETE FROM chapterWork WHERE recordingID = ? AND generation = ?", arguments: [id.uuidString, generation])
            }
        }
    }

    /// Commits a saved recording's copy with chapters at `temporary` (`FileReplacement`'s step 2):
    /// its new size, and the journal entry that names the copy; refused (`unexpectedState`) unless
    /// the recording is still saved.
    public func commitChapters(id: UUID, sizeBytes: Int64?, temporary: String) throws {
        try wrap("replace file") {
            try write { db in
                _ = try Recording.existing(db, id: id.uuidString, in: [RecordingState.ready.rawValue])
                try db.execute(sql: "UPDATE recording SET sizeBytes = ? WHERE id = ?", arguments: [sizeBytes, id.uuidString])
                try db.execute(sql: "INSERT INTO journal (id, kind, startedAt) VALUES (?, ?, ?)",
                               arguments: [temporary, Self.replacementKind, StoredDate.value(Date())])
            }
        }
    }

    /// A recording's markers, earliest first (`notFound` when there is no such recording).
    public func markers(of id: UUID) throws -> [Marker] {
        try wrap("read markers") {
            try pool.read { db in
                guard try Recording.exists(db, key: id.uuidString) else { throw CatalogError.notFound(id: id.uuidString) }
                return try Self.markers(of: id.uuidString, db)
            }
        }
    }

    static func markers(of id: String, _ db: Database) throws -> [Marker] {
        try Row.fetchAll(db, sql: "SELECT id, time, label, createdAt FROM marker WHERE recordingID = ? ORDER BY time, createdAt",
                         arguments: [id]).map { try marker($0, of: id) }
    }

    private static func marker(_ row: Row, of id: String) throws -> Marker {
        guard let markerID = UUID(uuidString: row["id"]), let created = StoredDate.read(row, 3) else {
            throw CatalogError.corruptRow(id: id, detail: "a marker's id or date does not read")
        }
        return Marker(id: markerID, time: row["time"], label: row["label"], createdAt: created)
    }

    /// Adds `marker` to recording `id` if it is in one of `states` and holds fewer than
    /// `Marker.perRecordingLimit`; `bound(recording)` is checked inside the same transaction (the
    /// recording as it is then: a trim may have shortened it).
    public func addMarker(_ marker: Marker, to id: UUID, states: Set<String>,
                          bound: (Recording) throws -> Void) throws {
        try wrap("add a marker") {
            try write { db in
                let r = try Recording.existing(db, id: id.uuidString, in: states)
                try bound(r)
                let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM marker WHERE recordingID = ?", arguments: [id.uuidString]) ?? 0
                guard count < Marker.perRecordingLimit else { throw CatalogError.tooManyMarkers(id: id.uuidString, limit: Marker.perRecordingLimit) }
                try db.execute(sql: "INSERT INTO marker (id, recordingID, time, label, createdAt) VALUES (?, ?, ?, ?, ?)",
                               arguments: [marker.id.uuidString, id.uuidString, marker.time, marker.label, StoredDate.value(marker.createdAt)])
            }
        }
    }

    /// Changes a marker of recording `id` by `change` (its bounds checked by the caller's closure
    /// against the recording as it is now); `markerNotFound` when the recording has no such marker.
    public func modifyMarker(_ markerID: UUID, of id: UUID, _ change: (inout Marker, Recording) throws -> Void) throws -> Marker {
        try wrap("change a marker") {
            try write { db in
                let r = try Recording.existing(db, id: id.uuidString)
                guard var m = try Self.markers(of: id.uuidString, db).first(where: { $0.id == markerID }) else {
                    throw CatalogError.markerNotFound(recording: id.uuidString, marker: markerID.uuidString)
                }
                try change(&m, r)
                try db.execute(sql: "UPDATE marker SET time = ?, label = ? WHERE id = ?", arguments: [m.time, m.label, markerID.uuidString])
                return m
            }
        }
    }

    public func deleteMarker(_ markerID: UUID, of id: UUID) throws {
        try wrap("delete a marker") {
            try write { db in
                _ = try Recording.existing(db, id: id.uuidString)
                try db.execute(sql: "DELETE FROM marker WHERE id = ? AND recordingID = ?", arguments: [markerID.uuidString, id.uuidString])
                guard db.changesCount == 1 else {
                    throw CatalogError.markerNotFound(recording: id.uuidString, marker: markerID.uuidString)
                }
            }
        }
    }

    /// A trim's: the source's markers inside the cut, moved by its start, become the target's (the
    /// source's own replaced when they are the same recording; new ids for a copy).
    static func cutMarkers(of source: UUID, into target: UUID, from: Double, to: Double, _ db: Database) throws {
        let kept = Marker.cut(try markers(of: source.uuidString, db), from: from, to: to)
        if source == target {
            try db.execute(sql: "DELETE FROM marker WHERE recordingID = ?", arguments: [target.uuidString])
        }
        for m in kept {
            try db.execute(sql: "INSERT INTO marker (id, recordingID, time, label, createdAt) VALUES (?, ?, ?, ?, ?)",
                           arguments: [(source == target ? m.id : UUID()).uuidString, target.uuidString, m.time, m.label,
                                       StoredDate.value(m.createdAt)])
        }
    }

    /// Every saved recording's markers (for the export), by recording.
    public func allMarkers() throws -> [UUID: [Marker]] {
        try wrap("read markers") {
            try pool.read { db in
                var out: [UUID: [Marker]] = [:]
                // One query (the export asks for every recording's markers at once), in each recording's order.
                let rows = try Row.fetchAll(db, sql: "SELECT id, time, label, createdAt, recordingID FROM marker ORDER BY recordingID, time, createdAt")
                for row in rows {
                    let id: String = row["recordingID"]
                    guard let uuid = UUID(uuidString: id) else { continue }
                    out[uuid, default: []].append(try Self.marker(row, of: id))
                }
                return out
            }
        }
    }
}
