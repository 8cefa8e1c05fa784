// Import (issue 14) through the real daemon: files made by the ffmpeg CLI sent by recctl over the
// socket; what is kept as it is, what is encoded, titles and times from tags, and refusals that
// leave nothing behind.
import Foundation
import RecdAPI
import XCTest

final class ImportTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    var work: URL { daemon.dir.appendingPathComponent("imports") }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    /// A file made by the ffmpeg CLI from lavfi sources.
    func make(_ name: String, _ args: [String]) throws -> String {
        let path = work.appendingPathComponent(name).path
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y"] + args + [path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return path
    }

    func tone(_ hz: Int, seconds: Double, rate: Int = 48000) -> [String] {
        ["-f", "lavfi", "-i", "sine=frequency=\(hz):sample_rate=\(rate):duration=\(seconds)"]
    }

    /// Sizes of the packets of one stream (ffprobe): equal lists mean the stream was copied, not re-encoded.
    func packetSizes(_ path: String, _ stream: String) throws -> [Int] {
        let r = try Tools.run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries", "packet=size", "-of", "csv=p=0", path])
        // (An Ogg stream's lines carry an empty field after the size: "317,".)
        return r.stdout.split(separator: "\n").compactMap { Int($0.split(separator: ",").first ?? "") }
    }

    /// Recordings/ and .uploads/ hold nothing but the library's files.
    func assertNothingLeftBehind(file: StaticString = #filePath, line: UInt = #line) throws {
        let uploads = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent(".uploads").path)
        XCTAssertEqual(uploads, [], file: file, line: line)
        let hidden = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path)
            .filter { $0.hasPrefix(".") && $0 != ".quarantine" }
        XCTAssertEqual(hidden, [], file: file, line: line)
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent, file: file, line: line)
    }

    func testAWavIsEncodedWithItsTagsTitleAndDateAndPlays() throws {
        // 44.1 kHz stereo, tagged: encoded to the library's AAC at 48 kHz, stereo kept.
        let wav = try make("memo.wav", tone(440, seconds: 5, rate: 44100) + ["-ac", "2", "-metadata", "title=Morning memo",
                                                                            "-metadata", "date=2024-03-05"])
        let r = try daemon.recctlJSON(Recording.self, "import", wav)
        XCTAssertEqual(r.state, .ready)
        XCTAssertEqual(r.type, .audio)
        XCTAssertEqual(r.title, "Morning memo")
        XCTAssertEqual(r.playCount, 0)
        XCTAssertEqual(r.source, .import)
        let shown = try daemon.recctl("show", r.id.uuidString).stdout
        XCTAssertNotNil(shown.range(of: #"\nmade by: +import\n"#, options: .regularExpression), shown)
        XCTAssertEqual(r.file, "Recordings/audio_\(r.id.uuidString).m4a")
        XCTAssertEqual(ISO8601DateFormatter().string(from: r.createdAt), "2024-03-05T00:00:00Z")
        XCTAssertEqual(try XCTUnwrap(r.duration), 5.0, accuracy: 0.03)
        let path = daemon.path(of: r)
        let probe = try Probe.audio(path)
        XCTAssertEqual(probe.codec, "aac")
        let streams = try Tools.run("ffprobe", ["-v", "error", "-show_entries", "stream=sample_rate,channels", "-of", "csv=p=0", path])
        XCTAssertEqual(streams.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "48000,2")
        let sound = try AudioAnalysis.of(path)
        XCTAssertEqual(sound.frequency, 440, accuracy: 5)
        // The waveform was made on the way and is the file's length.
        let (status, body) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/waveform")
        XCTAssertEqual(status, 200, body)
        let w = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(Double((w["length"] as? Int ?? 0) * (w["samples_per_pixel"] as? Int ?? 0)) / 48000, 5.0, accuracy: 0.03)
        XCTAssertTrue(daemon.log.contains("imported 'memo.wav'"), daemon.log)
        // It plays on recd's speaker, and counts as any saved recording.
        let played = try daemon.recctl("play", r.id.uuidString, "--wait")
        XCTAssertEqual(played.status, 0, played.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).playCount, 1)
        try assertNothingLeftBehind()
    }

    func testAACAndVideoAreKeptAsTheyAreAndOtherAudioIsEncoded() throws {
        let m4a = try make("walk.m4a", tone(660, seconds: 3) + ["-c:a", "aac", "-b:a", "96k"])
        // Created time from the file's modification time (no tag).
        let mtime = Date(timeIntervalSince1970: 1_700_000_000)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: m4a)
        let audio = try daemon.recctlJSON(Recording.self, "import", m4a, "--purpose", "reflection", "--notes", "from my phone")
        XCTAssertEqual(audio.title, "walk")
        XCTAssertEqual(audio.purpose, .reflection)
        XCTAssertEqual(audio.notes, "from my phone")
        XCTAssertEqual(audio.createdAt.timeIntervalSince1970, 1_700_000_000, accuracy: 1)
        XCTAssertEqual(try packetSizes(daemon.path(of: audio), "a:0"), try packetSizes(m4a, "a:0"), "the AAC was re-encoded")
        XCTAssertEqual(try XCTUnwrap(audio.duration), 3.0, accuracy: 0.03)

        let mov = try make("clip.mov", ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i", "sine=frequency=500",
                                        "-t", "3", "-c:v", "libx264", "-c:a", "aac"])
        let video = try daemon.recctlJSON(Recording.self, "import", mov)
        XCTAssertEqual(video.type, .video)
        XCTAssertEqual(video.file, "Recordings/video_\(video.id.uuidString).mov")
        XCTAssertEqual(try packetSizes(daemon.path(of: video), "v:0"), try packetSizes(mov, "v:0"), "the H.264 was re-encoded")
        let (posterStatus, _) = try daemon.curl("GET", "/v1/recordings/\(video.id.uuidString)/poster")
        XCTAssertEqual(posterStatus, 200)

        // MP3 and Vorbis are encoded to the default format (AAC); FLAC and Opus are formats of the
        // library, kept as they are (issue 15).
        for (name, args, seconds, codec) in [("song.mp3", tone(330, seconds: 2) + ["-c:a", "libmp3lame"], 2.0, "aac"),
                                             ("take.flac", tone(550, seconds: 2.5) + ["-c:a", "flac"], 2.5, "flac"),
                                             ("voice.opus", tone(770, seconds: 2) + ["-c:a", "libopus"], 2.0, "opus"),
                                             ("old.ogg", tone(880, seconds: 1.5) + ["-c:a", "libvorbis"], 1.5, "aac")] {
            let file = try make(name, args)
            let r = try daemon.recctlJSON(Recording.self, "import", file)
            XCTAssertEqual(try Probe.audio(daemon.path(of: r)).codec, codec, name)
            XCTAssertEqual(r.format?.rawValue, codec, name)
            if codec != "aac" {
                XCTAssertEqual(try packetSizes(daemon.path(of: r), "a:0"), try packetSizes(file, "a:0"), "\(name) was re-encoded")
            }
            XCTAssertEqual(try XCTUnwrap(r.duration), seconds, accuracy: 0.06, name)
            XCTAssertEqual(r.title, (name as NSString).deletingPathExtension)
        }
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 6)
        try assertNothingLeftBehind()
    }

    func testWhatCannotBeImportedIsRefusedAndLeavesNothing() throws {
        let text = work.appendingPathComponent("notes.txt").path
        try Data("not a recording\n".utf8).write(to: URL(fileURLWithPath: text))
        let silent = try make("silent.mp4", ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "2", "-c:v", "libx264"])
        let vp9 = try make("clip.webm", ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i", "sine",
                                         "-t", "1", "-c:v", "libvpx-vp9", "-c:a", "libopus"])
        let wav = try make("ok.wav", tone(440, seconds: 1))
        // Several files: the good one goes in, each bad one is said, exit status 1.
        let mixed = try daemon.recctl("import", text, silent, wav, vp9, "/nonexistent/x.wav")
        XCTAssertEqual(mixed.status, 1)
        XCTAssertTrue(mixed.stderr.contains("cannot import 'notes.txt': it is not a media file"), mixed.stderr)
        XCTAssertTrue(mixed.stderr.contains("cannot import 'silent.mp4': it has no audio stream"), mixed.stderr)
        XCTAssertTrue(mixed.stderr.contains("cannot import 'clip.webm': it is a vp9 video with opus sound"), mixed.stderr)
        XCTAssertTrue(mixed.stderr.contains("/nonexistent/x.wav: no such file"), mixed.stderr)
        XCTAssertTrue(mixed.stdout.contains("Imported ✓ 'ok'"), mixed.stdout)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1)
        // The same bytes again: reported, not stored twice (also under another name).
        try FileManager.default.copyItem(atPath: wav, toPath: work.appendingPathComponent("copy.wav").path)
        let again = try daemon.recctl("import", work.appendingPathComponent("copy.wav").path)
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("'copy.wav' is already in the library: it was imported as 'ok'"), again.stderr)
        // The API's own answers.
        func post(_ query: String, _ file: String) throws -> (Int, String) {
            let r = try Tools.run("curl", ["-s", "-w", "\n%{http_code}", "--unix-socket", daemon.socket, "-X", "POST",
                                           "--data-binary", "@" + file, "http://recd/v1/recordings/import" + query])
            let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }
        let cases: [(String, String, Int, String)] = [
            ("?name=notes.txt", text, 415, "unsupported_media"),
            ("?name=ok.wav", wav, 409, "duplicate"),
            ("", wav, 422, "invalid name"),
            ("?name=a/b.wav", wav, 422, "invalid name"),
            ("?name=x.wav&purpose=joy", wav, 422, "purpose"),
            ("?name=x.wav&title=" + String(repeating: "t", count: 41), wav, 422, "field_too_long"),
            ("?name=x.wav&modified=yesterday", wav, 422, "invalid modified"),
            ("?name=empty.wav", "/dev/null", 415, "the body is empty"),
        ]
        for (query, file, status, says) in cases {
            let (got, body) = try post(query, file)
            XCTAssertEqual(got, status, "\(query): \(body)")
            XCTAssertTrue(body.contains(says), "\(query): \(body)")
        }
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1)
        try assertNothingLeftBehind()
    }

    /// Over --max-import-mb: refused from the announced size before a byte is stored; a body that
    /// does not announce its size is cut off at the limit. No room on the disk: 507.
    func testSizeAndRoomLimits() throws {
        let big = try make("big.wav", tone(440, seconds: 15))   // 1.4 MB
        daemon.stop()
        let limited = try Daemon(environment: pulse.environment, extraArgs: ["--max-import-mb", "1"])
        defer { limited.cleanUp() }
        try limited.start()
        let r = try limited.recctl("import", big)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("cannot import 'big.wav': it is larger than 1 MB (--max-import-mb)"), r.stderr)
        let chunked = try Tools.run("curl", ["-s", "-w", "\n%{http_code}", "--unix-socket", limited.socket, "-X", "POST",
                                             "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + big,
                                             "http://recd/v1/recordings/import?name=big.wav"])
        XCTAssertTrue(chunked.stdout.hasSuffix("413"), chunked.stdout)
        XCTAssertEqual(try limited.recctlJSON(RecordingList.self, "list").total, 0)
        limited.stop()
        let full = try Daemon(environment: pulse.environment, extraArgs: ["--min-free-mb", "100000000"])
        defer { full.cleanUp() }
        try full.start()
        let noRoom = try full.recctl("import", big)
        XCTAssertEqual(noRoom.status, 1)
        XCTAssertTrue(noRoom.stderr.contains("not enough free space"), noRoom.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: full.dataDir.appendingPathComponent(".uploads").path), [])
    }

    /// A body that does not announce its size (chunked) counts against --min-free-mb as it arrives:
    /// it was 0 bytes to the check before the first byte, and could fill the disk past the limit.
    /// The data directory is a 30 MiB tmpfs (31.5 MB) and recd keeps 30 MB free.
    func testAChunkedImportCountsWhatArrivesAgainstMinFree() throws {
        try Skip.if(geteuid() != 0, "needs root, to mount a small tmpfs")
        let big = try make("big.wav", tone(440, seconds: 30))    // 2.9 MB
        let small = try make("small.wav", tone(440, seconds: 2))  // 0.2 MB
        daemon.stop()
        let tight = try Daemon(environment: pulse.environment, extraArgs: ["--min-free-mb", "30"])
        defer { tight.cleanUp() }
        try FileManager.default.createDirectory(at: tight.dataDir, withIntermediateDirectories: true)
        XCTAssertEqual(try Tools.run("mount", ["-t", "tmpfs", "-o", "size=30m,mode=0700", "tmpfs", tight.dataDir.path]).status, 0)
        defer { tight.stop(); _ = try? Tools.run("umount", [tight.dataDir.path]) }
        try tight.start()
        func chunked(_ file: String, _ name: String) throws -> String {
            try Tools.run("curl", ["-s", "-w", "\n%{http_code}", "--unix-socket", tight.socket, "-X", "POST",
                                   "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file,
                                   "http://recd/v1/recordings/import?name=\(name)"]).stdout
        }
        let refused = try chunked(big, "big.wav")
        XCTAssertTrue(refused.hasSuffix("\n507"), refused)
        XCTAssertTrue(refused.contains("insufficient_storage") && refused.contains("not enough free space"), refused)
        XCTAssertEqual(try tight.recctlJSON(RecordingList.self, "list").total, 0, "a refused import stores nothing")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tight.dataDir.appendingPathComponent(".uploads").path), [])
        // One that leaves the room is taken.
        let taken = try chunked(small, "small.wav")
        XCTAssertTrue(taken.hasSuffix("\n201"), taken)
    }

    /// The import's `name` rule as the OpenAPI document states it (pattern and lengths) is the rule
    /// recd enforces: a name the document allows is never refused as a name, and one it does not
    /// allow is 422. (schemathesis found a schema-valid name refused: a control character.)
    func testTheDocumentStatesTheNameRuleRecdEnforces() throws {
        let (code, yaml) = try daemon.curl("GET", "/v1/openapi.yaml")
        XCTAssertEqual(code, 200)
        let operation = try XCTUnwrap(yaml.range(of: "  /v1/recordings/import:"))
        let parameter = try XCTUnwrap(yaml.range(of: "- name: name\n", range: operation.upperBound..<yaml.endIndex))
        let rest = yaml[parameter.upperBound...]
        let schema = rest[..<(rest.range(of: "- name: ")?.lowerBound ?? rest.endIndex)]   // up to the next parameter
        func value(_ key: String) throws -> String {
            let line = try XCTUnwrap(schema.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(key + ": ") })
            return String(line.trimmingCharacters(in: .whitespaces).dropFirst(key.count + 2))
        }
        let pattern = try value("pattern").trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        let minLength = try XCTUnwrap(Int(try value("minLength"))), maxLength = try XCTUnwrap(Int(try value("maxLength")))
        let regex = try NSRegularExpression(pattern: pattern)
        func documentAllows(_ name: String) -> Bool {
            let scalars = name.unicodeScalars.count   // JSON Schema's lengths count code points
            return (minLength...maxLength).contains(scalars)
                && regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) != nil
        }
        let names = ["memo.wav", "ünï côdé.wav", "🇩🇪 memo.wav", " spaced .wav", "a/b.wav", "tab\there.wav", "bell\u{7}.wav",
                     "line\nbreak.wav", "del\u{7F}.wav", "nel\u{85}.wav", "c1\u{9F}.wav", "ls\u{2028}.wav",
                     String(repeating: "n", count: 255), String(repeating: "n", count: 256)]
        for name in names {
            let query = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let (got, body) = try daemon.curl("POST", "/v1/recordings/import?name=\(query)", body: "not media")
            let refusedAsName = got == 422 && body.contains("invalid_value") && body.contains("name")
            XCTAssertEqual(documentAllows(name), !refusedAsName, "\(name.debugDescription): recd answered \(got) \(body)")
            XCTAssertTrue(refusedAsName || got == 415, "\(name.debugDescription): \(got) \(body)")
        }
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        try assertNothingLeftBehind()
    }

    /// recd killed while an import is still arriving: after the restart nothing of it is left.
    func testAnImportInterruptedByAKillLeavesNothing() throws {
        let big = try make("long.wav", tone(440, seconds: 60))   // 5.8 MB, sent at 1 MB/s
        let upload = Process()
        upload.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        upload.arguments = ["-s", "-o", "/dev/null", "--limit-rate", "1M", "--unix-socket", daemon.socket, "-X", "POST",
                            "--data-binary", "@" + big, "http://recd/v1/recordings/import?name=long.wav"]
        try upload.run()
        Thread.sleep(forTimeInterval: 2)
        let partial = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent(".uploads").path)
        XCTAssertEqual(partial.count, 1, "the upload is not being received into .uploads/")
        daemon.kill9()
        upload.waitUntilExit()
        try daemon.start()
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        try assertNothingLeftBehind()
        let recovery = try XCTUnwrap(try daemon.recctlJSON(DaemonStatus.self, "status").recovery)
        XCTAssertEqual(recovery.temporaryFilesRemoved.count, 1, "\(recovery)")
    }
}
