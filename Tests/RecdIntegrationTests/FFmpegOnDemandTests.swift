// FFmpeg on demand (issue 17, memory): recd maps none of FFmpeg's libraries (and the ~130 Debian's
// libavcodec/libavformat pull in) until it first needs one, and a machine whose FFmpeg cannot be
// loaded gets an error that names it at that moment, not a daemon that aborts.
import Foundation
import RecdAPI
import XCTest

final class FFmpegOnDemandTests: DaemonTestCase {
    /// Closed 3 s after the last FFmpeg object went (30 s by default).
    override func setUpWithError() throws {
        pulse = try PulseAudioServer()
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_FFMPEG_IDLE_UNLOAD": "3"]) { $1 },
                            extraArgs: ["--playback-device", "pulse:speaker"])
        try daemon.start()
    }

    func ffmpegMapped(_ pid: Int32) throws -> Bool { try maps(pid).contains("libavformat.so") }

    /// Polls until FFmpeg is mapped (or not) in recd, for at most `timeout` seconds.
    func waitFor(mapped: Bool, _ pid: Int32, timeout: Double = 20) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while try ffmpegMapped(pid) != mapped && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        return try ffmpegMapped(pid) == mapped
    }

    /// /proc/PID/maps (read by cat: proc files have no size, and Foundation reads a file by its size).
    func maps(_ pid: Int32) throws -> String {
        let r = try Tools.run("cat", ["/proc/\(pid)/maps"])
        XCTAssertTrue(r.status == 0 && r.stdout.contains("/recd"), "maps of recd (\(pid)): \(r.stderr)")
        return r.stdout
    }

    func wav(in dir: URL, hz: Int = 440, seconds: Int = 1) throws -> String {
        let path = dir.appendingPathComponent("memo-\(UUID().uuidString.prefix(6)).wav").path
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(hz):duration=\(seconds)", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return path
    }

    func testFFmpegIsLoadedAtTheFirstImportNotAtStartUp() throws {
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        // Start-up, status and listings need no FFmpeg. (A new FFmpeg call in Media without a
        // trampoline would be linked to the library itself and fail here: scripts/gen-ffmpeg-trampolines.py.)
        XCTAssertEqual(try daemon.recctl("status").status, 0)
        XCTAssertEqual(try daemon.recctl("list").status, 0)
        for lib in ["libavformat.so", "libavcodec.so", "libavutil.so", "libswresample.so", "libswscale.so"] {
            XCTAssertFalse(try maps(pid).contains(lib), "\(lib) is mapped before anything needed it")
        }
        let r = try daemon.recctlJSON(Recording.self, "import", try wav(in: daemon.dir))
        XCTAssertEqual(r.state, .ready)
        XCTAssertEqual(try XCTUnwrap(r.duration), 1.0, accuracy: 0.05)
        for lib in ["libavformat.so", "libavcodec.so", "libswresample.so"] {
            XCTAssertTrue(try maps(pid).contains(lib), "\(lib) should be loaded by the import")
        }
        // Closed once nothing used them for the idle time; loaded again by the next import.
        XCTAssertTrue(try waitFor(mapped: false, pid), "FFmpeg should be closed 3 s after the import\n\(daemon.log)")
        let again = try daemon.recctl(["--json", "import", try wav(in: daemon.dir, hz: 880), "--title", "Second"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").recordings.count, 2)
    }

    func testABadIdleUnloadSettingIsRefusedAndNeverKeepsTheLibraries() throws {
        for bad in ["soon", "-1", "100000"] {
            let r = try Tools.run(Tools.recd, ["--data-dir", daemon.dir.appendingPathComponent("other").path,
                                               "--socket", daemon.dir.appendingPathComponent("other.sock").path, "--ffmpeg-idle-unload=\(bad)"])
            XCTAssertNotEqual(r.status, 0)
            XCTAssertTrue(r.stderr.contains("--ffmpeg-idle-unload must be never or seconds from 0 to 86400"), r.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.dir.appendingPathComponent("other").path), "a refused start made nothing")
        // `never`: loaded at the first use and kept (the option beats the environment's 3 s).
        let other = try Daemon(environment: pulse.environment.merging(["RECD_FFMPEG_IDLE_UNLOAD": "3"]) { $1 },
                               extraArgs: ["--ffmpeg-idle-unload", "never"])
        try other.start()
        defer { other.cleanUp() }
        let pid = try XCTUnwrap(other.process?.processIdentifier)
        XCTAssertEqual(try other.recctlJSON(Recording.self, "import", try wav(in: other.dir)).state, .ready)
        Thread.sleep(forTimeInterval: 4.5)
        XCTAssertTrue(try ffmpegMapped(pid), "--ffmpeg-idle-unload never keeps FFmpeg loaded")
    }

    /// A playback keeps FFmpeg loaded however long it is paused, and decodes after a reload.
    func testPlaybackAfterAnUnloadDecodesAndAPauseKeepsTheLibraries() throws {
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        let r = try daemon.recctlJSON(Recording.self, "import", try wav(in: daemon.dir, hz: 523, seconds: 4))
        XCTAssertTrue(try waitFor(mapped: false, pid), "FFmpeg should be closed 3 s after the import\n\(daemon.log)")
        let play = try daemon.recctl("play", r.id.uuidString)
        XCTAssertEqual(play.status, 0, play.stderr)
        XCTAssertTrue(try ffmpegMapped(pid))
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try daemon.recctl("playback", "pause").status, 0)
        Thread.sleep(forTimeInterval: 4.5)   // longer than the idle time: the paused decoder holds them
        XCTAssertTrue(try ffmpegMapped(pid), "a paused playback's decoder must keep FFmpeg loaded")
        XCTAssertEqual(try daemon.recctl("playback", "resume").status, 0)
        let deadline = Date().addingTimeInterval(15)
        var played = false
        while !played && Date() < deadline {
            played = try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).playCount == 1
            if !played { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(played, "the playback should finish and count\n\(daemon.log)")
        XCTAssertTrue(try waitFor(mapped: false, pid), "closed again after the playback\n\(daemon.log)")
    }
}

/// recd in its own mount namespace where libavformat is an empty file: the import is refused with
/// an error naming the library and dlopen's reason, nothing is left behind, and the daemon keeps serving.
final class FFmpegMissingTests: XCTestCase {
    func testAnImportWithoutLoadableFFmpegIsAClearErrorAndTheDaemonLivesOn() throws {
        try XCTSkipIf(Tools.which("unshare") == nil || getuid() != 0, "needs unshare and root (a private mount namespace)")
        let real = try XCTUnwrap(Tools.run("sh", ["-c", "readlink -f \"$(ldconfig -p | awk '/libavformat\\.so\\.[0-9]+ .*x86-64/ {print $NF; exit}')\""])
                                    .stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        try XCTSkipIf(real.isEmpty || !FileManager.default.fileExists(atPath: real), "libavformat not found through ldconfig")
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-noffmpeg-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let empty = dir.appendingPathComponent("empty.so")
        XCTAssertTrue(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        let socket = dir.appendingPathComponent("recd.sock").path, data = dir.appendingPathComponent("data")
        let log = dir.appendingPathComponent("recd.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let recd = Process()
        recd.executableURL = URL(fileURLWithPath: Tools.which("unshare")!)
        recd.arguments = ["-m", "--propagation", "private", "sh", "-c",
                          "mount --bind \(empty.path) \(real) || exit 90; exec \(Tools.recd) --data-dir \(data.path) --socket \(socket) --capture-device null --playback-device null --log-level debug"]
        recd.standardOutput = try FileHandle(forWritingTo: log)
        recd.standardError = try FileHandle(forWritingTo: log)
        try recd.run()
        defer { recd.terminate(); recd.waitUntilExit() }
        let daemonLog = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        var up = false
        for _ in 0..<100 where !up {
            up = (try? Tools.run(Tools.recctl, ["--socket", socket, "status"]))?.status == 0
            if !up { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(up, "recd starts without FFmpeg: \(daemonLog())")

        let wav = dir.appendingPathComponent("memo.wav").path
        XCTAssertEqual(try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=duration=1", wav]).status, 0)
        let refused = try Tools.run(Tools.recctl, ["--socket", socket, "import", wav])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("FFmpeg's libraries could not be loaded") && refused.stderr.contains("libavformat.so"),
                      "the error names FFmpeg and the library: \(refused.stderr)")
        // Still serving; nothing was added or left in the upload area.
        let list = try Tools.run(Tools.recctl, ["--socket", socket, "--json", "list"])
        XCTAssertEqual(list.status, 0, "\(list.stderr)\n\(daemonLog())")
        XCTAssertEqual(try APIJSON.decoder().decode(RecordingList.self, from: list.stdoutData).recordings.count, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent(".uploads").path), [])
        XCTAssertTrue(recd.isRunning, daemonLog())
    }
}
