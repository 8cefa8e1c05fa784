// recd as a systemd service: unit files, the notify protocol, journal log priorities.
import Foundation
import RecdAPI
import XCTest

/// A NOTIFY_SOCKET: a datagram socket that records what arrives, with when.
final class NotifyListener: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [(at: Date, message: String)] = []
    private var open = true
    /// Whether `socketToProbe` accepted a connection at the moment READY=1 arrived.
    private(set) var socketAnsweredAtReady: Bool?
    var socketToProbe: String? {
        get { lock.withLock { probe } }
        set { lock.withLock { probe = newValue } }
    }
    private var probe: String?

    init(directory: URL) throws {
        path = directory.appendingPathComponent("notify.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, rc == 0 else { throw NSError(domain: "recd-tests", code: 13, userInfo: [NSLocalizedDescriptionKey: "bind \(path)"]) }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while lock.withLock({ open }) {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 {
                    let message = String(decoding: buffer[0..<n], as: UTF8.self)
                    if message.contains("READY=1"), let probe = lock.withLock({ self.probe }) {
                        let answered = Self.connects(probe)
                        lock.withLock { socketAnsweredAtReady = answered }
                    }
                    lock.withLock { received.append((Date(), message)) }
                }
            }
        }
        thread.start()
    }

    var messages: [(at: Date, message: String)] { lock.withLock { received } }

    /// Whether a stream connection to the Unix socket `path` is accepted now.
    static func connects(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// Waits for a message containing `text`; returns when it arrived.
    func waitFor(_ text: String, timeout: Double = 10) -> Date? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let m = messages.first(where: { $0.message.contains(text) }) { return m.at }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }

    func close() {
        lock.withLock { open = false }
        Thread.sleep(forTimeInterval: 0.15)
        Glibc.close(fd)
        unlink(path)
    }
}

final class SystemdTests: XCTestCase {
    /// The units with @BINDIR@ pointing at the built binaries.
    func renderedUnit(_ relative: String, into dir: URL) throws -> String {
        let text = try String(contentsOf: Tools.packageRoot.appendingPathComponent(relative), encoding: .utf8)
            .replacingOccurrences(of: "@BINDIR@", with: Tools.productsDirectory.path)
            .replacingOccurrences(of: "@DATADIR@", with: "/usr/local/share")
        let out = dir.appendingPathComponent(URL(fileURLWithPath: relative).lastPathComponent)
        try text.write(to: out, atomically: true, encoding: .utf8)
        return out.path
    }

    func testUnitFilesVerifyAndTheSystemUnitIsHardened() throws {
        guard let analyze = Tools.which("systemd-analyze") else {
            throw Skip.because("systemd-analyze is not installed (apt-get install systemd)")
        }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-units-\(UUID().uuidString.prefix(6))")
        let runtime = dir.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let system = try renderedUnit("systemd/system/recd.service", into: dir)
        let systemSocket = try renderedUnit("systemd/system/recd.socket", into: dir)
        let user = try renderedUnit("systemd/recd.service", into: dir.appendingPathComponent("runtime"))
        let userSocket = try renderedUnit("systemd/recd.socket", into: dir.appendingPathComponent("runtime"))
        // --man=no: the man pages are installed by `make install`, not present here.
        let verifySystem = try Tools.run(analyze, ["verify", "--man=no", system, systemSocket])
        XCTAssertEqual(verifySystem.status, 0, verifySystem.stderr)
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = runtime.path
        let verifyUser = try Tools.run(analyze, ["verify", "--man=no", "--user", user, userSocket], environment: env)
        XCTAssertEqual(verifyUser.status, 0, verifyUser.stderr)
        for file in [system, user] {
            XCTAssertTrue(try String(contentsOfFile: file, encoding: .utf8).contains("Type=notify"))
        }
        // The issue's goal for the system unit: an exposure of 2.5 or lower.
        let security = try Tools.run(analyze, ["security", "--offline=yes", system])
        let line = security.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }
        let score = line.flatMap { $0.split(separator: ":").last?.split(separator: " ").first }.flatMap { Double($0) }
        XCTAssertLessThanOrEqual(try XCTUnwrap(score, security.stdout), 2.5)
    }

    func testNotifyReadyAfterTheSocketAnswersThenWatchdogStatusAndStopping() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-notify-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let listener = try NotifyListener(directory: dir)
        defer { listener.close(); try? FileManager.default.removeItem(at: dir) }
        var env = pulse.environment
        env["NOTIFY_SOCKET"] = listener.path
        env["WATCHDOG_USEC"] = "400000"   // pings every 200 ms
        try pulse.play(try Tones.sine())
        let daemon = try Daemon(environment: env)
        defer { daemon.cleanUp() }
        listener.socketToProbe = daemon.socket
        try daemon.start()

        let ready = try XCTUnwrap(listener.waitFor("READY=1"), "no READY=1")
        // The socket accepted a connection at the moment READY=1 arrived, not later.
        XCTAssertEqual(listener.socketAnsweredAtReady, true)
        XCTAssertTrue(listener.messages.first { $0.message.contains("READY=1") }!.message.contains("STATUS=idle"))
        XCTAssertEqual(try daemon.recctl("status").status, 0)

        // Watchdog pings at half of WATCHDOG_USEC.
        Thread.sleep(forTimeInterval: 2.0)
        let pings = listener.messages.filter { $0.message == "WATCHDOG=1" && $0.at > ready }
        XCTAssertEqual(Double(pings.count), 2.0 / 0.2, accuracy: 4, "watchdog pings in 2 s")

        // STATUS= follows what recd does.
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "Status line").status, 0)
        XCTAssertNotNil(listener.waitFor("STATUS=recording 'Status line'"))
        XCTAssertEqual(try daemon.recctl("record", "stop").status, 0)
        XCTAssertNotNil(listener.waitFor("STATUS=idle", timeout: 5).map { _ in () })
        let idleAgain = listener.messages.filter { $0.message == "STATUS=idle" }
        XCTAssertFalse(idleAgain.isEmpty)

        // SIGTERM: STOPPING=1.
        daemon.stop()
        XCTAssertNotNil(listener.waitFor("STOPPING=1", timeout: 5), "\(listener.messages.suffix(5).map(\.message)); \(daemon.log.suffix(3000))")
    }

    func testUnderTheJournalLinesCarrySyslogPriorities() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-journal-\(UUID().uuidString.prefix(6))")
        let daemonProbe = try Daemon(environment: pulse.environment, dir: dir)
        // The log file is recd's stderr; JOURNAL_STREAM names it (device:inode), as systemd does.
        _ = FileManager.default.createFile(atPath: daemonProbe.logFile.path, contents: nil)
        var st = stat()
        XCTAssertEqual(stat(daemonProbe.logFile.path, &st), 0)
        var env = pulse.environment
        env["JOURNAL_STREAM"] = "\(st.st_dev):\(st.st_ino)"
        env["RECD_LOG_LEVEL"] = "debug"
        let daemon = try Daemon(environment: env, dir: dir)
        defer { daemon.cleanUp() }
        // Without --log-level (the helper passes debug): RECD_LOG_LEVEL must bring the debug lines.
        try daemon.startWithout(option: "--log-level")
        let lines = daemon.log.split(separator: "\n")
        XCTAssertTrue(lines.contains { $0.hasPrefix("<6>[Server] recd \(RecdVersion.current) listening") }, daemon.log)
        XCTAssertTrue(lines.contains { $0.hasPrefix("<7>") }, "debug lines at priority 7 (RECD_LOG_LEVEL=debug)")
        XCTAssertTrue(lines.allSatisfy { $0.first == "<" }, daemon.log)
    }

    /// The user unit as it runs: Debian's own `systemd --user` for a user made in the test VM, the
    /// units in that user's folder, `systemctl --user enable --now recd.socket`, then a take from
    /// snd-aloop and an import (a media worker inside the sandbox). The exposure score is asked of
    /// the running manager (`systemd-analyze security --user`), not estimated offline.
    func testTheUserUnitRunsSandboxedUnderARealUserManager() throws {
        // RECD_VM_TRANSCRIBE=1: the transcriber too, inside the unit (about two minutes more in the
        // emulated guest, so not in every run; docs/testing.md).
        let transcribe = ProcessInfo.processInfo.environment["RECD_VM_TRANSCRIBE"] == "1"
        // The package's binaries under the suite's runner (what users install, and emulated the
        // release build starts programs several times faster); run alone, the debug build.
        let (out, run) = try VMRun.run("user-unit.sh", modules: "snd-aloop", toneSeconds: 30,
                                       binaries: try PackageTests.packagedBinaries()) { out in
            if transcribe { _ = FileManager.default.createFile(atPath: out.appendingPathComponent("transcribe.flag").path, contents: nil) }
            try WorkerEscapeTests.buildHook(into: out.appendingPathComponent("hook"))
            // The files the guest imports, made here: the ffmpeg CLI took 9 s for one, emulated.
            for (file, args) in [("import-me.m4a", ["sine=frequency=440:duration=2", "-c:a", "aac"]),
                                 ("hostile.wav", ["sine=frequency=660:duration=1"])] {
                let made = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i"] + args
                                         + [out.appendingPathComponent(file).path])
                XCTAssertEqual(made.status, 0, made.stderr)
            }
        }
        defer { try? FileManager.default.removeItem(at: out) }
        XCTAssertEqual(run.status, 0, "VM run failed: \(run.stdout)\n\(run.stderr)\n\(VMRun.log(out, "recd.log", "units-status.txt"))")
        guard run.status == 0 else { return }
        let security = try String(contentsOf: out.appendingPathComponent("security.txt"), encoding: .utf8)
        let line = security.split(separator: "\n").first { $0.contains("Overall exposure level") }
        let score = line.flatMap { $0.split(separator: ":").last?.split(separator: " ").first }.flatMap { Double($0) }
        // The system unit's goal (it scores 0.8); the user unit scored 9.1 before.
        XCTAssertLessThanOrEqual(try XCTUnwrap(score, security), 2.5, security)
        let status = try String(contentsOf: out.appendingPathComponent("status.txt"), encoding: .utf8)
        for expected in ["NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"] {
            XCTAssertTrue(status.contains(expected), "\(expected) in\n\(status)")
        }
        // PrivateUsers=yes: a user namespace that maps the user's uid alone.
        let map = try String(contentsOf: out.appendingPathComponent("uid_map.txt"), encoding: .utf8)
        XCTAssertEqual(map.split(whereSeparator: \.isWhitespace).last, "1", map)
        let rootCode = try String(contentsOf: out.appendingPathComponent("root-status.code"), encoding: .utf8)
        let rootSaid = try String(contentsOf: out.appendingPathComponent("root-status.txt"), encoding: .utf8)
        XCTAssertNotEqual(rootCode.trimmingCharacters(in: .whitespacesAndNewlines), "0", rootSaid)
        XCTAssertTrue(rootSaid.contains("may not use this recd: only uid "), rootSaid)
        // A data folder outside ~/.local/share/recd without a drop-in: refused, with the remedy.
        let elsewhereCode = try String(contentsOf: out.appendingPathComponent("elsewhere.code"), encoding: .utf8)
        let elsewhere = try String(contentsOf: out.appendingPathComponent("elsewhere.log"), encoding: .utf8)
        XCTAssertNotEqual(elsewhereCode.trimmingCharacters(in: .whitespacesAndNewlines), "0", elsewhere)
        XCTAssertTrue(elsewhere.contains("cannot create directory /home/recdunit/Recordings-elsewhere: /home/recdunit is on a read-only file system"),
                      elsewhere)
        XCTAssertTrue(elsewhere.contains("`systemctl --user edit recd` ([Service] ReadWritePaths=/home/recdunit/Recordings-elsewhere)"), elsewhere)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out.appendingPathComponent("elsewhere.created").path))
        XCTAssertFalse(rootSaid.contains("root"), "root is not offered where it cannot get in: \(rootSaid)")
        // Hostile code in the unit's media worker, on Debian 12's kernel (Landlock ABI 2: neither TCP
        // rules nor scopes): the worker's seccomp filter refuses the sockets, signals and traces.
        XCTAssertTrue(try String(contentsOf: out.appendingPathComponent("kernel.txt"), encoding: .utf8).hasPrefix("6.1"))
        let recdLog = try String(contentsOf: out.appendingPathComponent("recd.log"), encoding: .utf8)
        // An import's worker, a library job's (the trim of what was imported) and a take's job process.
        for place in ["media-worker", "library-worker", "take-worker"] {
            WorkerEscapeTests.assertEveryEscapeFailed(try XCTUnwrap(WorkerEscapeTests.results(in: recdLog, from: place), "\(place)\n\(recdLog)"))
        }
        XCTAssertTrue(try String(contentsOf: out.appendingPathComponent("hostile-trim.json"), encoding: .utf8).contains("\"duration\""),
                      VMRun.log(out, "hostile-trim.json", "recd.log"))
        XCTAssertEqual(try String(contentsOf: out.appendingPathComponent("hostile-secret-after.txt"), encoding: .utf8), "PRIVATE KEY\n")
        XCTAssertFalse(try String(contentsOf: out.appendingPathComponent("hostile-recordings.txt"), encoding: .utf8).contains("hostile"))
        XCTAssertTrue(try String(contentsOf: out.appendingPathComponent("hostile-import.json"), encoding: .utf8).contains("ready"),
                      VMRun.log(out, "hostile-import.json", "recd.log"))
        let log = VMRun.log(out, "recd.log")
        XCTAssertTrue(log.contains("root is not mapped into recd's user namespace"), log)
        XCTAssertTrue(log.contains("media workers: Landlock ABI"), log)
        // The take and the import went through media workers inside the unit's sandbox.
        let stop = try APIJSON.decoder().decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("take.json")))
        let take = try XCTUnwrap(stop.recording)
        XCTAssertGreaterThan(take.duration ?? 0, 1.5)
        let imported = try APIJSON.decoder().decode(Recording.self, from: Data(contentsOf: out.appendingPathComponent("import.json")))
        XCTAssertEqual(imported.duration ?? 0, 2, accuracy: 0.1)
        let list = try APIJSON.decoder().decode(RecordingList.self, from: Data(contentsOf: out.appendingPathComponent("list.json")))
        XCTAssertEqual(Set(list.recordings.map(\.id)), [take.id, imported.id])
        // The transcriber ran inside the unit's sandbox (no MemoryDenyWriteExecute= there: its math
        // library writes code at run time) and made the import's transcript: a tone, so no words.
        if transcribe {
            let said = (try? String(contentsOf: out.appendingPathComponent("transcript.json"), encoding: .utf8)) ?? "(none)"
            let transcript = try APIJSON.decoder().decode(Transcript.self, from: Data(said.utf8))
            XCTAssertEqual(transcript.state, .done, said)
            XCTAssertEqual(transcript.segments, [])
        }
        // A desktop's path: the user's PulseAudio through ALSA's pulse plugin, from inside the sandbox.
        // The tone is there (not silence); its pitch and level are not judged: an emulated guest on a
        // loaded host feeds PulseAudio in bursts (KernelDriverTests judges pitch and level).
        let tone = try XCTUnwrap(ChannelLevels.of(out.appendingPathComponent("pulse.m4a").path, channels: 1).first)
        XCTAssertGreaterThan(tone.rms, 0.05, "the tone played into the user's PulseAudio was recorded")
    }

    /// `make install` writes these (generated by swift-argument-parser from recctl's own commands).
    func testShellCompletionScriptsCoverTheCommands() throws {
        for shell in ["bash", "zsh", "fish"] {
            let r = try Tools.run(Tools.recctl, ["--generate-completion-script", shell])
            XCTAssertEqual(r.status, 0, r.stderr)
            for word in ["playback", "record", "waveform", "events", "delete"] {
                XCTAssertTrue(r.stdout.contains(word), "\(shell) completion lacks \(word)")
            }
        }
    }

    /// `systemd-socket-activate` plays the service manager: it listens, and on the first connection
    /// execs recd with LISTEN_FDS=1; recd serves on that socket and leaves it in place at exit.
    func testSocketActivationServesOnThePassedSocket() throws {
        guard let activate = Tools.which("systemd-socket-activate") else {
            throw Skip.because("systemd-socket-activate is not installed (apt-get install systemd)")
        }
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        try pulse.play(try Tones.sine())
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-activate-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("run"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let socket = dir.appendingPathComponent("run/activated.sock").path
        let own = dir.appendingPathComponent("run/own.sock").path
        let log = dir.appendingPathComponent("recd.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        // Started through python's close_fds and detached: the descriptors Foundation's Process
        // watches must not leak into the service manager stand-in and the daemon it execs.
        let pidFile = dir.appendingPathComponent("activate.pid").path
        let launcher = """
            import subprocess, sys
            p = subprocess.Popen(sys.argv[3:], stdout=open(sys.argv[2], "a"), stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, close_fds=True, start_new_session=True)
            open(sys.argv[1], "w").write(str(p.pid))
            """
        let launched = try Tools.run("python3", ["-c", launcher, pidFile, log.path, activate, "-l", socket,
                                                 // It clears the environment; pass what the pulse plugin needs.
                                                 "-E", "XDG_RUNTIME_DIR", "-E", "PULSE_SERVER", Tools.recd,
                                                 "--data-dir", dir.appendingPathComponent("data").path, "--socket", own,
                                                 "--capture-device", PulseAudioServer.captureDevice, "--log-level", "debug"],
                                     environment: pulse.environment)
        XCTAssertEqual(launched.status, 0, launched.stderr)
        let pid = try XCTUnwrap(Int32(try String(contentsOfFile: pidFile, encoding: .utf8)))
        defer { kill(pid, SIGKILL) }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) { Thread.sleep(forTimeInterval: 0.02) }

        // The first connection starts recd, which answers on the passed socket.
        let status = try Tools.run(Tools.recctl, ["--socket", socket, "--json", "status"], environment: pulse.environment)
        let logText = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        XCTAssertEqual(status.status, 0, status.stderr + logText)
        let s = try APIJSON.decoder().decode(DaemonStatus.self, from: status.stdoutData)
        XCTAssertEqual(s.socket, socket)
        XCTAssertFalse(FileManager.default.fileExists(atPath: own), "recd did not bind a socket of its own")
        let start = try Tools.run(Tools.recctl, ["--socket", socket, "record", "start"], environment: pulse.environment)
        XCTAssertEqual(start.status, 0, start.stderr)
        Thread.sleep(forTimeInterval: 0.5)
        let stop = try Tools.run(Tools.recctl, ["--socket", socket, "record", "stop", "--save"], environment: pulse.environment)
        XCTAssertEqual(stop.status, 0, stop.stderr)
        let text = try String(contentsOf: log, encoding: .utf8)
        XCTAssertTrue(text.contains("serving on the socket systemd passed"), text)

        // SIGTERM: a clean exit, and the socket (systemd's) stays for the next start.
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while kill(pid, 0) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertNotEqual(kill(pid, 0), 0, "recd exited within 5 s")
        XCTAssertTrue((try String(contentsOf: log, encoding: .utf8)).contains("recd stopped"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket))
    }
}
