import Catalog
import Foundation
import RecdAPI
import MediaWire
import Engine
import XCTest

final class CatalogTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-catalog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
    }

    override func tearDown() { catalog = nil; try? FileManager.default.removeItem(at: dir) }

    func make(_ id: String? = nil, state: RecordingState = .ready, created: TimeInterval, plays: Int = 0) -> Recording {
        let uuid = id.flatMap(UUID.init(uuidString:)) ?? UUID()
        return Recording(id: uuid, type: .audio, state: state, title: "T \(created)", notes: "", purpose: nil,
                         createdAt: Date(timeIntervalSince1970: created), duration: 1.5, sizeBytes: 100,
                         file: "Recordings/audio_\(uuid.uuidString).m4a", playCount: plays, lastPlayedAt: nil,
                         recovered: false, droppedFrames: 0)
    }

    func testRoundTripAndWAL() throws {
        let r = make(created: 1000)
        try catalog.insert(r)
        XCTAssertEqual(try catalog.recording(id: r.id), r)
        let mode = try Tools.sqlite(dir.appendingPathComponent("catalog.sqlite").path, "PRAGMA journal_mode;")
        XCTAssertEqual(mode, "wal")
    }

    func testOrdersFiltersAndPages() throws {
        let a = make(created: 100, plays: 5), b = make(created: 200, plays: 5), c = make(state: .pending, created: 300, plays: 9)
        for r in [a, b, c] { try catalog.insert(r) }
        XCTAssertEqual(try catalog.list(ListQuery()).recordings.map(\.id), [c.id, b.id, a.id])
        XCTAssertEqual(try catalog.list(ListQuery(order: .plays)).recordings.map(\.id), [c.id, b.id, a.id])
        XCTAssertEqual(try catalog.list(ListQuery(order: .plays, state: .ready)).recordings.map(\.id), [b.id, a.id])
        let page = try catalog.list(ListQuery(limit: 1, offset: 2))
        XCTAssertEqual(page.recordings.map(\.id), [a.id])
        XCTAssertEqual(page.total, 3)
        XCTAssertEqual(try catalog.countsByState(), [.ready: 2, .pending: 1])
    }

    func testPlayCountsAreOneStatementAndOnlyForSavedRecordings() throws {
        let saved = make(created: 100), pending = make(state: .pending, created: 200)
        for r in [saved, pending] { try catalog.insert(r) }
        let at = Date(timeIntervalSince1970: 5000)
        XCTAssertEqual(try catalog.countPlay(id: saved.id, at: at).playCount, 1)
        XCTAssertEqual(try catalog.countPlay(id: saved.id, at: at).lastPlayedAt, at)
        XCTAssertThrowsError(try catalog.countPlay(id: pending.id, at: at)) {
            guard case CatalogError.unexpectedState(_, "pending") = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try catalog.recording(id: pending.id)?.playCount, 0)
        XCTAssertThrowsError(try catalog.countPlay(id: UUID(), at: at)) {
            guard case CatalogError.notFound = $0 else { return XCTFail("\($0)") }
        }
    }

    func testTopIsReadyOnlyByCountThenNewest() throws {
        let a = make(created: 100, plays: 2), b = make(created: 200, plays: 7), c = make(created: 300, plays: 2)
        let d = make(created: 400), p = make(state: .pending, created: 500, plays: 50)
        for r in [a, b, c, d, p] { try catalog.insert(r) }
        XCTAssertEqual(try catalog.top(limit: 3).map(\.id), [b.id, c.id, a.id])
        XCTAssertEqual(try catalog.top(limit: 10).map(\.id), [b.id, c.id, a.id, d.id])
    }

    /// Quick Play and the listing by plays read an index in order: no sort of the whole table
    /// (checked with the sqlite3 CLI's query planner on the real file).
    func testPlayOrdersUseAnIndexWithoutSorting() throws {
        let path = dir.appendingPathComponent("catalog.sqlite").path
        let top = try Tools.sqlite(path, """
            EXPLAIN QUERY PLAN SELECT * FROM recording WHERE state = 'ready'
            ORDER BY playCount DESC, createdAt DESC, id LIMIT 3;
            """)
        XCTAssertTrue(top.contains("recording_by_state_plays"), top)
        XCTAssertFalse(top.contains("TEMP B-TREE"), top)
        let all = try Tools.sqlite(path, """
            EXPLAIN QUERY PLAN SELECT * FROM recording ORDER BY playCount DESC, createdAt DESC, id LIMIT 100;
            """)
        XCTAssertTrue(all.contains("recording_by_plays"), all)
        XCTAssertFalse(all.contains("TEMP B-TREE"), all)
    }

    func testPrefixResolution() throws {
        try catalog.insert(make("ABCD1111-0000-4000-8000-000000000001", created: 1))
        try catalog.insert(make("ABCD2222-0000-4000-8000-000000000002", created: 2))
        XCTAssertEqual(try catalog.resolve("abcd1").title, "T 1.0")
        XCTAssertThrowsError(try catalog.resolve("abcd")) {
            guard case CatalogError.ambiguous(_, let matches) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(matches.count, 2)
        }
        XCTAssertThrowsError(try catalog.resolve("abc")) {
            guard case CatalogError.prefixTooShort = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try catalog.resolve("ffff")) {
            guard case CatalogError.notFound = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try catalog.resolve("ab%d")) {
            guard case CatalogError.notFound = $0 else { return XCTFail("\($0)") }
        }
    }

    func testModifyRollsBackWhenTheBodyThrows() throws {
        struct Refuse: Error {}
        let r = make(state: .pending, created: 1)
        try catalog.insert(r)
        XCTAssertThrowsError(try catalog.modify(id: r.id) { row in row.title = "changed"; throw Refuse() }) {
            XCTAssertTrue($0 is Refuse)
        }
        XCTAssertEqual(try catalog.recording(id: r.id)?.title, r.title)
        try catalog.modify(id: r.id) { $0.state = .ready }
        XCTAssertEqual(try catalog.recording(id: r.id)?.state, .ready)
        XCTAssertThrowsError(try catalog.modify(id: UUID()) { _ in })
    }

    func testSchemaRefusesBadValues() throws {
        let path = dir.appendingPathComponent("catalog.sqlite").path
        var r = make(created: 1)
        try catalog.insert(r)
        r.id = UUID()
        XCTAssertThrowsError(try catalog.insert(r), "two rows may not share a file")
        XCTAssertThrowsError(try Tools.sqlite(path, "UPDATE recording SET playCount = -1;"))
        XCTAssertThrowsError(try Tools.sqlite(path, "UPDATE recording SET purpose = 'bored';"))
        XCTAssertThrowsError(try Tools.sqlite(path, "UPDATE recording SET state = 'saved';"))
        XCTAssertThrowsError(try Tools.sqlite(path, "UPDATE recording SET droppedFrames = -1;"))
    }

    /// v6 rebuilds the recording table to add its CHECKs: rows, and the waveforms that refer to them,
    /// come through (the migration runs again here on a catalog that has both).
    func testTheChecksMigrationKeepsRowsAndTheirWaveforms() throws {
        let path = dir.appendingPathComponent("catalog.sqlite").path
        let r = make(created: 1, plays: 3)
        try catalog.insert(r)
        try catalog.storeWaveform(id: r.id, data: Data([1, 2, 3]))
        catalog = nil
        // v6 rebuilds the table with the columns of its day: the later migrations run again after it
        // (v11's transcript table and search index and v12–v13's markers go first, as in a catalog
        // from before them: their triggers name the recording table, which a rebuild renames; v16
        // adds its column again).
        try Tools.sqlite(path, "DROP TABLE chapterWork; DROP TABLE marker; DROP TABLE transcript; DROP TABLE search; DELETE FROM grdb_migrations WHERE substr(identifier, 1, 2) IN ('v6', 'v7', 'v8', 'v9') OR substr(identifier, 1, 3) IN ('v11', 'v12', 'v13', 'v16');")
        catalog = try Catalog(path: path)
        var expected = r
        expected.format = .aac   // v9 again: recd's own recording with sound
        XCTAssertEqual(try catalog.recording(id: r.id), expected)
        XCTAssertEqual(try catalog.waveform(id: r.id), Data([1, 2, 3]))
        XCTAssertEqual(try Tools.sqlite(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'recording' AND name LIKE 'recording_by_%';"), "5")
        // v11 indexed the rows it found: the recording is found by its title.
        XCTAssertEqual(try catalog.search([["1"]], limit: 5).map(\.recording.id), [r.id])
    }

    /// A list's total is counted once per filter and kept: every write that can change it drops it.
    func testListTotalsFollowEveryChange() throws {
        let a = make(created: 1), b = make(created: 2)
        for r in [a, b] { try catalog.insert(r) }
        func total(_ state: RecordingState? = nil) throws -> Int { try catalog.list(ListQuery(state: state, limit: 1)).total }
        XCTAssertEqual(try total(), 2)
        XCTAssertEqual(try total(.ready), 2)
        try catalog.countPlay(id: a.id, at: Date())   // changes no total
        XCTAssertEqual(try total(.ready), 2)
        try catalog.insert(make(state: .pending, created: 3))
        XCTAssertEqual(try total(), 3)
        XCTAssertEqual(try total(.pending), 1)
        _ = try catalog.modify(id: b.id) { $0.state = .missing }
        XCTAssertEqual(try total(.ready), 1)
        XCTAssertEqual(try total(.missing), 1)
        try catalog.delete(id: a.id, ifStateIn: ["ready"])
        XCTAssertEqual(try total(.ready), 0)
        XCTAssertEqual(try total(), 2)
    }

    /// Group commit: plays of several recordings in one transaction, each with its own answer; a
    /// refused one (unknown, pending) changes nothing and undoes none of the others.
    func testPlaysCountedTogetherEachGetTheirOwnAnswer() throws {
        let a = make(created: 1, plays: 2), b = make(created: 2), pending = make(state: .pending, created: 3)
        for r in [a, b, pending] { try catalog.insert(r) }
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let results = try catalog.countPlays([(a.id, at), (UUID(), at), (b.id, at), (pending.id, at), (a.id, at)])
        XCTAssertEqual(results.count, 5)
        XCTAssertEqual(try results[0].get().playCount, 3)
        XCTAssertEqual(try results[4].get().playCount, 4)
        XCTAssertEqual(try results[2].get().playCount, 1)
        guard case .failure(.notFound) = results[1] else { return XCTFail("\(results[1])") }
        guard case .failure(.unexpectedState(_, "pending")) = results[3] else { return XCTFail("\(results[3])") }
        XCTAssertEqual(try catalog.recording(id: a.id)?.playCount, 4)
        XCTAssertEqual(try catalog.recording(id: a.id)?.lastPlayedAt, at)
        XCTAssertEqual(try catalog.recording(id: pending.id)?.playCount, 0)
    }

    /// v9 adds `format`: what recd recorded itself with sound (a waveform) was AAC; a silent video, an
    /// import and an adopted file are not known and stay NULL; a value outside the three is refused.
    func testTheFormatsMigrationMarksRecdsOwnSoundAsAAC() throws {
        let path = dir.appendingPathComponent("catalog.sqlite").path
        let own = make(created: 1)
        var silent = make(created: 2)
        silent.type = .video
        silent.file = "Recordings/video_\(silent.id.uuidString).mov"
        let imported = make(created: 3)
        var adopted = make(created: 4)
        adopted.file = "Recordings/copied in.m4a"
        for r in [own, silent, imported, adopted] { try catalog.insert(r) }
        for r in [own, imported, adopted] { try catalog.storeWaveform(id: r.id, data: Data([1])) }
        try migrateAgain("v9", droppingColumn: "format", imported: imported)
        XCTAssertEqual(try catalog.recording(id: own.id)?.format, .aac)
        for r in [silent, imported, adopted] { XCTAssertNil(try catalog.recording(id: r.id)?.format, r.file) }
        XCTAssertThrowsError(try Tools.sqlite(path, "UPDATE recording SET format = 'mp3';"))
        var flac = make(created: 5)
        flac.format = .flac
        try catalog.insert(flac)
        XCTAssertEqual(try catalog.recording(id: flac.id)?.format, .flac)
    }

    /// A catalog from before `migration`: its column gone and the migration forgotten, `imported`
    /// marked as an import (its content hash); then opened, which runs the migration again.
    func migrateAgain(_ migration: String, droppingColumn column: String, imported: Recording) throws {
        let path = dir.appendingPathComponent("catalog.sqlite").path
        catalog = nil
        try Tools.sqlite(path, """
            UPDATE recording SET contentHash = 'abc' WHERE id = '\(imported.id.uuidString)';
            ALTER TABLE recording DROP COLUMN \(column);
            DELETE FROM grdb_migrations WHERE identifier LIKE '\(migration):%';
            """)
        catalog = try Catalog(path: path)
    }

    /// v16: the rows before it are takes, but for imports (known by their content hash); every source
    /// is kept as written, and the schema refuses any other.
    func testTheSourcesMigrationKnowsImportsByTheirHash() throws {
        let path = dir.appendingPathComponent("catalog.sqlite").path
        let take = make(created: 1), imported = make(created: 2)
        for r in [take, imported] { try catalog.insert(r) }
        try migrateAgain("v16", droppingColumn: "source", imported: imported)
        XCTAssertEqual(try catalog.recording(id: take.id)?.source, .record)
        XCTAssertEqual(try catalog.recording(id: imported.id)?.source, .import)
        for source in RecordingSource.allCases {
            var r = make(created: 10)
            r.source = source
            try catalog.insert(r)
            XCTAssertEqual(try catalog.recording(id: r.id)?.source, source)
        }
        XCTAssertThrowsError(try Tools.sqlite(path, "UPDATE recording SET source = 'radio';"))
    }

    /// A row is the `Recording` itself: every field, set to something other than its default, reads
    /// back equal (a field added to `Recording` and its migration needs nothing else here).
    func testEveryFieldOfARecordingIsStoredAndReadBack() throws {
        var r = make(created: 7)
        r.state = .ready; r.notes = "two\nlines"; r.purpose = .milestone; r.duration = 12.5; r.sizeBytes = 123_456
        r.playCount = 3; r.lastPlayedAt = Date(timeIntervalSince1970: 1_764_000_000.125); r.recovered = true
        r.droppedFrames = 9; r.loudness = Loudness(integrated: -20.5, range: nil, truePeak: -1.25); r.format = .opus; r.source = .listen
        try catalog.insert(r)
        XCTAssertEqual(try catalog.recording(id: r.id), r)
        XCTAssertEqual(try catalog.list(ListQuery()).recordings, [r])
        // Stored as before GRDB's coding wrote them (Recording is the row): the id as upper-case text
        // (prefixes are an index range), dates as GRDB's UTC text, the loudness as JSON.
        let path = dir.appendingPathComponent("catalog.sqlite").path
        XCTAssertEqual(try Tools.sqlite(path, "SELECT id, createdAt, lastPlayedAt, purpose, recovered, json_extract(loudness, '$.truePeak') FROM recording;"),
                       "\(r.id.uuidString)|1970-01-01 00:00:07.000|2025-11-24 16:00:00.125|milestone|1|-1.25")
        r.title = "Renamed"; r.loudness = nil; r.lastPlayedAt = nil
        try catalog.modify(id: r.id) { $0 = r }
        XCTAssertEqual(try catalog.recording(id: r.id), r)
        // A row that does not read as a recording is said as corrupt, with what did not read.
        try Tools.sqlite(path, "UPDATE recording SET createdAt = 'yesterday';")
        XCTAssertThrowsError(try catalog.recording(id: r.id)) {
            guard case CatalogError.corruptRow(_, let detail) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(detail.contains("createdAt"), detail)
        }
    }
}

enum Tools {
    /// Runs the sqlite3 CLI on the catalog file (an independent reader of what recd wrote).
    @discardableResult
    static func sqlite(_ path: String, _ sql: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        p.arguments = [path, sql]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw NSError(domain: "sqlite3", code: Int(p.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: String(decoding: errData, as: UTF8.self)])
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Markers (issue 47) in the catalog: ordered by time, bounded per recording, refused for a state that
/// takes none, cut by a trim's commit, gone with the recording.
final class CatalogMarkerTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-markers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
    }

    override func tearDown() { catalog = nil; try? FileManager.default.removeItem(at: dir) }

    let states: Set<String> = ["recording", "pending", "ready"]

    func recording(_ state: RecordingState = .ready, duration: Double = 10) throws -> Recording {
        let id = UUID()
        let r = Recording(id: id, type: .audio, state: state, title: "M", notes: "", purpose: nil, createdAt: Date(), duration: duration,
                          sizeBytes: 1, file: "Recordings/audio_\(id.uuidString).m4a", playCount: 0, lastPlayedAt: nil,
                          recovered: false, droppedFrames: 0)
        try catalog.insert(r)
        return r
    }

    func marker(_ time: Double, _ label: String = "") -> Marker { Marker(id: UUID(), time: time, label: label, createdAt: Date()) }

    func testMarkersAreListedByTimeAndBoundedPerRecording() throws {
        let r = try recording()
        for t in [5.0, 1.0, 3.0] { try catalog.addMarker(marker(t), to: r.id, states: states) { _ in } }
        XCTAssertEqual(try catalog.markers(of: r.id).map(\.time), [1, 3, 5])
        for i in 3..<Marker.perRecordingLimit { try catalog.addMarker(marker(Double(i) / 100), to: r.id, states: states) { _ in } }
        XCTAssertThrowsError(try catalog.addMarker(marker(1), to: r.id, states: states) { _ in }) { error in
            guard case CatalogError.tooManyMarkers(_, let limit) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(limit, Marker.perRecordingLimit)
        }
        XCTAssertEqual(try catalog.markers(of: r.id).count, Marker.perRecordingLimit)
    }

    func testAMissingRecordingTakesNoMarkerAndABoundRefusalChangesNothing() throws {
        let missing = try recording(.missing)
        XCTAssertThrowsError(try catalog.addMarker(marker(1), to: missing.id, states: states) { _ in })
        let r = try recording()
        struct TooLate: Error {}
        XCTAssertThrowsError(try catalog.addMarker(marker(11), to: r.id, states: states) { _ in throw TooLate() })
        XCTAssertEqual(try catalog.markers(of: r.id), [])
        XCTAssertThrowsError(try catalog.markers(of: UUID())) { error in
            guard case CatalogError.notFound = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try catalog.deleteMarker(UUID(), of: r.id)) { error in
            guard case CatalogError.markerNotFound = error else { return XCTFail("\(error)") }
        }
    }

    /// A take killed at 9 s of which 4 s reached the disk: recovery sets the duration from the file,
    /// and a marker made at 6 s is kept at the end, not left past it; during the take none is moved.
    func testMarkersPastARecoveredTakesEndAreKeptAtItsEnd() throws {
        let take = try recording(.recording, duration: 0)
        for t in [1.0, 6.0] { try catalog.addMarker(marker(t), to: take.id, states: states) { _ in } }
        _ = try catalog.modify(id: take.id) { $0.title = "Still recording" }
        XCTAssertEqual(try catalog.markers(of: take.id).map(\.time), [1, 6])
        _ = try catalog.modify(id: take.id) { row in
            row.state = .pending
            row.recovered = true
            row.duration = 4
        }
        XCTAssertEqual(try catalog.markers(of: take.id).map(\.time), [1, 4])
        XCTAssertEqual(try catalog.allMarkers()[take.id]?.map(\.time), [1, 4])
    }

    func testATrimsCommitCutsTheMarkersAndADeleteTakesThem() throws {
        let r = try recording()
        let kept = [marker(1, "a"), marker(4, "b"), marker(6, "c"), marker(9.5, "d")]
        for m in kept { try catalog.addMarker(m, to: r.id, states: states) { _ in } }
        var cut = r
        cut.duration = 4
        _ = try catalog.commitReplacement(cut, insert: false, states: states, waveform: nil, poster: nil,
                                          temporary: "Recordings/.trim-test", transcriptCut: (r.id, 3, 7))
        let after = try catalog.markers(of: r.id)
        XCTAssertEqual(after.map(\.time), [1, 3])
        XCTAssertEqual(after.map(\.id), [kept[1].id, kept[2].id])
        try catalog.delete(id: r.id)
        let rows = try Tools.sqlite(dir.appendingPathComponent("catalog.sqlite").path, "SELECT count(*) FROM marker;")
        XCTAssertEqual(rows, "0")
    }

    func testTheWebVTTCarriesMarkersAsNotesInTimeOrder() {
        let t = Transcript(recordingID: UUID(), state: .done, segments: [
            TranscriptSegment(start: 1, end: 2, text: " One.", words: []),
            TranscriptSegment(start: 5, end: 6, text: " Two.", words: []),
        ])
        XCTAssertEqual(t.webVTT(markers: [marker(7, "end --> here"), marker(0.5, "start"), marker(3)]), """
            WEBVTT

            NOTE marker 00:00:00.500 start

            1
            00:00:01.000 --> 00:00:02.000
            One.

            NOTE marker 00:00:03.000

            2
            00:00:05.000 --> 00:00:06.000
            Two.

            NOTE marker 00:00:07.000 end -> here

            """)
        XCTAssertEqual(Marker.cut([marker(2), marker(8)], from: 2, to: 8).map(\.time), [0, 6], "both ends kept")
    }
}

/// How markers become a file's chapters: from 0, one per distinct time, to the end.
final class ChapterLayoutTests: XCTestCase {
    func m(_ t: Double, _ label: String = "") -> Marker { Marker(id: UUID(), time: t, label: label, createdAt: Date()) }

    func testChaptersCoverTheFileFromZero() {
        let c = ChapterPass.chapters([m(2.5, "Intro"), m(2.5, "again"), m(6)], duration: 10, title: "Walk")
        XCTAssertEqual(c, [MediaChapter(start: 0, end: 2.5, title: "Walk"), MediaChapter(start: 2.5, end: 6, title: "Intro"),
                           MediaChapter(start: 6, end: 10, title: "Marker 3")])
        XCTAssertEqual(ChapterPass.chapters([m(0, "Start")], duration: 4, title: "Walk"), [MediaChapter(start: 0, end: 4, title: "Start")])
        XCTAssertEqual(ChapterPass.chapters([], duration: 4, title: "Walk"), [])
    }
}
