// The daemon's life: not running, missing devices, a second instance, kill -9 mid-recording.
import Foundation
import RecdAPI
import XCTest

final class DaemonTests: XCTestCase {
    func testClientExitsThreeWhenTheDaemonIsNotRunning() throws {
        let socket = NSTemporaryDirectory() + "recd-absent-\(UUID().uuidString.prefix(6))/recd.sock"
        let r = try Tools.run(Tools.recctl, ["--socket", socket, "status"])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains(socket), r.stderr)
        XCTAssertTrue(r.stderr.contains("Start it with"), r.stderr)
        // The variable works the same, and so does any command.
        var env = ProcessInfo.processInfo.environment
        env["RECD_SOCKET"] = socket
        let list = try Tools.run(Tools.recctl, ["list"], environment: env)
        XCTAssertEqual(list.status, 3)
        XCTAssertTrue(list.stderr.contains(socket), list.stderr)
        // A socket file with nobody behind it (a daemon killed long ago) is "not running" too.
        let stale = NSTemporaryDirectory() + "recd-stale-\(UUID().uuidString.prefix(6)).sock"
        _ = try Tools.run("python3", ["-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])", stale])
        defer { unlink(stale) }
        XCTAssertEqual(try Tools.run(Tools.recctl, ["--socket", stale, "status"]).status, 3)
    }

    func testUsageErrorsExitTwo() throws {
        XCTAssertEqual(try Tools.run(Tools.recctl, ["frobnicate"]).status, 2)
        XCTAssertEqual(try Tools.run(Tools.recctl, ["list", "--by", "size"]).status, 2)
        XCTAssertEqual(try Tools.run(Tools.recctl, ["record", "stop", "--save", "--discard"]).status, 2)
        let help = try Tools.run(Tools.recctl, ["--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("Exit codes"), help.stdout)
    }

    func testMissingCaptureDeviceIs503NamingTheDevice() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let daemon = try Daemon(environment: pulse.environment, captureDevice: "recd_no_such_pcm")
        defer { daemon.cleanUp() }
        try daemon.start()
        let (status, body) = try daemon.curl("POST", "/v1/record/start", body: "{}")
        XCTAssertEqual(status, 503, body)
        XCTAssertTrue(body.contains("device_unavailable") && body.contains("recd_no_such_pcm"), body)
        let r = try daemon.recctl("record", "start")
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("recd_no_such_pcm"), r.stderr)
        // Nothing was left behind, and the daemon still serves.
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path), [])
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
        // alsa-lib's own complaint went to the daemon's log, not to a terminal.
        XCTAssertTrue(daemon.log.contains("alsa-lib"), daemon.log)
    }

    func testASecondDaemonOnTheSameSocketExitsAndLeavesTheFirstAlone() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let first = try Daemon(environment: pulse.environment)
        defer { first.cleanUp() }
        try first.start()
        let second = try Tools.run(Tools.recd, ["--socket", first.socket, "--data-dir", first.dir.appendingPathComponent("other").path],
                                   environment: pulse.environment, timeout: 20)
        XCTAssertNotEqual(second.status, 0)
        XCTAssertTrue(second.stderr.contains("already serving"), second.stderr)
        XCTAssertEqual(try first.recctlJSON(DaemonStatus.self, "status").pid, first.process?.processIdentifier)

        // Another socket but the same data directory: refused too (it would "recover" the first
        // daemon's recording in progress from under it).
        XCTAssertEqual(try first.recctl("record", "start").status, 0)
        let third = try Tools.run(Tools.recd, ["--socket", first.dir.appendingPathComponent("other.sock").path,
                                               "--data-dir", first.dataDir.path], environment: pulse.environment, timeout: 20)
        XCTAssertNotEqual(third.status, 0)
        XCTAssertTrue(third.stderr.contains("is using the data directory"), third.stderr)
        XCTAssertEqual(try first.recctlJSON(DaemonStatus.self, "status").activity, .recording)
        XCTAssertEqual(try first.recctlJSON(StopRecordingResponse.self, "record", "stop").recording?.state, .pending)
    }

    func testASocketDirectoryOthersMayWriteIsRefused() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-open-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertEqual(chmod(dir.path, 0o777), 0)
        let r = try Tools.run(Tools.recd, ["--socket", dir.appendingPathComponent("recd.sock").path,
                                           "--data-dir", dir.appendingPathComponent("data").path], timeout: 20)
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("others may write to it"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("recd.sock").path))
    }

    /// A data folder recd may not write in (a read-only mount, as a systemd unit's ProtectHome=read-only
    /// makes of a home outside its ReadWritePaths=) stops start-up with the folder, the reason and, under
    /// systemd, the drop-in that fixes it; and recd has created nothing. A mount namespace of its own
    /// (unshare -m, root) makes the read-only mount without touching the host's.
    func testADataFolderOnAReadOnlyMountIsRefusedAtStartSayingWhyAndWhatToDo() throws {
        try Skip.if(getuid() != 0 || Tools.which("unshare") == nil, "needs root and unshare for a mount namespace")
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-ro-\(UUID().uuidString.prefix(6))")
        let home = dir.appendingPathComponent("home"), existing = home.appendingPathComponent("existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        /// recd started with `--data-dir DATA` while HOME is mounted read-only; INVOCATION_ID as systemd sets it.
        func start(_ data: URL, systemd: Bool) throws -> ProcessResult {
            let script = "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && shift && exec \"$@\""
            var env = ProcessInfo.processInfo.environment
            env["INVOCATION_ID"] = systemd ? "0123456789abcdef0123456789abcdef" : nil
            return try Tools.run(Tools.which("unshare")!, ["-m", "sh", "-c", script, "sh", home.path, Tools.recd,
                                                          "--socket", dir.appendingPathComponent("recd.sock").path,
                                                          "--data-dir", data.path, "--capture-device", "null"],
                                 environment: env, timeout: 20)
        }
        let missing = home.appendingPathComponent("recd")
        let underSystemd = try start(missing, systemd: true)
        XCTAssertNotEqual(underSystemd.status, 0)
        XCTAssertTrue(underSystemd.stderr.contains("cannot create directory \(missing.path): \(home.path) is on a read-only file system"),
                      underSystemd.stderr)
        XCTAssertTrue(underSystemd.stderr.contains("`systemctl edit recd` ([Service] ReadWritePaths=\(missing.path))"), underSystemd.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing.path))
        // A folder that is there but read-only: refused before anything is opened in it, and without
        // the systemd advice when not under systemd.
        let plain = try start(existing, systemd: false)
        XCTAssertNotEqual(plain.status, 0)
        XCTAssertTrue(plain.stderr.contains("cannot write in \(existing.path): \(existing.path) is on a read-only file system (EROFS)"),
                      plain.stderr)
        XCTAssertFalse(plain.stderr.contains("ReadWritePaths"), plain.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: existing.path), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("recd.sock").path))
    }

    /// A power cut (or a full disk) while a fragment's `moof` was written leaves it torn at the end of
    /// the file, and FFmpeg then opens none of it. The next start cuts the torn box off and salvages
    /// the fragments before it.
    func testATakeWhoseLastFragmentHeaderIsTornIsSalvagedUpToIt() throws {
        let (pulse, daemon, start, _) = try takeOfAToneKilled(title: "Torn")
        defer { daemon.cleanUp(); pulse.stop() }
        let path = daemon.path(of: start.recording)
        var file = try Data(contentsOf: URL(fileURLWithPath: path))
        var moofs: [Range<Int>] = []
        var offset = 0
        while offset + 8 <= file.count {
            let size = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if file[offset + 4..<offset + 8] == Data("moof".utf8) { moofs.append(offset..<offset + size) }
            offset += max(size, 8)
        }
        let last = try XCTUnwrap(moofs.last, "no fragment in \(file.count) bytes")
        XCTAssertGreaterThanOrEqual(moofs.count, 2)
        file = file.prefix(last.lowerBound + last.count / 2)
        try file.write(to: URL(fileURLWithPath: path))
        XCTAssertNotEqual(try Tools.run("ffprobe", ["-v", "error", path]).status, 0, "FFmpeg opens a file torn in a moof")

        try daemon.start()
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertEqual(r.state, .pending)
        XCTAssertTrue(r.recovered)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(r.duration), Double(moofs.count - 1) - 0.2, "the whole fragments before the torn one")
        let check = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(daemon.log.contains("its last fragment's header was cut short"), daemon.log)
    }

    /// A take of a 440 Hz tone, killed (-9) 3.5 s in: its PulseAudio, daemon (stopped) and take, and the
    /// seconds between the start's reply and the kill.
    private func takeOfAToneKilled(title: String) throws -> (PulseAudioServer, Daemon, StartRecordingResponse, TimeInterval) {
        let pulse = try PulseAudioServer()
        var daemon: Daemon?
        do {
            try pulse.play(try Tones.sine(frequency: 440, amplitude: 0.5))
            daemon = try Daemon(environment: pulse.environment)
            try daemon!.start()
            let start = try daemon!.recctlJSON(StartRecordingResponse.self, "record", "start", "--title", title)
            let startedAt = Date()
            Thread.sleep(forTimeInterval: 3.5)
            let killedAt = Date()
            daemon!.kill9()
            return (pulse, daemon!, start, killedAt.timeIntervalSince(startedAt))
        } catch {
            daemon?.cleanUp()
            pulse.stop()
            throw error
        }
    }

    func testAKilledRecordingLeavesAPlayableFileThatIsRecoveredAtStart() throws {
        let (pulse, daemon, start, recorded) = try takeOfAToneKilled(title: "Interrupted")
        defer { daemon.cleanUp(); pulse.stop() }

        // The file as the crash left it: fragmented, readable, up to shortly before the kill.
        let path = daemon.path(of: start.recording)
        let probe = try Probe.audio(path)
        XCTAssertEqual(probe.codec, "aac")
        let decoded = try AudioAnalysis.of(path)
        XCTAssertGreaterThan(decoded.duration, recorded - 1.6, "lost more than the open fragment")
        XCTAssertLessThanOrEqual(decoded.duration, recorded + 0.2)
        XCTAssertEqual(decoded.frequency, 440, accuracy: 10)

        // The next start salvages it: pending, recovered, finalized, never deleted.
        XCTAssertTrue(FileManager.default.fileExists(atPath: daemon.socket), "kill -9 leaves the socket file")
        try daemon.start()
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertEqual(r.state, .pending)
        XCTAssertTrue(r.recovered)
        XCTAssertEqual(r.title, "Interrupted")
        XCTAssertEqual(try XCTUnwrap(r.duration), decoded.duration, accuracy: 0.1)
        let check = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
        // And it can be saved like any other.
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "save", r.id.uuidString).state, .ready)

        // A row left in `recording` whose file never came to be (killed while the device was being
        // opened) holds nothing: the next start removes it.
        daemon.stop()
        let ghost = UUID().uuidString
        let db = daemon.dataDir.appendingPathComponent("catalog.sqlite").path
        XCTAssertEqual(try Tools.run("sqlite3", [db, """
            INSERT INTO recording (id, type, state, title, notes, createdAt, file, playCount, recovered, droppedFrames)
            VALUES ('\(ghost)', 'audio', 'recording', 'Ghost', '', '2025-10-25 15:42:00.000', 'Recordings/audio_\(ghost).m4a', 0, 0, 0)
            """]).status, 0)
        try daemon.start()
        XCTAssertEqual(try daemon.recctl("show", ghost).status, 1)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1)
        XCTAssertTrue(daemon.log.contains("before any audio was written"), daemon.log)
    }

    func testSIGTERMKeepsTheActiveRecordingAsPending() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let daemon = try Daemon(environment: pulse.environment)
        defer { daemon.cleanUp() }
        try daemon.start()
        let listener = try EventListener(daemon, types: [.recordingStopped])
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        Thread.sleep(forTimeInterval: 1.2)
        daemon.stop()
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.socket), "SIGTERM removes the socket")
        // The listeners heard why the take ended before their stream did (issue 47: they got nothing).
        let heard = try listener.events()
        guard case .recordingStopped(let stopped)? = heard.last?.payload else { return XCTFail("\(heard)") }
        XCTAssertEqual(stopped.reason, .shutdown)
        XCTAssertEqual(stopped.recordingID, start.recording.id)
        XCTAssertEqual(stopped.recording?.state, .pending)
        try daemon.start()
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertEqual(r.state, .pending)
        XCTAssertFalse(r.recovered)
        XCTAssertEqual(try XCTUnwrap(r.duration), 1.2, accuracy: 0.4)
        let playable = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", daemon.path(of: r), "-f", "null", "-"])
        XCTAssertEqual(playable.status, 0, "the file SIGTERM left plays: \(playable.stderr)")
    }

    func testACaptureDeviceThatFailsMidRecordingEndsItCleanly() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        try pulse.play(try Tones.sine())
        let daemon = try Daemon(environment: pulse.environment)
        defer { daemon.cleanUp() }
        try daemon.start()
        let listener = try EventListener(daemon, types: [.recordingStarted, .recordingStopped])
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        Thread.sleep(forTimeInterval: 1.5)
        pulse.stop()   // the sound server goes away: ALSA's pulse PCM fails with EIO
        var status = try daemon.recctlJSON(DaemonStatus.self, "status")
        for _ in 0..<100 where status.activity != .idle {
            Thread.sleep(forTimeInterval: 0.1)
            status = try daemon.recctlJSON(DaemonStatus.self, "status")
        }
        XCTAssertEqual(status.activity, .idle)
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertEqual(r.state, .pending)
        XCTAssertEqual(try XCTUnwrap(r.duration), 1.5, accuracy: 0.5)
        let check = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", daemon.path(of: r), "-f", "null", "-"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(daemon.log.contains("pulse:mic.monitor"), daemon.log)
        // The reason, in status and in the event stream.
        let fault = try XCTUnwrap(status.lastFault)
        XCTAssertEqual(fault.recordingID, r.id)
        XCTAssertTrue(fault.reason.contains("pulse:mic.monitor"), fault.reason)
        let events = try listener.events()
        XCTAssertEqual(events.map(\.type), [.recordingStarted, .recordingStopped])
        guard case .recordingStopped(let stopped)? = events.last?.payload else { return XCTFail("\(events)") }
        XCTAssertEqual(stopped.reason, .fault)
        XCTAssertEqual(stopped.recording?.state, .pending)
        XCTAssertTrue(stopped.error?.contains("pulse:mic.monitor") == true, "\(stopped)")
    }

    /// A discard moves the file aside, deletes the row, then unlinks the file. Here the daemon is
    /// stopped and the two crash points in between are set up by hand; the next start settles them.
    func testInterruptedDiscardsAreUndoneOrFinishedAtStart() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let daemon = try Daemon(environment: pulse.environment)
        defer { daemon.cleanUp() }
        try daemon.start()
        var kept: [Recording] = []
        for _ in 0..<2 {
            XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
            Thread.sleep(forTimeInterval: 0.4)
            kept.append(try XCTUnwrap(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop").recording))
        }
        daemon.stop()
        func aside(_ r: Recording) -> String {
            let url = URL(fileURLWithPath: daemon.path(of: r))
            return url.deletingLastPathComponent().appendingPathComponent("." + url.lastPathComponent + ".discarding").path
        }
        // Crash point 1: file moved aside, row not yet deleted → undo.
        try FileManager.default.moveItem(atPath: daemon.path(of: kept[0]), toPath: aside(kept[0]))
        // Crash point 2: file moved aside, row deleted → finish.
        try FileManager.default.moveItem(atPath: daemon.path(of: kept[1]), toPath: aside(kept[1]))
        let db = daemon.dataDir.appendingPathComponent("catalog.sqlite").path
        XCTAssertEqual(try Tools.run("sqlite3", [db, "DELETE FROM recording WHERE id = '\(kept[1].id.uuidString)'"]).status, 0)

        try daemon.start()
        XCTAssertTrue(FileManager.default.fileExists(atPath: daemon.path(of: kept[0])))
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", kept[0].id.uuidString).state, .pending)
        XCTAssertFalse(FileManager.default.fileExists(atPath: aside(kept[1])))
        XCTAssertEqual(try daemon.recctl("show", kept[1].id.uuidString).status, 1)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path),
                       [URL(fileURLWithPath: kept[0].file).lastPathComponent])
        XCTAssertTrue(daemon.log.contains("interrupted discard"), daemon.log)
    }
}
