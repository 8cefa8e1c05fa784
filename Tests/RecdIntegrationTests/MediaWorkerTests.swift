// FFmpeg in a worker (issue 17, memory): recd never maps FFmpeg's libraries (nor the ~130 Debian's
// libavcodec/libavformat pull in; it links none of them): a media worker process (`recd-media`) does the decoding,
// encoding, muxing and probing, started at the first need and ended when idle. A worker that dies
// is a clear error of the one operation it was doing; a recd that dies takes its workers with it.
import Foundation
import RecdAPI
import XCTest

final class MediaWorkerTests: DaemonTestCase {
    /// Workers end 3 s after their last use (30 s by default).
    override func setUpWithError() throws {
        pulse = try PulseAudioServer()
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_FFMPEG_IDLE_UNLOAD": "3"]) { $1 },
                            extraArgs: ["--playback-device", "pulse:speaker"])
        try daemon.start()
    }

    var recdPID: Int32 { get throws { try XCTUnwrap(daemon.process?.processIdentifier) } }

    /// The media workers of `pid`: its children that run recd-media (at `priority` only, when given:
    /// the loudness pass's run at `background`, and start by themselves after an import or a trim).
    func workers(of pid: Int32, priority: String? = nil) throws -> [Int32] {
        let r = try Tools.run("ps", ["-o", "pid=,args=", "--ppid", "\(pid)"])
        return r.stdout.split(separator: "\n").filter { $0.contains("recd-media ") }
            .filter { line in priority.map { line.split(separator: " ").contains(Substring($0)) } ?? true }
            .compactMap { Int32($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }
    }

    /// The worker of `pid` that has a recording open (its job's), itself or (a take's worker) in the
    /// process it forked for the job; not one waiting beside it.
    func busyWorker(of pid: Int32) throws -> Int32? {
        func hasRecordingOpen(_ process: String) -> Bool {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process)/fd")) ?? []
            return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process)/fd/\($0)"))?.contains("/Recordings/") == true }
        }
        return try workers(of: pid).first { worker in
            let jobs = (try? Tools.run("ps", ["-o", "pid=", "--ppid", "\(worker)"]).stdout.split(separator: "\n")) ?? []
            return hasRecordingOpen("\(worker)") || jobs.contains { hasRecordingOpen($0.trimmingCharacters(in: .whitespaces)) }
        }
    }

    /// Polls until `pid` has `count` workers (at `priority`, when given), for at most `timeout` seconds.
    func waitFor(workers count: Int, of pid: Int32, priority: String? = nil, timeout: Double = 20) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while try workers(of: pid, priority: priority).count != count && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        return try workers(of: pid, priority: priority).count == count
    }

    /// /proc/PID/maps (read by cat: proc files have no size, and Foundation reads a file by its size).
    func maps(_ pid: Int32) throws -> String {
        let r = try Tools.run("cat", ["/proc/\(pid)/maps"])
        XCTAssertEqual(r.status, 0, "maps of \(pid): \(r.stderr)")
        return r.stdout
    }

    func assertNoFFmpegMapped(_ pid: Int32, _ when: String, line: UInt = #line) throws {
        let m = try maps(pid)
        for lib in ["libavformat.so", "libavcodec.so", "libavutil.so", "libswresample.so", "libswscale.so"] {
            XCTAssertFalse(m.contains(lib), "\(lib) is mapped in recd \(when)", line: line)
        }
    }

    func wav(in dir: URL, hz: Int = 440, seconds: Int = 1) throws -> String {
        let path = dir.appendingPathComponent("memo-\(UUID().uuidString.prefix(6)).wav").path
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(hz):duration=\(seconds)", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return path
    }

    func playback() throws -> PlaybackStatus { try daemon.recctlJSON(PlaybackStatus.self, "playback") }

    func testAnImportRunsFFmpegInAWorkerThatEndsWhenIdleAndRecdNeverMapsIt() throws {
        let pid = try recdPID
        // Start-up, status and listings need no worker.
        XCTAssertEqual(try daemon.recctl("status").status, 0)
        XCTAssertEqual(try daemon.recctl("list").status, 0)
        XCTAssertEqual(try workers(of: pid), [], "no worker before anything needed one")
        try assertNoFFmpegMapped(pid, "at start-up")
        let r = try daemon.recctlJSON(Recording.self, "import", try wav(in: daemon.dir))
        XCTAssertEqual(r.state, .ready)
        XCTAssertEqual(try XCTUnwrap(r.duration), 1.0, accuracy: 0.05)
        try assertNoFFmpegMapped(pid, "after an import")
        // The import's worker read an upload: it ended with the import, never lent again. (A
        // background worker of the loudness pass may start beside it: not counted.)
        XCTAssertTrue(try waitFor(workers: 0, of: pid, priority: "normal", timeout: 1.5), "the worker that read the upload ended with it, not at the idle time (3 s)\n\(daemon.log)")
        // A trim (a job on the library's files) is done by a process that a library worker forks
        // for it: that process ends with the trim (and is reaped: no zombie left), the library
        // worker is kept for the next job, and ends at the idle time (3 s). The trim wakes the
        // loudness pass, whose background worker measures the cut at idle priority: on a busy
        // machine it outlives the 1.5 s (seen in CI), so it is not counted here, and the end waits for it.
        let cut = try daemon.recctlJSON(Recording.self, "trim", r.id.uuidString, "--start", "0.1", "--as-new")
        XCTAssertEqual(cut.source, .import, "a cut of an import was made by the import, as its original")
        let kept = try workers(of: pid, priority: "normal")
        XCTAssertEqual(kept.count, 1, "the library worker is kept after the trim\n\(daemon.log)")
        let library = try XCTUnwrap(kept.first)
        XCTAssertTrue(try Tools.run("cat", ["/proc/\(library)/cmdline"]).stdout.contains("--library"))
        let jobsDeadline = Date().addingTimeInterval(2)
        while try !Tools.run("ps", ["-o", "pid=", "--ppid", "\(library)"]).stdout.isEmpty && Date() < jobsDeadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(try Tools.run("ps", ["-o", "pid=", "--ppid", "\(library)"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines), "",
                       "the trim's job process ended with the trim")
        XCTAssertTrue(try waitFor(workers: 0, of: pid, priority: "normal", timeout: 6), "the library worker ended at the idle time (3 s)\n\(daemon.log)")
        let again = try daemon.recctl(["--json", "import", try wav(in: daemon.dir, hz: 880), "--title", "Second"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").recordings.count, 3)
        try assertNoFFmpegMapped(pid, "after two imports")
        XCTAssertTrue(try waitFor(workers: 0, of: pid), "the loudness pass's worker ended with its measurements\n\(daemon.log)")
    }

    func testABadIdleSettingIsRefusedAndNeverKeepsTheWorker() throws {
        for bad in ["soon", "-1", "100000"] {
            let r = try Tools.run(Tools.recd, ["--data-dir", daemon.dir.appendingPathComponent("other").path,
                                               "--socket", daemon.dir.appendingPathComponent("other.sock").path, "--ffmpeg-idle-unload=\(bad)"])
            XCTAssertNotEqual(r.status, 0)
            XCTAssertTrue(r.stderr.contains("--ffmpeg-idle-unload must be never or seconds from 0 to 86400"), r.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.dir.appendingPathComponent("other").path), "a refused start made nothing")
        // `never`: started at the first use and kept (the option beats the environment's 3 s).
        let other = try Daemon(environment: pulse.environment.merging(["RECD_FFMPEG_IDLE_UNLOAD": "3"]) { $1 },
                               extraArgs: ["--ffmpeg-idle-unload", "never"])
        try other.start()
        defer { other.cleanUp() }
        let pid = try XCTUnwrap(other.process?.processIdentifier)
        try pulse.play(try Tones.sine())
        XCTAssertEqual(try other.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 1.2)
        XCTAssertEqual(try other.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording?.state, .ready)
        Thread.sleep(forTimeInterval: 4.5)
        // The take's worker (a job's ends with its job).
        XCTAssertFalse(try workers(of: pid).isEmpty, "--ffmpeg-idle-unload never keeps the worker")
    }

    /// recd and its worker are one version: recd passes its own to each worker it starts, and a worker
    /// of another version (the package upgraded under a running recd: here the real recd-media, told
    /// another version by a wrapper) refuses to serve; the job fails saying to restart recd.
    func testAWorkerOfAnotherVersionRefusesAndTheJobSaysRestartRecd() throws {
        let wrapper = daemon.dir.appendingPathComponent("upgraded-recd-media").path
        let worker = URL(fileURLWithPath: Tools.recd).deletingLastPathComponent().appendingPathComponent("recd-media").path
        try Data("#!/bin/bash\npid=$1; shift 2\nexec \(worker) \"$pid\" 9.9.9 \"$@\"\n".utf8).write(to: URL(fileURLWithPath: wrapper))
        chmod(wrapper, 0o755)
        let other = try Daemon(environment: pulse.environment.merging(["RECD_MEDIA_WORKER": wrapper]) { $1 })
        try other.start()
        defer { other.cleanUp() }
        let r = try other.recctl("import", try wav(in: other.dir))
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("restart recd"), r.stderr)
        XCTAssertTrue(other.log.contains("recd-media \(RecdVersion.current), recd 9.9.9: restart recd"), other.log)
        XCTAssertEqual(try other.recctlJSON(RecordingList.self, "list").total, 0)
    }

    /// A paused playback keeps its worker however long; it decodes on after the pause, and ends after.
    func testAPausedPlaybackKeepsItsWorkerAndRecdNeverMapsFFmpeg() throws {
        let pid = try recdPID
        let r = try daemon.recctlJSON(Recording.self, "import", try wav(in: daemon.dir, hz: 523, seconds: 4))
        XCTAssertTrue(try waitFor(workers: 0, of: pid), "the import's worker should end after 3 s\n\(daemon.log)")
        let play = try daemon.recctl("play", r.id.uuidString)
        XCTAssertEqual(play.status, 0, play.stderr)
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try daemon.recctl("playback", "pause").status, 0)
        Thread.sleep(forTimeInterval: 4.5)   // longer than the idle time: the paused decoder holds it
        XCTAssertEqual(try workers(of: pid).count, 1, "a paused playback's decoder keeps its worker")
        // It is where FFmpeg is, under its own name.
        let worker = try XCTUnwrap(try workers(of: pid).first)
        XCTAssertTrue(try maps(worker).contains("libavformat.so"), "the worker has FFmpeg")
        XCTAssertEqual(try Tools.run("cat", ["/proc/\(worker)/comm"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines), "recd-media")
        XCTAssertEqual(try daemon.recctl("playback", "resume").status, 0)
        let deadline = Date().addingTimeInterval(15)
        var played = false
        while !played && Date() < deadline {
            played = try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).playCount == 1
            if !played { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(played, "the playback should finish and count\n\(daemon.log)")
        try assertNoFFmpegMapped(pid, "after a playback")
        XCTAssertTrue(try waitFor(workers: 0, of: pid), "ended again after the playback\n\(daemon.log)")
    }

    /// The decoder's process killed under a playback: that playback fails with a reason that says so
    /// (and counts, as every ended playback of a saved recording does); recd serves on and the next
    /// playback gets a new worker.
    func testAWorkerKilledUnderAPlaybackFailsOnlyThatPlayback() throws {
        let pid = try recdPID
        let r = try daemon.recctlJSON(Recording.self, "import", try wav(in: daemon.dir, hz: 660, seconds: 6))
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        Thread.sleep(forTimeInterval: 0.5)
        let worker = try XCTUnwrap(try busyWorker(of: pid))
        kill(worker, SIGKILL)
        let deadline = Date().addingTimeInterval(10)
        var ended: PlaybackEnded?
        while ended == nil && Date() < deadline {
            let s = try playback()
            if s.playback == nil { ended = s.lastEnded } else { Thread.sleep(forTimeInterval: 0.1) }
        }
        let end = try XCTUnwrap(ended, "the playback should end when its worker dies\n\(daemon.log)")
        XCTAssertEqual(end.reason, .failed)
        XCTAssertEqual(end.counted, true)
        XCTAssertTrue(end.error?.contains("media worker (pid \(worker)) was killed by signal 9") == true, "\(end.error ?? "no error")")
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).playCount, 1)
        // Reaped (no zombie) and replaced by a new worker for the next play.
        XCTAssertFalse(try Tools.run("ps", ["-o", "pid=", "--ppid", "\(pid)"]).stdout.contains("\(worker)"), "the dead worker is reaped")
        let again = try daemon.recctl("play", r.id.uuidString)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertNotEqual(try busyWorker(of: pid), worker)
        XCTAssertEqual(try daemon.recctl("playback", "stop").status, 0)
    }

    /// The encoder's process killed under a recording: the recording ends by a fault, as on a full disk,
    /// and what reached the file is kept (finished by a new worker).
    func testAWorkerKilledUnderARecordingEndsItWithWhatWasWritten() throws {
        let pid = try recdPID
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start", "--title", "Cut")
        Thread.sleep(forTimeInterval: 2.6)   // two whole fragments (one a second) in the file
        let worker = try XCTUnwrap(try busyWorker(of: pid))
        kill(worker, SIGKILL)
        let deadline = Date().addingTimeInterval(15)
        var r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        while r.state == .recording && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        }
        XCTAssertEqual(r.state, .pending, "ended by the fault, kept for preview\n\(daemon.log)")
        let status = try daemon.recctlJSON(DaemonStatus.self, "status")
        XCTAssertTrue(status.lastFault?.reason.contains("media worker (pid \(worker))") == true, "\(String(describing: status.lastFault))")
        let duration = try XCTUnwrap(r.duration)
        XCTAssertGreaterThanOrEqual(duration, 1.9, "the fragments written before the kill are kept")
        XCTAssertEqual(try XCTUnwrap(try Probe.audio(daemon.path(of: r)).duration), duration, accuracy: 0.05)
        XCTAssertEqual(try AudioAnalysis.of(daemon.path(of: r)).frequency, 1000, accuracy: 10)
        try assertNoFFmpegMapped(pid, "after a recording")
    }

    /// A recording's writer gives its worker back when the file is finished, so the finalizing
    /// remux and probe at stop run in that same worker: no second worker is started (~40 ms and
    /// ~50 MB each), and the one kept idle afterwards is the recording's.
    func testAStoppedRecordingIsFinalizedInItsOwnWorker() throws {
        let pid = try recdPID
        try pulse.play(try Tones.sine())
        for take in 1...2 {
            XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
            Thread.sleep(forTimeInterval: 1.2)
            let during = try workers(of: pid)
            XCTAssertEqual(during.count, 1, "take \(take): one worker writes the recording\n\(daemon.log)")
            let stop = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save")
            XCTAssertEqual(stop.recording?.state, .ready)
            XCTAssertEqual(try workers(of: pid), during, "take \(take): the finalizing remux reused the recording's worker\n\(daemon.log)")
        }
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").recordings.count, 2)
    }

    /// kill -9 of recd takes its workers with it (PR_SET_PDEATHSIG): none goes on writing a file the
    /// next start recovers.
    func testKillingRecdEndsItsWorkers() throws {
        let pid = try recdPID
        try pulse.play(try Tones.sine())
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 2.5)   // whole fragments in the file, for the recovery to keep
        let worker = try XCTUnwrap(try workers(of: pid).first)
        daemon.kill9()
        let deadline = Date().addingTimeInterval(5)
        while kill(worker, 0) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertNotEqual(kill(worker, 0), 0, "the worker \(worker) outlived recd")
        try daemon.start()
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").recordings.count, 1, daemon.log)
    }
}

/// recd in its own mount namespace where libavformat is an empty file: recd starts (it links no
/// FFmpeg), the import is refused with an error saying the media worker could not load a library
/// (the loader's own message, naming it, is in the log), nothing is left behind, and the daemon keeps serving.
final class FFmpegMissingTests: XCTestCase {
    func testAnImportWithoutLoadableFFmpegIsAClearErrorAndTheDaemonLivesOn() throws {
        try Skip.if(Tools.which("unshare") == nil || getuid() != 0, "needs unshare and root (a private mount namespace)")
        let real = try XCTUnwrap(Tools.run("sh", ["-c", "readlink -f \"$(ldconfig -p | awk '/libavformat\\.so\\.[0-9]+ .*x86-64/ {print $NF; exit}')\""])
                                    .stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        try Skip.if(real.isEmpty || !FileManager.default.fileExists(atPath: real), "libavformat not found through ldconfig")
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
        XCTAssertTrue(refused.stderr.contains("could not start") && refused.stderr.contains("libavformat"),
                      "the error says the worker could not load FFmpeg: \(refused.stderr)")
        XCTAssertTrue(daemonLog().contains("libavformat.so"), "the loader's message is in the log: \(daemonLog())")
        // Still serving; nothing was added or left in the upload area.
        let list = try Tools.run(Tools.recctl, ["--socket", socket, "--json", "list"])
        XCTAssertEqual(list.status, 0, "\(list.stderr)\n\(daemonLog())")
        XCTAssertEqual(try APIJSON.decoder().decode(RecordingList.self, from: list.stdoutData).recordings.count, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent(".uploads").path), [])
        XCTAssertTrue(recd.isRunning, daemonLog())
    }
}
