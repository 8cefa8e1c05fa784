// End-to-end: the real recd binary, recording from a paced ALSA device (PulseAudio behind the ALSA
// pulse plugin), driven by the real recctl and curl through the real socket.
import Foundation
import RecdAPI
import Synchronization
import XCTest

class DaemonTestCase: XCTestCase {
    var pulse: PulseAudioServer!
    var daemon: Daemon!

    /// Extra recd options for the test class.
    var daemonArguments: [String] { [] }

    override func setUpWithError() throws {
        pulse = try PulseAudioServer()
        daemon = try Daemon(environment: pulse.environment, extraArgs: daemonArguments)
        try daemon.start()
    }

    override func tearDown() {
        daemon?.cleanUp()
        pulse?.stop()
    }

    /// Records about `seconds` of whatever is playing and stops with `stopArgs`.
    @discardableResult
    func record(seconds: Double, startArgs: [String] = [], stopArgs: [String] = []) throws -> StopRecordingResponse {
        let start = try daemon.recctl(["--json", "record", "start"] + startArgs)
        XCTAssertEqual(start.status, 0, start.stderr)
        Thread.sleep(forTimeInterval: seconds)
        let stop = try daemon.recctl(["--json", "record", "stop"] + stopArgs)
        XCTAssertEqual(stop.status, 0, stop.stderr)
        return try APIJSON.decoder().decode(StopRecordingResponse.self, from: stop.stdoutData)
    }
}

final class RecordingTests: DaemonTestCase {
    func testTwoSecondRecordingIsAnAACFileHoldingTheTone() throws {
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        let requestedAt = Date()
        let startResult = try daemon.recctl("--json", "record", "start", "--title", "Tone")
        let startedAt = Date()
        XCTAssertEqual(startResult.status, 0, startResult.stderr)
        let start = try APIJSON.decoder().decode(StartRecordingResponse.self, from: startResult.stdoutData)
        XCTAssertEqual(start.recording.state, .recording)
        XCTAssertEqual(start.device, PulseAudioServer.captureDevice)
        XCTAssertGreaterThan(start.startLatencyMs, 0)
        Thread.sleep(forTimeInterval: 2.0)
        let stopRequestedAt = Date()
        let stop: StopRecordingResponse = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop")
        let recorded = stopRequestedAt.timeIntervalSince(startedAt)

        let r = try XCTUnwrap(stop.recording)
        XCTAssertEqual(r.id, start.recording.id)
        XCTAssertEqual(r.state, .pending)
        XCTAssertEqual(r.file, "Recordings/audio_\(r.id.uuidString).m4a")
        let path = daemon.path(of: r)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(r.sizeBytes, (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value)

        let probe = try Probe.audio(path)
        XCTAssertEqual(probe.codec, "aac")
        XCTAssertTrue(probe.formatName.contains("mp4"), probe.formatName)
        let duration = try XCTUnwrap(probe.duration)
        // The file holds the sound from the first buffer, which comes before the reply (capture does
        // not wait for the take's worker; the reply does, ~0.3 s on a loaded CI machine): between
        // reply → stop and request → stop, within 0.25 s.
        XCTAssertGreaterThan(duration, recorded - 0.25, "ffprobe duration vs time recorded")
        XCTAssertLessThan(duration, stopRequestedAt.timeIntervalSince(requestedAt) + 0.25, "ffprobe duration vs time recorded")
        XCTAssertEqual(try XCTUnwrap(r.duration), duration, accuracy: 0.05, "catalog duration vs ffprobe")
        XCTAssertEqual(stop.capture.overruns, 0)

        let sound = try AudioAnalysis.of(path)
        XCTAssertEqual(sound.frequency, 1000, accuracy: 10, "tone frequency")
        XCTAssertEqual(sound.rms, 0.5 / 2.0.squareRoot(), accuracy: 0.04, "tone level (RMS)")
        XCTAssertEqual(sound.peak, 0.5, accuracy: 0.06, "tone level (peak)")
    }

    func testFinalizedFileIsAnOrdinaryMP4WithTheMoovFirst() throws {
        try pulse.play(try Tones.sine())
        let r = try XCTUnwrap(try record(seconds: 1.2).recording)
        let data = try Data(contentsOf: URL(fileURLWithPath: daemon.path(of: r)))
        // Box order of a faststart file: ftyp, moov, ..., mdat; no moof (not fragmented any more).
        var boxes: [String] = []
        var offset = 0
        while offset + 8 <= data.count {
            let size = data[offset..<offset + 4].reduce(0) { ($0 << 8) | Int($1) }
            boxes.append(String(decoding: data[offset + 4..<offset + 8], as: UTF8.self))
            guard size >= 8 else { break }
            offset += size
        }
        XCTAssertEqual(boxes.first, "ftyp", "\(boxes)")
        XCTAssertEqual(boxes.dropFirst().first, "moov", "\(boxes)")
        XCTAssertTrue(boxes.contains("mdat"), "\(boxes)")
        XCTAssertFalse(boxes.contains("moof"), "\(boxes)")
        let check = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", daemon.path(of: r), "-f", "null", "-"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(check.stderr, "")
    }

    func testPendingThenSaveMakesItReady() throws {
        let stopped = try XCTUnwrap(try record(seconds: 0.6).recording)
        XCTAssertEqual(stopped.state, .pending)
        let pending = try daemon.recctlJSON(RecordingList.self, "list", "--state", "pending")
        XCTAssertEqual(pending.recordings.map(\.id), [stopped.id])
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list", "--state", "ready").recordings, [])

        let saved = try daemon.recctlJSON(Recording.self, "save", stopped.id.uuidString, "--title", "Remember Your Goals",
                                          "--notes", "for the hard evenings", "--purpose", "motivational")
        XCTAssertEqual(saved.state, .ready)
        XCTAssertEqual(saved.title, "Remember Your Goals")
        XCTAssertEqual(saved.notes, "for the hard evenings")
        XCTAssertEqual(saved.purpose, .motivational)
        XCTAssertEqual(saved.playCount, 0)
        XCTAssertNil(saved.lastPlayedAt)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", stopped.id.uuidString), saved)

        // Saving twice is a conflict, and changes nothing.
        let again = try daemon.recctl("save", stopped.id.uuidString, "--title", "Other")
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("it is already saved (only pending recordings can be)"), again.stderr)
        XCTAssertEqual(try daemon.curl("POST", "/v1/recordings/\(stopped.id.uuidString)/save", body: "{}").0, 409)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", stopped.id.uuidString).title, "Remember Your Goals")
    }

    func testStopWithSaveAndMetadataGoesStraightToTheLibrary() throws {
        let stop = try record(seconds: 0.5, startArgs: ["--purpose", "craving"],
                              stopArgs: ["--save", "--title", "You Got This"])
        let r = try XCTUnwrap(stop.recording)
        XCTAssertEqual(r.state, .ready)
        XCTAssertEqual(r.title, "You Got This")
        XCTAssertEqual(r.purpose, .craving)
    }

    func testDiscardRemovesFileAndRow() throws {
        let r = try XCTUnwrap(try record(seconds: 0.5).recording)
        let path = daemon.path(of: r)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        let discard = try daemon.recctl("discard", r.id.uuidString, "--yes")
        XCTAssertEqual(discard.status, 0, discard.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try daemon.recctl("show", r.id.uuidString).status, 1)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)").0, 404)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path), [])

        // Stop --discard: nothing is left either.
        let stop = try record(seconds: 0.5, stopArgs: ["--discard"])
        XCTAssertTrue(stop.discarded)
        XCTAssertNil(stop.recording)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path), [])
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
    }

    func testSavedRecordingCannotBeDiscarded() throws {
        let r = try XCTUnwrap(try record(seconds: 0.4, stopArgs: ["--save"]).recording)
        let result = try daemon.recctl("discard", r.id.uuidString, "--yes")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(FileManager.default.fileExists(atPath: daemon.path(of: r)))
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).state, .ready)
    }

    func testBlankTitleBecomesTheAutoTitleAlsoOnEdit() throws {
        let pattern = #"^Recording [A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d{2} (AM|PM)$"#
        let r = try XCTUnwrap(try record(seconds: 0.4, stopArgs: ["--save"]).recording)
        XCTAssertNotNil(r.title.range(of: pattern, options: .regularExpression), r.title)
        let edited = try daemon.recctlJSON(Recording.self, "edit", r.id.uuidString, "--title", "Why I'm Taking a Break")
        XCTAssertEqual(edited.title, "Why I'm Taking a Break")
        let cleared = try daemon.recctlJSON(Recording.self, "edit", r.id.uuidString, "--title", "   ")
        XCTAssertEqual(cleared.title, r.title)
        // Through the API, null means the same.
        _ = try daemon.recctlJSON(Recording.self, "edit", r.id.uuidString, "--title", "Temp")
        let (status, body) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)", body: #"{"title": null}"#)
        XCTAssertEqual(status, 200, body)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).title, r.title)
    }

    func testLimitsAreEnforcedAndChangeNothing() throws {
        let r = try XCTUnwrap(try record(seconds: 0.4, startArgs: ["--title", "Original", "--notes", "n"],
                                         stopArgs: ["--save"]).recording)
        let id = r.id.uuidString
        let title41 = String(repeating: "a", count: 41)
        let notes201 = String(repeating: "n", count: 201)

        var result = try daemon.recctl("edit", id, "--title", title41)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("limit is 40"), result.stderr)
        result = try daemon.recctl("edit", id, "--notes", notes201)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("limit is 200"), result.stderr)
        // A purpose that is none of the chips is a usage error, said by recctl before asking (issue 47).
        result = try daemon.recctl("edit", id, "--purpose", "bored")
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("motivational"), result.stderr)

        var (status, body) = try daemon.curl("PATCH", "/v1/recordings/\(id)", body: #"{"title": "\#(title41)", "notes": "x"}"#)
        XCTAssertEqual(status, 422, body)
        XCTAssertTrue(body.contains(#""code":"field_too_long""#), body)
        (status, body) = try daemon.curl("PATCH", "/v1/recordings/\(id)", body: #"{"purpose": "bored"}"#)
        XCTAssertEqual(status, 422, body)
        XCTAssertTrue(body.contains(#""code":"invalid_value""#), body)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", id), r, "a refused edit changed the recording")

        // Characters are what a person sees: 40 emoji (many bytes, many UTF-16 units) are 40 characters.
        let emoji40 = String(repeating: "👍🏽", count: 40)
        let ok = try daemon.recctlJSON(Recording.self, "edit", id, "--title", emoji40,
                                       "--notes", String(repeating: "é", count: 200))
        XCTAssertEqual(ok.title, emoji40)
        XCTAssertEqual(try daemon.recctl("edit", id, "--title", emoji40 + "👍🏽").status, 1)

        // A start with a bad title is refused and records nothing.
        result = try daemon.recctl("record", "start", "--title", title41)
        XCTAssertEqual(result.status, 1)
        let status2 = try daemon.recctlJSON(DaemonStatus.self, "status")
        XCTAssertEqual(status2.activity, .idle)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1)

        // A stop with a bad title leaves the recording running.
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        result = try daemon.recctl("record", "stop", "--notes", notes201)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .recording)
        XCTAssertEqual(try daemon.recctl("record", "stop").status, 0)
    }

    func testSecondStartIsAConflictNamingTheActiveRecording() throws {
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "First one").status, 0)
        let second = try daemon.recctl("record", "start")
        XCTAssertEqual(second.status, 1)
        XCTAssertTrue(second.stderr.contains("First one"), second.stderr)
        let (status, body) = try daemon.curl("POST", "/v1/record/start", body: "{}")
        XCTAssertEqual(status, 409)
        XCTAssertTrue(body.contains("already_recording") && body.contains("First one"), body)
        XCTAssertEqual(try daemon.recctl("record", "stop").status, 0)
        // Stop with nothing recording is a conflict too.
        let stop = try daemon.recctl("record", "stop")
        XCTAssertEqual(stop.status, 1)
        XCTAssertTrue(stop.stderr.contains("nothing is being recorded"), stop.stderr)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1)

        // Starts at once: one wins, and every refusal names the winner by its own title, also while
        // its row is still being written (it said '(starting)' then).
        let results = Mutex([Int: ProcessResult]())
        nonisolated(unsafe) let d = daemon!   // recctl runs are separate processes; `d` is only read
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            let r = try? d.recctl("record", "start", "--title", "race\(i)")
            results.withLock { $0[i] = r }
        }
        let all = results.withLock { $0 }
        let winners = all.filter { $0.value.status == 0 }
        XCTAssertEqual(winners.count, 1, "\(all.mapValues { $0.stderr })")
        if let winner = winners.first {
            for (i, r) in all where i != winner.key {
                XCTAssertTrue(r.stderr.contains("already recording: 'race\(winner.key)'"), r.stderr)
            }
        }
        XCTAssertEqual(try daemon.recctl("record", "stop", "--discard").status, 0)
    }

    func testUnknownIDAndAmbiguousPrefix() throws {
        // An empty id is a usage error: it must not reach the daemon, where `/v1/recordings/` is the
        // list (and, with DELETE, delete-all).
        for args in [["show", ""], ["delete", "", "--yes"], ["play", ""], ["edit", "", "--title", "x"], ["waveform", ""]] {
            let r = try daemon.recctl(args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stdout) \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("give a recording id"), "\(args): \(r.stderr)")
        }
        let unknown = try daemon.recctl("show", UUID().uuidString)
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no recording with id"), unknown.stderr)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(UUID().uuidString)").0, 404)
        XCTAssertEqual(try daemon.recctl("save", "0123abcd").status, 1)
        XCTAssertEqual(try daemon.recctl("edit", "ffff", "--title", "x").status, 1)
        XCTAssertEqual(try daemon.recctl("discard", "ffff0000", "--yes").status, 1)
        // What cannot be an id is a usage error (2), said before asking recd; recd's own answer to a
        // short prefix is still 400 for any other client.
        for notAnID in ["abc", "123", "zzzz", "12 4"] {
            let r = try daemon.recctl("show", notAnID)
            XCTAssertEqual(r.status, 2, "\(notAnID): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("is not a recording id") && r.stderr.contains("at least 4"), r.stderr)
        }
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/abc").0, 400)

        // Two rows whose ids share a prefix, written into the real catalog with the sqlite3 CLI while
        // the daemon runs (WAL allows it).
        let db = daemon.dataDir.appendingPathComponent("catalog.sqlite").path
        let sql = """
            INSERT INTO recording (id, type, state, title, notes, createdAt, file, playCount, recovered, droppedFrames)
            VALUES ('ABCD0000-0000-4000-8000-000000000001', 'audio', 'ready', 'One', '', '2025-10-24 20:15:00.000', 'Recordings/a1.m4a', 0, 0, 0),
                   ('ABCD0000-0000-4000-8000-000000000002', 'audio', 'ready', 'Two', '', '2025-10-25 15:42:00.000', 'Recordings/a2.m4a', 0, 0, 0);
            """
        let insert = try Tools.run("sqlite3", [db, sql])
        XCTAssertEqual(insert.status, 0, insert.stderr)
        let ambiguous = try daemon.recctl("show", "abcd")
        XCTAssertEqual(ambiguous.status, 1)
        XCTAssertTrue(ambiguous.stderr.contains("ABCD0000-0000-4000-8000-000000000001")
                      && ambiguous.stderr.contains("ABCD0000-0000-4000-8000-000000000002"), ambiguous.stderr)
        // Each match once, with its title.
        XCTAssertEqual(ambiguous.stderr.components(separatedBy: "ABCD0000-0000-4000-8000-000000000001").count, 2, ambiguous.stderr)
        XCTAssertTrue(ambiguous.stderr.contains("'One'") && ambiguous.stderr.contains("'Two'"), ambiguous.stderr)
        let (status, body) = try daemon.curl("GET", "/v1/recordings/abcd")
        XCTAssertEqual(status, 409)
        XCTAssertTrue(body.contains("ambiguous_id") && body.contains("matches"), body)
        // A longer prefix is unique, in any case.
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", "abcd0000-0000-4000-8000-000000000001").title, "One")
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", "ABCD0000-0000-4000-8000-000000000002").title, "Two")
    }

    func testMalformedAndOversizedRequestsAreRefusedAndTheDaemonStaysUp() throws {
        var (status, body) = try daemon.curl("POST", "/v1/record/start", body: "{not json")
        XCTAssertEqual(status, 400)
        XCTAssertTrue(body.contains(#""code":"malformed_request""#), body)
        (status, body) = try daemon.curl("POST", "/v1/record/stop", body: #"{"then": "later"}"#)
        XCTAssertEqual(status, 400, body)
        (status, body) = try daemon.curl("PATCH", "/v1/recordings/ABCD", body: #"{"title": 5}"#)
        XCTAssertEqual(status, 400, body)
        (status, body) = try daemon.curl("POST", "/v1/record/start", body: "{\"title\": \"" + String(repeating: "x", count: 200_000) + "\"}")
        XCTAssertEqual(status, 413, body)
        XCTAssertTrue(body.contains("payload_too_large"), body)
        (status, body) = try daemon.curl("GET", "/v1/recordings?by=size")
        XCTAssertEqual(status, 400, body)
        (status, body) = try daemon.curl("GET", "/v1/recordings?limit=0")
        XCTAssertEqual(status, 422, body)
        (status, body) = try daemon.curl("GET", "/v1/no/such/thing")
        XCTAssertEqual(status, 404, body)
        XCTAssertTrue(body.contains(#""error""#), body)
        // Garbage that is not HTTP at all.
        let garbage = try Tools.run("python3", ["-c", """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
            s.sendall(b"\\x00\\xffNOT HTTP AT ALL\\r\\n\\r\\n"); s.recv(4096); s.close()
            """, daemon.socket])
        XCTAssertEqual(garbage.status, 0, garbage.stderr)
        // Still serving, nothing recorded.
        let s = try daemon.recctlJSON(DaemonStatus.self, "status")
        XCTAssertEqual(s.activity, .idle)
        XCTAssertEqual(s.counts["recording"], 0)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
    }

    func testListOrderFiltersAndExport() throws {
        let a = try XCTUnwrap(try record(seconds: 0.3, startArgs: ["--title", "Older, with \"quotes\""], stopArgs: ["--save"]).recording)
        Thread.sleep(forTimeInterval: 0.05)
        let b = try XCTUnwrap(try record(seconds: 0.3, startArgs: ["--title", "Newer", "--purpose", "milestone"], stopArgs: ["--save"]).recording)
        let c = try XCTUnwrap(try record(seconds: 0.3).recording)   // pending: not exported
        let all = try daemon.recctlJSON(RecordingList.self, "list")
        XCTAssertEqual(all.recordings.map(\.id), [c.id, b.id, a.id])
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list", "--by", "plays").recordings.map(\.id), [c.id, b.id, a.id])
        let page = try daemon.recctlJSON(RecordingList.self, "list", "--limit", "1", "--offset", "1")
        XCTAssertEqual(page.recordings.map(\.id), [b.id])
        XCTAssertEqual(page.total, 3)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list", "--type", "video").total, 0)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list", "--type", "audio").total, 3)

        let table = try daemon.recctl("list")
        XCTAssertEqual(table.status, 0)
        XCTAssertTrue(table.stdout.contains("Newer") && table.stdout.contains("0:00"), table.stdout)

        // Export into the working directory under the seed's file name pattern.
        let cwd = daemon.dir.appendingPathComponent("export").path
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        XCTAssertEqual(try daemon.recctl(["export", "--format", "csv"], cwd: cwd).status, 0)
        XCTAssertEqual(try daemon.recctl(["export", "--format", "json"], cwd: cwd).status, 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: cwd).sorted()
        XCTAssertEqual(files.count, 2)
        for f in files {
            XCTAssertNotNil(f.range(of: #"^recd_export_\d{4}-\d{2}-\d{2}\.(csv|json)$"#, options: .regularExpression), f)
        }
        let csv = try String(contentsOfFile: cwd + "/" + files.first { $0.hasSuffix(".csv") }!, encoding: .utf8)
        let lines = csv.components(separatedBy: "\r\n")
        XCTAssertEqual(lines[0], "id,title,timestamp,duration,type,purpose,playCount,loudnessLUFS,loudnessRangeLU,truePeakDBTP,transcript,notes,sizeBytes,lastPlayedAt,markers")
        XCTAssertEqual(lines.count, 4, csv)   // header, 2 rows, and the empty string after the last CRLF
        XCTAssertTrue(lines[1].hasPrefix(b.id.uuidString + ",Newer,"), lines[1])
        XCTAssertNotNil(lines[1].range(of: #",audio,milestone,0,(-inf|-?\d+\.\d\d),(\d+\.\d\d)?,(-?\d+\.\d\d)?,,,\d+,,$"#, options: .regularExpression), lines[1])
        XCTAssertTrue(lines[2].contains(#","Older, with ""quotes""","#), lines[2])
        let json = try Data(contentsOf: URL(fileURLWithPath: cwd + "/" + files.first { $0.hasSuffix(".json") }!))
        let doc = try APIJSON.decoder().decode(ExportDocument.self, from: json)
        XCTAssertEqual(doc.recordings.map(\.id), [b.id, a.id])
        XCTAssertEqual(doc.recordings[1].title, #"Older, with "quotes""#)
        // -o - writes to stdout.
        let out = try daemon.recctl("export", "--format", "json", "-o", "-")
        XCTAssertEqual(try APIJSON.decoder().decode(ExportDocument.self, from: out.stdoutData).recordings.count, 2)
    }

    func testOpenAPIDocumentIsServed() throws {
        let (status, body) = try daemon.curl("GET", "/v1/openapi.yaml")
        XCTAssertEqual(status, 200)
        let file = try String(contentsOf: Tools.packageRoot.appendingPathComponent("Sources/Server/openapi.yaml"), encoding: .utf8)
        XCTAssertEqual(body, file)
        XCTAssertTrue(body.hasPrefix("openapi: 3"), String(body.prefix(40)))
    }
}
