// Imports of hostile bytes (issue 35 §1), through the real daemon and its real media workers: an
// upload that names other files (a playlist, a manifest, a concat list) opens nothing, whatever
// it names; a worker that stalls is stopped, and edits go on meanwhile.
import Foundation
import RecdAPI
import XCTest

final class HostileImportTests: XCTestCase {
    var pulse: PulseAudioServer!
    var daemon: Daemon!
    var work: URL { daemon.dir.appendingPathComponent("uploads-from-elsewhere") }

    override func setUpWithError() throws {
        pulse = try PulseAudioServer()
        // A stall limit of 3 s (60 by default) for the stalled-worker test.
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_MEDIA_STALL_SECONDS": "3"]) { $1 })
        try daemon.start()
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() {
        daemon?.cleanUp()
        pulse?.stop()
    }

    func ffmpeg(_ path: String, _ args: [String]) throws {
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y"] + args + [path])
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    /// POSTs `file` as an import named `name`: the status and the body.
    func post(_ file: String, name: String) throws -> (Int, String) {
        let r = try Tools.run("curl", ["-s", "--max-time", "60", "-w", "\n%{http_code}", "--unix-socket", daemon.socket, "-X", "POST",
                                       "--data-binary", "@" + file, "http://recd/v1/recordings/import?name=" + name])
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    func assertNothingKept(_ count: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, count, file: file, line: line)
        let uploads = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent(".uploads").path)
        XCTAssertEqual(uploads, [], file: file, line: line)
    }

    /// The review's exploit and its kin: an HLS playlist naming a file by absolute path or file://
    /// URL, a DASH manifest with a file:// BaseURL, an ffconcat list, a playlist naming a FIFO (which
    /// blocked the workers for minutes), and one naming a recording of the library itself: each is
    /// refused as a format that names other files (415), nothing is kept, and the named files were
    /// not opened (the FIFO's writer never sees a reader).
    func testUploadsThatNameOtherFilesAreRefusedAndOpenNothing() throws {
        let secret = daemon.dir.appendingPathComponent("private")
        try FileManager.default.createDirectory(at: secret, withIntermediateDirectories: true)
        let hidden = secret.appendingPathComponent("diary.m4a").path
        try ffmpeg(hidden, ["-f", "lavfi", "-i", "sine=frequency=500:duration=2", "-c:a", "aac"])
        let fifo = secret.appendingPathComponent("pipe.aac").path
        XCTAssertEqual(mkfifo(fifo, 0o666), 0)
        // A recording of the library, as a playlist could name it.
        let ok = work.appendingPathComponent("ok.wav").path
        try ffmpeg(ok, ["-f", "lavfi", "-i", "sine=duration=1"])
        let first = try daemon.recctlJSON(Recording.self, "import", ok)
        let libraryFile = daemon.dataDir.appendingPathComponent(first.file).path

        func hls(_ entry: String) -> String {
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:2.0,\n\(entry)\n#EXT-X-ENDLIST\n"
        }
        let dash = """
            <?xml version="1.0" encoding="utf-8"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT2S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
              <BaseURL>file://\(secret.path)/</BaseURL>
              <Period><AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="64000" codecs="mp4a.40.2" audioSamplingRate="44100">
                <BaseURL>diary.m4a</BaseURL>
              </Representation></AdaptationSet></Period>
            </MPD>
            """
        let cases: [(name: String, body: String, format: String)] = [
            ("playlist.m3u8", hls(hidden), "(hls)"),
            ("url.m3u8", hls("file://" + hidden), "(hls)"),
            ("fifo.m3u8", hls(fifo), "(hls)"),
            ("library.m3u8", hls(libraryFile), "(hls)"),
            ("manifest.mpd", dash, "(dash)"),
            ("list.ffconcat", "ffconcat version 1.0\nfile \(hidden)\n", "(concat)"),
        ]
        for c in cases {
            let path = work.appendingPathComponent(c.name).path
            try Data(c.body.utf8).write(to: URL(fileURLWithPath: path))
            let (status, body) = try post(path, name: c.name)
            XCTAssertEqual(status, 415, "\(c.name): \(body)")
            XCTAssertTrue(body.contains("unsupported_media") && body.contains(c.format) && body.contains("names other files"),
                          "\(c.name): \(body)")
            XCTAssertFalse(body.contains("diary"), "\(c.name): nothing of the named file is told: \(body)")
            // recctl says the same.
            let r = try daemon.recctl("import", path)
            XCTAssertNotEqual(r.status, 0)
            XCTAssertTrue(r.stderr.contains("cannot import '\(c.name)': it is ") && r.stderr.contains("names other files"), r.stderr)
        }
        try assertNothingKept(1)
        // The FIFO was never opened: a writer opening it without blocking finds no reader (ENXIO).
        let writer = open(fifo, O_WRONLY | O_NONBLOCK)
        XCTAssertEqual(writer, -1)
        XCTAssertEqual(errno, ENXIO, "no process holds the FIFO open for reading")
        // The daemon and its workers go on: a real file still imports.
        let next = work.appendingPathComponent("next.wav").path
        try ffmpeg(next, ["-f", "lavfi", "-i", "sine=frequency=880:duration=1"])
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "import", next).state, .ready)
    }

    /// The media workers of recd: its children running recd-media.
    func workers() throws -> [Int32] {
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        let r = try Tools.run("ps", ["-o", "pid=,args=", "--ppid", "\(pid)"])
        return r.stdout.split(separator: "\n").filter { $0.contains("recd-media ") }
            .compactMap { Int32($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }
    }

    /// A worker that stops answering (stopped here with SIGSTOP, as a job stuck in FFmpeg on a hostile
    /// file or a hung disk would be) holds its import only until the stall limit (3 s here), also while
    /// recd is still writing the upload's bytes to it (a stopped worker stops reading: recd's write has
    /// the same deadline as its read): the worker is killed, the import fails with a clear error and
    /// keeps nothing; an edit and a delete sent while it hangs are answered before it ends; the next
    /// import gets a new worker. No worker is idle after an import: one that read an upload ends with it.
    func testAStalledWorkerIsStoppedAndEditsAreAnsweredMeanwhile() throws {
        let a = work.appendingPathComponent("a.wav").path, b = work.appendingPathComponent("b.wav").path
        let c = work.appendingPathComponent("c.wav").path
        try ffmpeg(a, ["-f", "lavfi", "-i", "sine=frequency=300:duration=1"])
        // 30 s of stereo: 5.8 MB, sent at 1 MB/s, so the upload is still coming when its worker stops.
        try ffmpeg(b, ["-f", "lavfi", "-i", "sine=frequency=600:duration=30", "-ac", "2"])
        try ffmpeg(c, ["-f", "lavfi", "-i", "sine=frequency=900:duration=1"])
        let first = try daemon.recctlJSON(Recording.self, "import", a)
        let other = try daemon.recctlJSON(Recording.self, "import", c, "--title", "Other")
        let ending = Date().addingTimeInterval(1.5)   // ended by the pool's thread just after the reply
        while try !workers().isEmpty && Date() < ending { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(try workers(), [], "the workers that read the uploads ended with their imports\n\(daemon.log)")

        let hanging = Process()
        hanging.executableURL = URL(fileURLWithPath: try XCTUnwrap(Tools.which("curl")))
        hanging.arguments = ["-s", "--max-time", "60", "--limit-rate", "1M", "-w", "\n%{http_code}", "--unix-socket", daemon.socket,
                             "-X", "POST", "--data-binary", "@" + b, "http://recd/v1/recordings/import?name=b.wav"]
        let output = Pipe()
        hanging.standardOutput = output
        try hanging.run()
        // The worker that hashes the upload starts at its first bytes: stop it as soon as it is there.
        var stopped: [Int32] = []
        let appear = Date().addingTimeInterval(10)
        while stopped.isEmpty && Date() < appear {
            stopped = try workers()
            if stopped.isEmpty { Thread.sleep(forTimeInterval: 0.02) }
        }
        for pid in stopped { kill(pid, SIGSTOP) }
        defer { for pid in stopped { kill(pid, SIGKILL) } }
        XCTAssertFalse(stopped.isEmpty, "a worker hashes the upload as it comes\n\(daemon.log)")
        let stoppedAt = Date()
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertTrue(hanging.isRunning, "the import waits on its stopped worker")
        let edit = try daemon.recctl("edit", String(first.id.uuidString.prefix(8)), "--title", "Edited while an import hangs")
        XCTAssertEqual(edit.status, 0, edit.stderr)
        let delete = try daemon.recctl("delete", String(other.id.uuidString.prefix(8)), "--yes")
        XCTAssertEqual(delete.status, 0, delete.stderr)
        XCTAssertTrue(hanging.isRunning, "the edit and the delete were answered while the import still hung")

        hanging.waitUntilExit()
        let waited = Date().timeIntervalSince(stoppedAt)
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let status = Int(said.split(separator: "\n").last ?? "") ?? 0
        XCTAssertTrue((500..<600).contains(status), said)
        XCTAssertTrue(said.contains("gave no answer for 3 s") && said.contains("was stopped"), said)
        XCTAssertLessThan(waited, 10, "the import failed at the stall limit (3 s), not when the worker was killed by the test")
        for pid in stopped { XCTAssertNotEqual(kill(pid, 0), 0, "the stalled worker \(pid) was killed and reaped") }
        try assertNothingKept(1)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", first.id.uuidString).title, "Edited while an import hangs")
        // A new worker for the next import.
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "import", c, "--title", "After").state, .ready)
    }
}
