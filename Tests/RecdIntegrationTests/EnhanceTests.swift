// Enhance (issue 47) through the real daemon: a cleaned, levelled copy beside an untouched original,
// played and copied out; gone with a trim in place or a delete; refusals that change nothing; and
// no half-made or orphan copy after a crash.
import Foundation
import RecdAPI
import XCTest

final class EnhanceTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    var enhancedDir: URL { daemon.dataDir.appendingPathComponent("Enhanced") }
    func enhancedFiles() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: enhancedDir.path).sorted() }

    /// A quiet spoken memo under steady hiss (0.5 s of hiss alone first), imported and saved.
    func noisyMemo(_ text: String = "Remember to call the plumber about the kitchen sink on Monday.", seconds noise: Double? = nil) throws -> Recording {
        let voice = try speech(text, silence: 0.5)
        let name = UUID().uuidString.prefix(6)
        let quiet = daemon.dir.appendingPathComponent("quiet-\(name).wav").path
        var r = try Tools.run("sox", [voice, quiet, "vol", "0.3"] + (noise.map { ["pad", "0", String($0)] } ?? []))
        XCTAssertEqual(r.status, 0, r.stderr)
        let length = try XCTUnwrap(Double(try Tools.run("soxi", ["-D", quiet]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let hiss = daemon.dir.appendingPathComponent("hiss-\(name).wav").path
        r = try Tools.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", hiss, "synth", String(length), "whitenoise", "vol", "0.02"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let mixed = daemon.dir.appendingPathComponent("memo-\(name).wav").path
        r = try Tools.run("sox", ["-m", quiet, hiss, mixed])
        XCTAssertEqual(r.status, 0, r.stderr)
        let imported = try daemon.recctl("import", mixed)
        XCTAssertEqual(imported.status, 0, imported.stderr)
        return try XCTUnwrap(try daemon.recctlJSON(RecordingList.self, "list").recordings.first)
    }

    /// `file`'s sound, mono 16 kHz.
    func samples(_ file: String) throws -> [Double] {
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", file, "-ac", "1", "-ar", "16000", "-f", "s16le", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdoutData.withUnsafeBytes { $0.bindMemory(to: Int16.self).map(Double.init) }
    }

    /// How many 16 kHz samples `b` lies after `a` (cross-correlation over 2 s from 1 s in, ±10 ms).
    func lag(_ a: [Double], _ b: [Double]) -> Int {
        let window = 16_000..<min(48_000, min(a.count, b.count) - 160)
        return (-160...160).max { x, y in
            window.reduce(0) { $0 + a[$1] * b[$1 + x] } < window.reduce(0) { $0 + a[$1] * b[$1 + y] }
        } ?? .max
    }

    /// RMS (dBFS) of `file`'s mono 16 kHz sound from `from` to `to` seconds (nil: its end).
    func level(_ file: String, from: Double, to: Double?) throws -> Double {
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", file, "-ss", String(from)] + (to.map { ["-to", String($0)] } ?? [])
                              + ["-ac", "1", "-ar", "16000", "-f", "s16le", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let samples = r.stdoutData.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let power = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))
        return 10 * log10(max(power, 1e-9) / (32768.0 * 32768.0))
    }

    func testEnhanceMakesALevelledQuieterCopyBesideAnUntouchedOriginal() throws {
        let r = try noisyMemo()
        let original = daemon.path(of: r)
        let before = try Data(contentsOf: URL(fileURLWithPath: original))
        let made = try daemon.recctlJSON(EnhanceStatus.self, "enhance", String(r.id.uuidString.prefix(8)))
        XCTAssertEqual(made.recordingID, r.id)
        let copy = try XCTUnwrap(made.copy)
        XCTAssertEqual(copy.duration, try XCTUnwrap(r.duration), accuracy: 0.05)
        // One pass: the gain comes from the original's loudness, and what the denoiser takes away and
        // the limiter squashes brings the copy a little under the target (this memo: -17.2 most runs,
        // -18.2 once, with its random hiss): within 2.5 LU, which no listener tells apart.
        XCTAssertEqual(try XCTUnwrap(copy.loudness), EnhanceStatus.targetLoudness, accuracy: 2.5,
                       "levelled: \(copy.originalLoudness.map { "\($0)" } ?? "?") LUFS through \(copy.filters)")
        XCTAssertLessThan(try XCTUnwrap(copy.originalLoudness), -22, "the memo was quiet")
        XCTAssertTrue(copy.filters.contains("afftdn"), copy.filters)
        // The original is as it was, file and row.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: original)), before)
        let after = try daemon.recctlJSON(Recording.self, "show", r.id.uuidString)
        XCTAssertEqual(after.sizeBytes, r.sizeBytes)
        XCTAssertEqual(after.duration, r.duration)
        // The hiss, against the speech, is at least 6 dB lower in the copy: 0.1–0.45 s is hiss alone.
        let path = enhancedDir.appendingPathComponent("\(r.id.uuidString).m4a").path
        XCTAssertEqual(try enhancedFiles(), ["\(r.id.uuidString).m4a"])
        let snrBefore = try level(original, from: 1, to: nil) - level(original, from: 0.1, to: 0.45)
        let snrAfter = try level(path, from: 1, to: nil) - level(path, from: 0.1, to: 0.45)
        XCTAssertGreaterThan(snrAfter - snrBefore, 6, "speech over hiss: \(snrBefore) dB before, \(snrAfter) dB after")
        // On the original's timeline (the denoiser's 25 ms taken back), as long as it: an A/B switch
        // lands on the same word.
        let (heard, cleaned) = (try samples(original), try samples(path))
        XCTAssertLessThanOrEqual(abs(lag(heard, cleaned)), 32, "within 2 ms of the original")
        XCTAssertEqual(Double(cleaned.count), Double(heard.count), accuracy: 16_000 * 0.025)
        // Served with ranges, and copied out under its title.
        let (status, _) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/enhanced/media")
        XCTAssertEqual(status, 200)
        let ranged = try Tools.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-r", "0-99", "--unix-socket", daemon.socket,
                                            "http://recd/v1/recordings/\(r.id.uuidString)/enhanced/media"])
        XCTAssertEqual(ranged.stdout, "206")
        let out = daemon.dir.appendingPathComponent("out").path
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let copied = try daemon.recctl(["media", r.id.uuidString, "--enhanced"], cwd: out)
        XCTAssertEqual(copied.status, 0, copied.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out + "/\(r.title) (enhanced).m4a")), try Data(contentsOf: URL(fileURLWithPath: path)))
        // Played on recd's speaker, counted as a play of the recording.
        let played = try daemon.recctl("play", r.id.uuidString, "--enhanced", "--wait")
        XCTAssertEqual(played.status, 0, played.stderr)
        XCTAssertTrue(played.stdout.contains("its enhanced copy"), played.stdout)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).playCount, 1)
        // Made again: replaced, one file.
        let again = try XCTUnwrap(try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString).copy)
        XCTAssertGreaterThan(again.createdAt, copy.createdAt)
        XCTAssertEqual(try enhancedFiles(), ["\(r.id.uuidString).m4a"])
        // Removed: the recording stays; a second removal is refused.
        let removed = try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString, "--remove")
        XCTAssertNil(removed.copy)
        XCTAssertEqual(try enhancedFiles(), [])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: original)), before)
        let twice = try daemon.recctl("enhance", r.id.uuidString, "--remove")
        XCTAssertEqual(twice.status, 1)
        XCTAssertTrue(twice.stderr.contains("has no enhanced copy"), twice.stderr)
        XCTAssertTrue(try daemon.recctl("enhance", r.id.uuidString, "--show").stdout.contains("has no enhanced copy"))
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)
    }

    /// The issue's measurement: spoken sentences under pink noise and under a fan's hum at 5 dB SNR
    /// (Tests/enhance/intelligibility.py makes them), imported (AAC, as a memo is) and enhanced: the
    /// copies' STOI against the clean speech is higher than the originals', and clean speech's copy
    /// loses next to nothing. Measured when written: pink +0.015–0.017, hum +0.008–0.017, clean
    /// 0.994–0.997 (from 0.999).
    func testTheCopyIsMoreIntelligibleUnderNoiseAndCleanSpeechIsKept() throws {
        let python = Tools.packageRoot.appendingPathComponent(".build/measure-venv/bin/python").path
        let script = Tools.packageRoot.appendingPathComponent("Tests/enhance/intelligibility.py").path
        let folder = daemon.dir.appendingPathComponent("speech").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let made = try Tools.run(python, [script, "make", folder])
        XCTAssertEqual(made.status, 0, "scripts/install-deps.sh --test installs what it needs: \(made.stderr)")
        let items = try JSONDecoder().decode([[String: String]].self, from: made.stdoutData)
        XCTAssertEqual(items.count, 3)
        var triples: [[String]] = [], kinds: [String] = []
        for item in items {
            let clean = try XCTUnwrap(item["clean"])
            for kind in ["clean", "pink", "hum"] {
                let imported = try daemon.recctl("import", try XCTUnwrap(item[kind]))
                XCTAssertEqual(imported.status, 0, imported.stderr)
                let r = try XCTUnwrap(try daemon.recctlJSON(RecordingList.self, "list").recordings.first)
                let copy = try XCTUnwrap(try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString).copy)
                XCTAssertEqual(try XCTUnwrap(copy.loudness), EnhanceStatus.targetLoudness, accuracy: 2.5, "\(kind): levelled")
                XCTAssertLessThanOrEqual(try XCTUnwrap(copy.truePeak), -1.0, "\(kind): no peak near full scale")
                triples.append([clean, daemon.path(of: r), enhancedDir.appendingPathComponent("\(r.id.uuidString).m4a").path])
                kinds.append(kind)
            }
        }
        let scored = try Tools.run(python, [script, "score", String(decoding: try JSONEncoder().encode(triples), as: UTF8.self)])
        XCTAssertEqual(scored.status, 0, scored.stderr)
        let stoi = try JSONDecoder().decode([[Double]].self, from: scored.stdoutData)
        for kind in ["pink", "hum"] {
            let pairs = zip(kinds, stoi).filter { $0.0 == kind }.map(\.1)
            let gain = pairs.map { $0[1] - $0[0] }.reduce(0, +) / Double(pairs.count)
            XCTAssertGreaterThan(gain, 0.005, "\(kind): STOI \(pairs)")
            for p in pairs { XCTAssertGreaterThan(p[1] - p[0], -0.01, "\(kind): no sentence made less intelligible: \(p)") }
        }
        for p in zip(kinds, stoi).filter({ $0.0 == "clean" }).map(\.1) {
            XCTAssertGreaterThan(p[1], 0.98, "clean speech kept: \(p)")
        }
    }

    func testACopyGoesWithATrimInPlaceOrADeleteOfItsRecording() throws {
        let r = try noisyMemo("Bring the harbour charts.")
        XCTAssertNotNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString).copy)
        // As new: the original keeps its copy.
        let cut = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--start", "0.3", "--as-new")
        XCTAssertNotNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString, "--show").copy)
        XCTAssertNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", cut.id.uuidString, "--show").copy)
        // In place: the copy was of sound the recording no longer has.
        _ = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--start", "0.3")
        XCTAssertNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString, "--show").copy)
        XCTAssertEqual(try enhancedFiles(), [])
        // A delete takes it too.
        XCTAssertNotNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", cut.id.uuidString).copy)
        XCTAssertEqual(try daemon.recctl("delete", cut.id.uuidString, "--yes").status, 0)
        XCTAssertEqual(try enhancedFiles(), [])
        // And "delete all".
        XCTAssertNotNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", r.id.uuidString).copy)
        let (status, body) = try daemon.curl("DELETE", "/v1/recordings?confirm=all")
        XCTAssertEqual(status, 200, body)
        XCTAssertEqual(try enhancedFiles(), [])
    }

    func testWhatCannotBeEnhancedIsRefusedAndChangesNothing() throws {
        // A video.
        let mov = daemon.dir.appendingPathComponent("clip.mov").path
        let made = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i", "sine=frequency=500",
                                            "-t", "1", "-c:v", "libx264", "-c:a", "aac", "-y", mov])
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertEqual(try daemon.recctl("import", mov).status, 0)
        let video = try XCTUnwrap(try daemon.recctlJSON(RecordingList.self, "list").recordings.first)
        let refused = try daemon.recctl("enhance", video.id.uuidString)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("is a video"), refused.stderr)
        var (status, body) = try daemon.curl("POST", "/v1/recordings/\(video.id.uuidString)/enhanced")
        XCTAssertEqual(status, 409)
        XCTAssertTrue(body.contains("\"no_media\""), body)
        // No such recording; no copy to play, send or remove.
        (status, body) = try daemon.curl("POST", "/v1/recordings/\(UUID().uuidString)/enhanced")
        XCTAssertEqual(status, 404, body)
        let r = try noisyMemo("Short one.")
        for (method, path) in [("GET", "enhanced/media"), ("DELETE", "enhanced")] {
            (status, body) = try daemon.curl(method, "/v1/recordings/\(r.id.uuidString)/\(path)")
            XCTAssertEqual(status, 409, "\(method) \(path): \(body)")
        }
        let out = daemon.dir.appendingPathComponent("none").path
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let copied = try daemon.recctl(["media", r.id.uuidString, "--enhanced"], cwd: out)
        XCTAssertEqual(copied.status, 1)
        XCTAssertTrue(copied.stderr.contains("has no enhanced copy"), copied.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out), [], "no file written")
        (status, body) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/play", body: #"{"enhanced": true}"#)
        XCTAssertEqual(status, 409, body)
        XCTAssertTrue(body.contains("has no enhanced copy"), body)
        (status, body) = try daemon.curl("PUT", "/v1/recordings/\(r.id.uuidString)/enhanced")
        XCTAssertEqual(status, 405, body)
        // A take being recorded.
        try pulse.play(try Tones.sine(frequency: 440, amplitude: 0.3))
        let started = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        let busy = try daemon.recctl("enhance", started.recording.id.uuidString)
        XCTAssertEqual(busy.status, 1)
        XCTAssertTrue(busy.stderr.contains("recording"), busy.stderr)
        XCTAssertEqual(try daemon.recctl("record", "stop", "--discard").status, 0)
        // No room: nothing is written.
        daemon.stop()
        let full = try Daemon(environment: pulse.environment, extraArgs: daemonArguments + ["--min-free-mb", "100000000"], dir: daemon.dir)
        daemon = full
        try daemon.start()
        (status, body) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/enhanced")
        XCTAssertEqual(status, 507, body)
        XCTAssertEqual(try enhancedFiles(), [])
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)
    }

    /// kill -9 while a copy is made, and what a crash can leave (a half-written file, a file whose
    /// row was never committed, a row whose file is gone): start-up leaves none of them.
    func testACrashLeavesNoHalfMadeOrOrphanCopy() throws {
        let long = try noisyMemo("This memo goes on for a while under the hiss.", seconds: 240)
        let kept = try noisyMemo("Keep this one.")
        XCTAssertNotNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", kept.id.uuidString).copy)
        let request = Process()
        request.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        request.arguments = ["-s", "-o", "/dev/null", "--unix-socket", daemon.socket, "-X", "POST", "http://recd/v1/recordings/\(long.id.uuidString)/enhanced"]
        try request.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !((try? enhancedFiles()) ?? []).contains(where: { $0.hasSuffix(".making.fragmented") }) { Thread.sleep(forTimeInterval: 0.01) }
        let during = try enhancedFiles()
        XCTAssertTrue(during.contains { $0.hasSuffix(".making.fragmented") }, "the copy was being written: \(during)")
        daemon.kill9()
        request.waitUntilExit()
        // What else a crash may leave: a copy's file whose row never came, and a row whose file went.
        let orphan = enhancedDir.appendingPathComponent("\(UUID().uuidString).m4a").path
        XCTAssertTrue(FileManager.default.createFile(atPath: orphan, contents: Data("not a copy".utf8)))
        try FileManager.default.removeItem(atPath: enhancedDir.appendingPathComponent("\(kept.id.uuidString).m4a").path)
        let foreign = enhancedDir.appendingPathComponent("notes.txt").path
        XCTAssertTrue(FileManager.default.createFile(atPath: foreign, contents: Data("mine".utf8)))
        try daemon.start()
        XCTAssertEqual(try enhancedFiles(), ["notes.txt"], "only what is not recd's is left")
        XCTAssertNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", long.id.uuidString, "--show").copy)
        XCTAssertNil(try daemon.recctlJSON(EnhanceStatus.self, "enhance", kept.id.uuidString, "--show").copy, "its file was gone")
        // Made again after the crash, whole.
        let copy = try XCTUnwrap(try daemon.recctlJSON(EnhanceStatus.self, "enhance", kept.id.uuidString).copy)
        XCTAssertEqual(copy.duration, try XCTUnwrap(kept.duration), accuracy: 0.05)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 2, "no recording lost or made")
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)
    }
}
