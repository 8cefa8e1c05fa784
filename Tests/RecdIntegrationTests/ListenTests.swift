// Hands-free listening (issue 49) through the real daemon: the paced PulseAudio microphone, the real
// voice detector (Silero VAD in the transcriber's environment), real takes and Whisper's transcripts;
// kill -9 mid-phrase; the level gate when the transcriber is not installed; bad requests.
import Foundation
import RecdAPI
import XCTest

final class ListenTests: DaemonTestCase {
    /// The voice detector is the transcriber's environment's; Whisper only where a test asks.
    override var daemonArguments: [String] { ["--transcriber", TranscriptTests.transcriber, "--transcribe", "off"] }

    override func setUpWithError() throws {
        try Skip.if(!FileManager.default.fileExists(atPath: TranscriptTests.transcriber + "/.installed"),
                    "the transcriber is not installed in \(TranscriptTests.transcriber): scripts/install-deps.sh --transcribe")
        try Skip.if(Tools.which("espeak-ng") == nil, "espeak-ng is missing: scripts/install-deps.sh --test installs it")
        try super.setUpWithError()
    }

    func status(_ d: Daemon? = nil) throws -> ListenStatus { try (d ?? daemon).recctlJSON(ListenStatus.self, "listen", "status") }

    func waitFor(_ what: String, seconds: Double = 30, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTFail("not within \(seconds) s: \(what): \(daemon.log.suffix(3000))")
    }

    /// Pieces of sound joined into one 48 kHz mono WAV: speech (a file) or silence or a door's slam.
    enum Piece { case file(String), silence(Double), slam }
    func joined(_ pieces: [Piece]) throws -> String {
        var parts: [String] = []
        for (i, p) in pieces.enumerated() {
            let part = daemon.dir.appendingPathComponent("part\(i).wav").path
            let args: [String] = switch p {
            case .file(let f): [f, "-r", "48000", "-c", "1", "-b", "16", part]
            case .silence(let s): ["-n", "-r", "48000", "-c", "1", "-b", "16", part, "trim", "0", String(s)]
            // 150 ms of loud noise, falling off: a door, not a voice.
            case .slam: ["-n", "-r", "48000", "-c", "1", "-b", "16", part, "synth", "0.15", "brownnoise", "fade", "0", "0.15", "0.12", "vol", "0.9"]
            }
            let r = try Tools.run("sox", args)
            XCTAssertEqual(r.status, 0, r.stderr)
            parts.append(part)
        }
        let out = daemon.dir.appendingPathComponent("listen-\(UUID().uuidString.prefix(6)).wav").path
        let r = try Tools.run("sox", parts + [out])
        XCTAssertEqual(r.status, 0, r.stderr)
        return out
    }

    /// The issue's "done when": things said with pauses become one recording each (a pause shorter
    /// than --silence stays inside one), each starting before its first word, each found by its
    /// words; a door's slam between them makes none.
    func testEachThingSaidBecomesOneRecordingFoundByItsWords() throws {
        daemon.stop()
        let whisper = try Daemon(environment: pulse.environment,
                                 extraArgs: ["--transcriber", TranscriptTests.transcriber, "--transcribe-priority", "normal"], dir: daemon.dir)
        daemon = whisper
        try daemon.start()
        let first = try speech("Remember to water the tomatoes on Saturday.", name: "first")
        let second = try speech("The meeting moves to Thursday morning.", name: "second")
        let third = try speech("Bring the harbour charts.", name: "third")
        // The sound starts with silence, as a microphone's does (the test's null sink delivers nothing
        // before something plays into it: the pre-roll would have nothing to reach back to).
        let wav = try joined([.silence(1.5), .file(first), .silence(3), .slam, .silence(3), .file(second), .silence(0.6), .file(third), .silence(3)])
        let armed = try daemon.recctlJSON(ListenStatus.self, "listen", "start", "--silence", "1.5", "--pre-roll", "0.5", "--min", "0.5")
        XCTAssertEqual(armed.state, .listening)
        XCTAssertEqual(armed.detector, .silero, "\(armed.detectorNote ?? "")")
        XCTAssertTrue(try daemon.recctl("status").stdout.contains("listening"), "status says so")
        try pulse.play(wav, latencyMs: 10)
        try waitFor("two recordings", seconds: 60) { try status().utterances == 2 && status().state == .listening }
        Thread.sleep(forTimeInterval: 2)
        let s = try status()
        XCTAssertEqual(s.utterances, 2, "the slam made none, the short pause split none")
        let list = try daemon.recctlJSON(RecordingList.self, "list").recordings.sorted { $0.createdAt < $1.createdAt }
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.map(\.state), [.ready, .ready])
        XCTAssertEqual(list.map(\.source), [.listen, .listen])
        // Words Whisper base hears in espeak's voice every time (it took "Buy milk" for "I built"): the
        // first word's being kept is the onset's check above, on the sound itself. It once heard
        // "on Saturday" as "once at a day".
        let words: [[String]] = [["water", "tomato"], ["meeting", "chart"]]
        for (r, expected) in zip(list, words) {
            let t = try waitForTranscript(r.id)
            let heard = t.segments.map(\.text).joined(separator: " ").lowercased()
            for w in expected { XCTAssertTrue(heard.contains(w), "'\(w)' not in \(r.title): \(heard)") }
            // The pre-roll: the file holds the quiet before the first word (Whisper's own word times
            // start at 0 whatever the silence before), so the word is whole.
            let onset = try firstSound(daemon.dataDir.appendingPathComponent(r.file).path)
            XCTAssertGreaterThan(onset, 0.25, "\(r.title): the recording starts no later than the pre-roll before the first word")
            XCTAssertLessThan(onset, 1.0, "\(r.title): and not much earlier")
        }
        let off = try daemon.recctlJSON(ListenStatus.self, "listen", "stop")
        XCTAssertEqual(off.state, .off)
        XCTAssertTrue(daemon.log.contains("listening stopped"), "the journal says so")
    }

    /// Seconds into `file` of its first 10 ms louder than -40 dBFS.
    func firstSound(_ file: String) throws -> Double {
        let r = try Tools.run("ffmpeg", ["-v", "error", "-i", file, "-ac", "1", "-ar", "16000", "-f", "s16le", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let samples = r.stdoutData.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        for start in stride(from: 0, to: samples.count - 160, by: 160) {
            let rms = (samples[start..<(start + 160)].reduce(0.0) { $0 + Double($1) * Double($1) } / 160).squareRoot() / 32768
            if rms > 0.01 { return Double(start) / 16000 }
        }
        return .infinity
    }

    /// kill -9 mid-phrase: the take is kept as any take is (recovered as pending at the next start),
    /// and the restarted recd listens again by itself, and says so.
    func testKillNineMidPhraseKeepsTheTakeAndListeningResumes() throws {
        let long = try speech("This is a long note about the garden, the fence that needs paint, and the apple tree that must be cut back before the spring.",
                              name: "long")
        _ = try daemon.recctlJSON(ListenStatus.self, "listen", "start", "--silence", "1", "--pre-roll", "0.3", "--min", "0.5")
        try pulse.play(long, latencyMs: 10)
        try waitFor("speaking") { try status().state == .speaking }
        Thread.sleep(forTimeInterval: 1.5)
        daemon.kill9()
        try daemon.start()
        try waitFor("armed again") { try status().state == .listening }
        let again = try status()
        XCTAssertTrue(again.armed)
        XCTAssertTrue(again.resumedAfterRestart)
        let list = try daemon.recctlJSON(RecordingList.self, "list", "--state", "pending").recordings
        XCTAssertEqual(list.count, 1, "\(list)")
        let r = try XCTUnwrap(list.first)
        XCTAssertEqual(r.state, .pending)
        XCTAssertTrue(r.recovered)
        XCTAssertGreaterThan(r.duration ?? 0, 1.0)
        XCTAssertTrue(daemon.log.contains("listening again after a restart"), "the journal says so")
        _ = try daemon.recctl("listen", "stop")
    }

    /// Without the transcriber's environment a level gate decides, and status says so; bad requests
    /// change nothing.
    func testTheLevelGateWithoutTheTranscriberAndBadRequests() throws {
        daemon.stop()
        let gate = try Daemon(environment: pulse.environment, extraArgs: ["--transcriber", daemon.dir.appendingPathComponent("none").path],
                              dir: daemon.dir)
        daemon = gate
        try daemon.start()
        for (body, code, error) in [("{", 400, "malformed_request"), ("{\"silence\": 2, \"loud\": 1}", 400, "malformed_request"),
                                    ("{\"silence\": 0}", 422, "invalid_value"), ("{\"preRoll\": 11}", 422, "invalid_value"),
                                    ("{\"min\": 10, \"max\": 6}", 422, "invalid_value"), ("{\"format\": \"mp3\"}", 422, "invalid_value"),
                                    ("{\"until\": \"2001-01-01T00:00:00Z\"}", 422, "invalid_value")] {
            let (status, reply) = try daemon.curl("POST", "/v1/listen", body: body)
            XCTAssertEqual(status, code, "\(body): \(reply)")
            XCTAssertTrue(reply.contains(error), "\(body): \(reply)")
        }
        XCTAssertEqual(try status().state, .off)
        let (notListening, reply) = try daemon.curl("DELETE", "/v1/listen")
        XCTAssertEqual(notListening, 409, reply)
        XCTAssertTrue(reply.contains("not_listening"), reply)
        XCTAssertEqual(try daemon.recctl("listen", "start", "--silence", "soon").status, 2)

        let armed = try daemon.recctlJSON(ListenStatus.self, "listen", "start", "--silence", "1", "--pre-roll", "0.2", "--min", "0.3")
        XCTAssertEqual(armed.detector, .level)
        XCTAssertTrue(armed.detectorNote?.contains("level gate") == true, "\(armed)")
        XCTAssertTrue(try daemon.recctl("listen", "status").stdout.contains("detector: level gate"))
        let (twice, again) = try daemon.curl("POST", "/v1/listen", body: "{}")
        XCTAssertEqual(twice, 409, again)
        XCTAssertTrue(again.contains("already_listening"), again)
        let tone = daemon.dir.appendingPathComponent("tone.wav").path
        XCTAssertEqual(try Tools.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "1.5", "sine", "440", "vol", "0.5", "pad", "0.5", "2"]).status, 0)
        try pulse.play(tone, latencyMs: 10)
        try waitFor("one recording") { try status().utterances == 1 }
        let r = try XCTUnwrap(daemon.recctlJSON(RecordingList.self, "list").recordings.first)
        XCTAssertEqual(r.duration ?? 0, 1.5 + 0.2 + 1, accuracy: 0.3)
        _ = try daemon.recctl("listen", "stop")
        daemon.stop()
        let down = try daemon.recctl("listen", "status")
        XCTAssertEqual(down.status, 3, "recd not running: \(down.stderr)")
    }
}
