// Markers (issue 47) through the real recd, recctl and curl: made during a take (now, across a pause),
// while recd plays a recording and at times given; renamed, moved, deleted; cut and shifted by a trim,
// copied with a trim as new, gone with a delete; kept across a kill -9 of a take; in the export; and
// every bad request refused without changing anything.
import Foundation
import RecdAPI
import XCTest

final class MarkerTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    func markers(_ id: UUID) throws -> [Marker] { try daemon.recctlJSON(MarkerList.self, "markers", id.uuidString).markers }

    func post(_ id: UUID, _ body: String) throws -> (Int, String) {
        try daemon.curl("POST", "/v1/recordings/\(id.uuidString)/markers", body: body)
    }

    func testMarkersMadeDuringATakeAcrossAPauseAreKeptWithIt() throws {
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        let take = start.recording.id
        Thread.sleep(forTimeInterval: 1.2)
        // Now, on the take by its id; then, with no id, whatever is being recorded.
        let (code, body) = try post(take, #"{"label": "first"}"#)
        XCTAssertEqual(code, 201, body)
        let first = try APIJSON.decoder().decode(Marker.self, from: Data(body.utf8))
        XCTAssertEqual(first.time, 1.2, accuracy: 0.6)
        XCTAssertEqual(try daemon.recctl("record", "pause").status, 0)
        Thread.sleep(forTimeInterval: 1)
        let paused = try daemon.recctlJSON(Marker.self, "mark", "while paused")
        XCTAssertEqual(paused.label, "while paused")
        // The take's clock stops in a pause: a marker then is where the take resumes.
        XCTAssertEqual(paused.time, first.time, accuracy: 0.4)
        XCTAssertEqual(try daemon.recctl("record", "resume").status, 0)
        Thread.sleep(forTimeInterval: 1)
        let said = try daemon.recctl("mark")
        XCTAssertEqual(said.status, 0, said.stderr)
        XCTAssertTrue(said.stdout.hasPrefix("⚑ marked 0:0"), said.stdout)
        let stop = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save", "--title", "Marked")
        let r = try XCTUnwrap(stop.recording)
        let kept = try markers(r.id)
        XCTAssertEqual(kept.map(\.label), ["first", "while paused", ""])
        XCTAssertEqual(kept.first?.id, first.id)
        XCTAssertLessThanOrEqual(kept.last?.time ?? 99, (r.duration ?? 0) + 0.5, "\(kept) in \(r)")
        XCTAssertGreaterThan(kept.last?.time ?? 0, paused.time + 0.5)
        // Listed for people, earliest first, with their short ids.
        let listed = try daemon.recctl("markers", String(r.id.uuidString.prefix(8)))
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertEqual(listed.stdout.split(separator: "\n").count, 3, listed.stdout)
        XCTAssertTrue(listed.stdout.contains("first") && listed.stdout.contains("(no label)"), listed.stdout)

        // In the export, with the notes and the other fields it lacked.
        XCTAssertEqual(try daemon.recctl("edit", r.id.uuidString, "--notes", "said, then marked").status, 0)
        let json = try daemon.recctl("export", "--format", "json", "-o", "-")
        let document = try APIJSON.decoder().decode(ExportDocument.self, from: json.stdoutData)
        let row = try XCTUnwrap(document.recordings.first { $0.id == r.id })
        XCTAssertEqual(row.markers, kept)
        XCTAssertEqual(row.notes, "said, then marked")
        XCTAssertEqual(row.sizeBytes, r.sizeBytes)
        let csv = try daemon.recctl("export", "--format", "csv", "-o", "-").stdout
        let lines = csv.split(separator: "\r\n")
        XCTAssertTrue(lines[0].hasSuffix(",transcript,notes,sizeBytes,lastPlayedAt,markers"), String(lines[0]))
        XCTAssertTrue(lines[1].hasSuffix(String(format: "%.3f first; %.3f while paused; %.3f", kept[0].time, kept[1].time, kept[2].time)),
                      String(lines[1]))
        XCTAssertTrue(lines[1].contains(",said, then marked,") || lines[1].contains(",\"said, then marked\","), String(lines[1]))
    }

    func testMarkersAtTimesAreChangedDeletedAndBadRequestsChangeNothing() throws {
        let r = try daemon.recctlJSON(Recording.self, "import", try Tones.sine(seconds: 10), "--title", "Ten seconds")
        let a = try daemon.recctlJSON(Marker.self, "mark", r.id.uuidString, "--at", "2.5", "--label", "a")
        XCTAssertEqual(a.time, 2.5)
        let b = try daemon.recctlJSON(Marker.self, "mark", r.id.uuidString, "b", "--at", "0:07")
        XCTAssertEqual(b.time, 7)
        XCTAssertEqual(b.label, "b")
        let before = try markers(r.id)
        XCTAssertEqual(before.map(\.time), [2.5, 7])

        // Refused, each with a reason, and nothing changed.
        let long = String(repeating: "x", count: Marker.labelLimit + 1)
        for (body, status, says) in [
            (#"{"time": 1, "label": "\#(long)"}"#, 422, "the label is 61 characters long; the limit is 60"),
            (#"{"time": 1, "label": "two\nlines"}"#, 422, "a label is one line"),
            (#"{"time": 1, "label": "\u001b[31m"}"#, 422, "control character U+001B"),
            (#"{"time": -1}"#, 422, "-1.0 is not a number of seconds"),
            (#"{"time": 10.5}"#, 422, "past the end of recording"),
            (#"{"time": "soon"}"#, 400, "time"),
            (#"{"time": 1, "color": "red"}"#, 400, "unknown field 'color'"),
            (#"{"time": 1"#, 400, "malformed JSON"),
            ("{}", 422, "neither being recorded nor playing"),
        ] {
            let (code, text) = try post(r.id, body)
            XCTAssertEqual(code, status, "\(body): \(text)")
            XCTAssertTrue(text.contains(says), "\(body): \(text)")
        }
        let (unknown, unknownBody) = try daemon.curl("POST", "/v1/recordings/00000000-0000-0000-0000-000000000000/markers", body: #"{"time": 1}"#)
        XCTAssertEqual(unknown, 404, unknownBody)
        let (noMarker, noMarkerBody) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)/markers/\(UUID().uuidString)", body: #"{"label": "z"}"#)
        XCTAssertEqual(noMarker, 404, noMarkerBody)
        let (badMarker, _) = try daemon.curl("DELETE", "/v1/recordings/\(r.id.uuidString)/markers/not-an-id")
        XCTAssertEqual(badMarker, 404)
        let (empty, emptyBody) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)/markers/\(a.id.uuidString)", body: "{}")
        XCTAssertEqual(empty, 422, emptyBody)
        let (pastEnd, _) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)/markers/\(a.id.uuidString)", body: #"{"time": 11}"#)
        XCTAssertEqual(pastEnd, 422)
        let usage = try daemon.recctl("mark", r.id.uuidString, "--at", "1:75")
        XCTAssertEqual(usage.status, 2, usage.stderr)
        let twice = try daemon.recctl("mark", r.id.uuidString, "one", "--label", "two", "--at", "1")
        XCTAssertEqual(twice.status, 2, twice.stderr)
        let nothing = try daemon.recctl("mark", "a label")
        XCTAssertEqual(nothing.status, 1)
        XCTAssertTrue(nothing.stderr.contains("nothing is being recorded or played"), nothing.stderr)
        XCTAssertEqual(try markers(r.id), before)

        // Renamed, moved and deleted by recctl, a marker named by the start of its id.
        let prefix = String(a.id.uuidString.prefix(6))
        let renamed = try daemon.recctl("markers", r.id.uuidString, "--rename", prefix, "--label", "intro")
        XCTAssertEqual(renamed.status, 0, renamed.stderr)
        XCTAssertEqual(try daemon.recctl("markers", r.id.uuidString, "--move", prefix, "--to", "1:00").status, 1, "past the end")
        XCTAssertEqual(try daemon.recctl("markers", r.id.uuidString, "--move", prefix, "--to", "8.25").status, 0)
        XCTAssertEqual(try markers(r.id).map { "\($0.time) \($0.label)" }, ["7.0 b", "8.25 intro"])
        let deleted = try daemon.recctl("markers", r.id.uuidString, "--delete", String(b.id.uuidString.prefix(6)))
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        XCTAssertTrue(deleted.stdout.contains("Marker 0:07 deleted ✓"), deleted.stdout)
        XCTAssertEqual(try markers(r.id).map(\.id), [a.id])

        // While recd plays it, "now" is what is heard.
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString, "--from", "4").status, 0)
        let heard = try daemon.recctlJSON(Marker.self, "mark", "heard")
        XCTAssertEqual(heard.time, 4.2, accuracy: 1.0)
        _ = try daemon.recctl("playback", "stop")

        // Gone with the recording.
        XCTAssertEqual(try daemon.recctl("delete", r.id.uuidString, "--yes").status, 0)
        let rows = try Tools.run("sqlite3", [daemon.dataDir.appendingPathComponent("catalog.sqlite").path, "SELECT count(*) FROM marker"])
        XCTAssertEqual(rows.stdout, "0\n")
    }

    func testATrimCutsAndShiftsMarkersAndACopyGetsItsOwn() throws {
        let r = try daemon.recctlJSON(Recording.self, "import", try Tones.sine(seconds: 10), "--title", "To cut")
        for t in ["1", "4", "6", "9.5"] { _ = try daemon.recctlJSON(Marker.self, "mark", r.id.uuidString, "at " + t, "--at", t) }
        let original = try markers(r.id)
        let copy = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--start", "3", "--end", "7", "--as-new")
        let copied = try markers(copy.id)
        XCTAssertEqual(copied.map(\.label), ["at 4", "at 6"])
        XCTAssertEqual(copied.map(\.time), [1, 3])
        XCTAssertTrue(Set(copied.map(\.id)).isDisjoint(with: original.map(\.id)), "a copy's markers are its own")
        XCTAssertEqual(try markers(r.id), original, "the original keeps its markers")
        _ = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--start", "3", "--end", "7")
        let cut = try markers(r.id)
        XCTAssertEqual(cut.map(\.time), [1, 3])
        XCTAssertEqual(cut.map(\.id), [original[1].id, original[2].id], "the same markers, moved with the cut")
    }

    /// The chapters of a file as ffprobe (not recd's code) reads them: start and title.
    func chapters(_ r: Recording) throws -> [String] {
        let path = daemon.dataDir.appendingPathComponent(r.file).path
        let probe = try Tools.run("ffprobe", ["-v", "error", "-show_chapters", "-of", "json", path])
        let json = try JSONSerialization.jsonObject(with: probe.stdoutData) as? [String: Any]
        return (json?["chapters"] as? [[String: Any]] ?? []).map { c in
            "\((c["start_time"] as? String).flatMap(Double.init) ?? -1) \((c["tags"] as? [String: String])?["title"] ?? "")"
        }
    }

    /// Waits (the chapter pass settles for a second, then copies the file) until the file's chapters are `expected`.
    func waitForChapters(_ r: Recording, _ expected: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        var seen: [String] = []
        let deadline = Date().addingTimeInterval(30)
        repeat {
            seen = try chapters(r)
            if seen == expected { return }
            Thread.sleep(forTimeInterval: 0.2)
        } while Date() < deadline
        XCTFail("the file's chapters are \(seen), not \(expected): \(daemon.log.suffix(1500))", file: file, line: line)
    }

    func testASavedRecordingsFileCarriesItsMarkersAsChapters() throws {
        let r = try daemon.recctlJSON(Recording.self, "import", try Tones.sine(seconds: 10), "--title", "Chaptered")
        let before = try XCTUnwrap(try Probe.audio(daemon.dataDir.appendingPathComponent(r.file).path).duration)
        let intro = try daemon.recctlJSON(Marker.self, "mark", r.id.uuidString, "Intro", "--at", "2.5")
        _ = try daemon.recctlJSON(Marker.self, "mark", r.id.uuidString, "--at", "6")
        try waitForChapters(r, ["0.0 Chaptered", "2.5 Intro", "6.0 Marker 2"])
        // Lossless: the same length; the catalog's size is the new file's.
        let path = daemon.dataDir.appendingPathComponent(r.file).path
        XCTAssertEqual(try XCTUnwrap(try Probe.audio(path).duration), before, accuracy: 0.001)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).sizeBytes, size)
        // Renamed, then every marker deleted: the file follows.
        XCTAssertEqual(try daemon.recctl("markers", r.id.uuidString, "--rename", String(intro.id.uuidString.prefix(8)), "--label", "The plan").status, 0)
        try waitForChapters(r, ["0.0 Chaptered", "2.5 The plan", "6.0 Marker 2"])
        for m in try markers(r.id) { XCTAssertEqual(try daemon.recctl("markers", r.id.uuidString, "--delete", m.id.uuidString).status, 0) }
        try waitForChapters(r, [])

        // A take's file gets its chapters when it is saved, not before; a kill -9 between the mark and
        // the copy leaves the work listed, and the next start does it.
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 1.2)
        _ = try daemon.recctlJSON(Marker.self, "mark", "said")
        Thread.sleep(forTimeInterval: 0.5)
        let take = try XCTUnwrap(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop").recording)
        Thread.sleep(forTimeInterval: 1.5)
        XCTAssertEqual(try chapters(take), [], "a pending take's file has no chapters")
        _ = try daemon.recctlJSON(Recording.self, "save", take.id.uuidString)
        daemon.kill9()
        try daemon.start()
        let saved = try daemon.recctlJSON(Recording.self, "show", take.id.uuidString)
        let m = try XCTUnwrap(try markers(take.id).first)
        try waitForChapters(saved, [saved.title, "said"].enumerated().map { i, t in "\(i == 0 ? 0.0 : (m.time * 1000).rounded() / 1000) \(t)" })
    }

    func testATakesMarkersSurviveAKill9() throws {
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        Thread.sleep(forTimeInterval: 1.5)
        let m = try daemon.recctlJSON(Marker.self, "mark", "before the crash")
        Thread.sleep(forTimeInterval: 1.5)
        daemon.kill9()
        try daemon.start()
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertEqual(r.state, .pending)
        XCTAssertEqual(try markers(r.id), [m])
        XCTAssertGreaterThan(r.duration ?? 0, m.time)
    }
}
