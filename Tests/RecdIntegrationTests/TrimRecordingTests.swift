// Trim (issue 14) through the real daemon: lossless cuts in place and as new recordings, their
// waveforms and durations, refusals that change nothing, and both sides of the commit after a crash.
import Foundation
import RecdAPI
import XCTest

final class TrimRecordingTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    /// A saved recording of about `seconds` of a 997 Hz tone.
    func savedTone(seconds: Double) throws -> Recording {
        try pulse.play(try Tones.sine(frequency: 997, amplitude: 0.5))
        return try XCTUnwrap(record(seconds: seconds, stopArgs: ["--save"]).recording)
    }

    func bytes(_ r: Recording) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: daemon.path(of: r))) }

    /// The stored waveform's length in seconds.
    func waveformSeconds(_ id: UUID) throws -> Double {
        let (status, body) = try daemon.curl("GET", "/v1/recordings/\(id.uuidString)/waveform")
        XCTAssertEqual(status, 200, body)
        let w = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        return Double(try XCTUnwrap(w["length"] as? Int) * (try XCTUnwrap(w["samples_per_pixel"] as? Int))) / 48000
    }

    func testTrimInPlaceCutsTheFileItsDurationAndWaveformAndKeepsThePlayCount() throws {
        let r = try savedTone(seconds: 3)
        XCTAssertEqual(try daemon.recctl("played", r.id.uuidString).status, 0)
        let trimmed = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--start", "0.5", "--end", "0:02")
        XCTAssertEqual(trimmed.id, r.id)
        XCTAssertEqual(trimmed.file, r.file)
        XCTAssertEqual(trimmed.playCount, 1, "a trim is not a new recording")
        XCTAssertEqual(trimmed.title, r.title)
        let duration = try XCTUnwrap(trimmed.duration)
        XCTAssertEqual(duration, 1.5, accuracy: 0.025)
        let path = daemon.path(of: trimmed)
        XCTAssertEqual(try XCTUnwrap(try Probe.audio(path).duration), duration, accuracy: 0.001)
        XCTAssertEqual(trimmed.sizeBytes, (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value)
        XCTAssertLessThan(trimmed.sizeBytes ?? .max, r.sizeBytes ?? 0)
        XCTAssertEqual(try waveformSeconds(r.id), 1.5, accuracy: 0.025)
        // Lossless and whole: the tone, decodable without an error, no longer than the cut (FFmpeg
        // plays the last AAC frame to its end: under 22 ms).
        let decoded = try AudioAnalysis.of(path, skipSeconds: 0.05)
        XCTAssertEqual(decoded.frequency, 997, accuracy: 10)
        XCTAssertEqual(decoded.duration, 1.5, accuracy: 0.025)
        let strict = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
        XCTAssertEqual(strict.status, 0, strict.stderr)
        // It plays on recd's own speaker to its end, and that counts.
        let played = try daemon.recctl("play", r.id.uuidString, "--wait")
        XCTAssertEqual(played.status, 0, played.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).playCount, 2)
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)
        // Nothing left beside it.
        let hidden = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path)
            .filter { $0.hasPrefix(".") && $0 != ".quarantine" }
        XCTAssertEqual(hidden, [])
    }

    func testTrimAsNewKeepsTheOriginalAndAddsTheCut() throws {
        let r = try savedTone(seconds: 2.5)
        XCTAssertEqual(try daemon.recctl("played", r.id.uuidString).status, 0)
        let before = try bytes(r)
        let copy = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--end", "1", "--as-new")
        XCTAssertNotEqual(copy.id, r.id)
        XCTAssertEqual(copy.file, "Recordings/audio_\(copy.id.uuidString).m4a")
        XCTAssertEqual(copy.playCount, 0)
        XCTAssertEqual(copy.state, .ready)
        // Named as a copy (issue 37), so the library tells the two apart; within 40 characters (an auto
        // title at a two-digit hour has 31: cut with …, TrimTitleTests).
        let named = r.title + " (trimmed)"
        XCTAssertEqual(copy.title, named.count <= 40 ? named
                       : String(r.title.prefix(29)).trimmingCharacters(in: .whitespaces) + "… (trimmed)")
        XCTAssertEqual(try XCTUnwrap(copy.duration), 1.0, accuracy: 0.025)
        XCTAssertEqual(try waveformSeconds(copy.id), 1.0, accuracy: 0.025)
        let original = try daemon.recctlJSON(Recording.self, "show", r.id.uuidString)
        XCTAssertEqual(original.duration, r.duration)
        XCTAssertEqual(original.playCount, 1)
        XCTAssertEqual(try bytes(r), before, "the original's file changed")
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 2)
        // The API says 201 for a new recording.
        let (status, body) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/trim", body: #"{"start": 1, "asNew": true}"#)
        XCTAssertEqual(status, 201, body)
    }

    func testBadTrimsAreRefusedAndChangeNothing() throws {
        let r = try savedTone(seconds: 2)
        let before = try bytes(r)
        let duration = try XCTUnwrap(r.duration)
        let cases: [(String, Int, String)] = [
            (#"{"start": 5}"#, 422, "outside the recording"),
            (#"{"end": \#(duration + 1)}"#, 422, "outside the recording"),
            (#"{"start": -1}"#, 422, "outside the recording"),
            (#"{"start": 1, "end": 0.5}"#, 422, "the end must come after the start"),
            (#"{"start": 0, "end": 0}"#, 422, "the span 0.0–0.0 s is empty"),
            (#"{"start": 1, "end": 1.05}"#, 422, "shorter than 0.1 s"),
            (#"{}"#, 422, "give start, end or both"),
            (#"{"start": "1"}"#, 400, "malformed"),
            (#"{"begin": 1}"#, 400, "unknown field 'begin'"),
            (#"{"start": 1"#, 400, "malformed"),
        ]
        for (body, status, says) in cases {
            let (got, reply) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/trim", body: body)
            XCTAssertEqual(got, status, "\(body): \(reply)")
            XCTAssertTrue(reply.contains(says), "\(body): \(reply)")
        }
        let (unknown, reply) = try daemon.curl("POST", "/v1/recordings/\(UUID().uuidString)/trim", body: #"{"start": 1}"#)
        XCTAssertEqual(unknown, 404, reply)
        let cli = try daemon.recctl("trim", r.id.uuidString)
        XCTAssertEqual(cli.status, 2)
        XCTAssertTrue(cli.stderr.contains("give --start, --end or both"), cli.stderr)
        let badTime = try daemon.recctl("trim", r.id.uuidString, "--start", "soon")
        XCTAssertEqual(badTime.status, 2)
        XCTAssertTrue(badTime.stderr.contains("--start soon"), badTime.stderr)
        // A recording in progress, and one whose file is gone.
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        let active = try XCTUnwrap(try daemon.recctlJSON(DaemonStatus.self, "status").active?.recording)
        let (busy, busyReply) = try daemon.curl("POST", "/v1/recordings/\(active.id.uuidString)/trim", body: #"{"start": 0.1}"#)
        XCTAssertEqual(busy, 409, busyReply)
        XCTAssertTrue(busyReply.contains("invalid_state"), busyReply)
        XCTAssertEqual(try daemon.recctl("record", "stop", "--discard").status, 0)
        XCTAssertEqual(try bytes(r), before)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).duration, r.duration)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1)
        try FileManager.default.removeItem(atPath: daemon.path(of: r))
        let (gone, goneReply) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/trim", body: #"{"start": 0.5}"#)
        XCTAssertEqual(gone, 410, goneReply)
    }

    /// A video (H.264 + AAC, imported: this machine has no camera) cut in place: both streams end at
    /// the cut, the picture decodes from the keyframe before the start, the poster is remade.
    func testAVideoIsCutWithItsSoundAndPicture() throws {
        let clip = daemon.dir.appendingPathComponent("clip.mov").path
        let made = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25",
                                            "-f", "lavfi", "-i", "sine=frequency=500", "-t", "4", "-c:v", "libx264", "-g", "25",
                                            "-c:a", "aac", clip])
        XCTAssertEqual(made.status, 0, made.stderr)
        let video = try daemon.recctlJSON(Recording.self, "import", clip)
        func poster() throws -> Data {
            let file = daemon.dir.appendingPathComponent("poster-\(UUID().uuidString).jpg").path
            let r = try Tools.run("curl", ["-s", "-o", file, "-w", "%{http_code}", "--unix-socket", daemon.socket,
                                           "http://recd/v1/recordings/\(video.id.uuidString)/poster"])
            XCTAssertEqual(r.stdout, "200")
            return try Data(contentsOf: URL(fileURLWithPath: file))
        }
        let posterBefore = try poster()
        XCTAssertEqual(Array(posterBefore.prefix(2)), [0xFF, 0xD8])
        let cut = try daemon.recctlJSON(Recording.self, "trim", video.id.uuidString, "--start", "1.5", "--end", "3")
        XCTAssertEqual(try XCTUnwrap(cut.duration), 1.5, accuracy: 0.045)
        let probe = try VideoProbe.of(daemon.path(of: cut))
        XCTAssertEqual(Set(probe.streams.map(\.codec)), ["h264", "aac"], "\(probe)")
        for stream in probe.streams { XCTAssertEqual(stream.duration, 1.5, accuracy: 0.05, "\(probe)") }
        let decodes = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", daemon.path(of: cut), "-f", "null", "-"])
        XCTAssertEqual(decodes.status, 0, decodes.stderr)
        let posterAfter = try poster()
        XCTAssertEqual(Array(posterAfter.prefix(2)), [0xFF, 0xD8])
        XCTAssertNotEqual(posterAfter, posterBefore, "the poster is still the first frame of the uncut video")
    }

    /// Both sides of the commit point, as a kill -9 leaves them: a finished file not yet committed
    /// is removed (the recording stays as it was); a committed one not yet renamed is put in place.
    func testRecoverySettlesATrimEitherSideOfItsCommit() throws {
        let r = try savedTone(seconds: 2)
        let cut = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--end", "1", "--as-new")
        let dir = daemon.dataDir.appendingPathComponent("Recordings").path
        let name = URL(fileURLWithPath: r.file).lastPathComponent
        let temporary = dir + "/." + name + ".replacing"
        let original = try bytes(r)
        let trimmedBytes = try bytes(cut)
        daemon.stop()

        // Not committed: no journal entry names it.
        try trimmedBytes.write(to: URL(fileURLWithPath: temporary))
        try daemon.start()
        XCTAssertFalse(FileManager.default.fileExists(atPath: temporary))
        XCTAssertEqual(try bytes(r), original)
        var status = try daemon.recctlJSON(DaemonStatus.self, "status")
        XCTAssertTrue(status.recovery?.temporaryFilesRemoved.contains(temporary) ?? false, "\(String(describing: status.recovery))")
        daemon.stop()

        // Committed: the journal names it, the row already has the new duration.
        try trimmedBytes.write(to: URL(fileURLWithPath: temporary))
        let db = daemon.dataDir.appendingPathComponent("catalog.sqlite").path
        let sql = """
            BEGIN; UPDATE recording SET duration = \(cut.duration ?? 0), sizeBytes = \(trimmedBytes.count) WHERE id = '\(r.id.uuidString)';
            INSERT INTO journal (id, kind, startedAt) VALUES ('Recordings/.\(name).replacing', 'replace', '2026-01-01 00:00:00.000'); COMMIT;
            """
        let written = try Tools.run("sqlite3", [db, sql])
        XCTAssertEqual(written.status, 0, written.stderr)
        try daemon.start()
        XCTAssertFalse(FileManager.default.fileExists(atPath: temporary))
        XCTAssertEqual(try bytes(r), trimmedBytes, "the committed trim was not put in place")
        status = try daemon.recctlJSON(DaemonStatus.self, "status")
        XCTAssertEqual(status.recovery?.replacementsFinished, [dir + "/" + name])
        let journal = try Tools.run("sqlite3", [db, "SELECT count(*) FROM journal"])
        XCTAssertEqual(journal.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "0")
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)
    }
}
