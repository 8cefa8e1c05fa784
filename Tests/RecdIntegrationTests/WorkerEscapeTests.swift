// Hostile code inside a media worker and inside the transcriber (issue 45): what a parser bug in FFmpeg
// or in the transcriber's libraries could run there, run for real by a hook the test builds and
// preloads (Tests/hostile/escape-hook.c), under this machine's kernel, Landlock and seccomp. Each
// escape must fail; and recd itself follows no link and no catalog value that a worker could once have
// placed.
import Foundation
import RecdAPI
import XCTest

final class WorkerEscapeTests: XCTestCase {
    var pulse: PulseAudioServer!
    var daemon: Daemon!
    var targets: HostileTargets!

    /// What the hostile code aims at: an owner's private key, recd's socket, PulseAudio's, an abstract
    /// socket and a TCP port that listen, and another process of the owner.
    final class HostileTargets {
        let dir: URL
        let secret: String
        let hook: String
        let abstractName = "recd-hostile-\(UUID().uuidString.prefix(8))"
        private var abstract: Int32 = -1
        private var tcp: Int32 = -1
        private(set) var tcpPort = 0
        let other = Process()

        /// `hookDir`: where the hook is built, alone in its folder: the workers may read the folders
        /// of the libraries they map (WorkerSandbox), and the transcriber only its own and the system's.
        let hookDir: URL

        init(dir: URL, hookDir: URL) throws {
            self.dir = dir
            self.hookDir = hookDir
            try FileManager.default.createDirectory(at: hookDir, withIntermediateDirectories: true)
            let privateDir = dir.appendingPathComponent("private")
            try FileManager.default.createDirectory(at: privateDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            secret = privateDir.appendingPathComponent("id_ed25519").path
            XCTAssertTrue(FileManager.default.createFile(atPath: secret, contents: Data("PRIVATE KEY\n".utf8), attributes: [.posixPermissions: 0o600]))
            hook = try WorkerEscapeTests.buildHook(into: hookDir)
            abstract = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var a = sockaddr_un()
            a.sun_family = sa_family_t(AF_UNIX)
            let name = Array(abstractName.utf8)
            withUnsafeMutableBytes(of: &a.sun_path) { raw in for (i, b) in name.enumerated() { raw[i + 1] = b } }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.count)
            XCTAssertEqual(withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(abstract, $0, length) } }, 0)
            XCTAssertEqual(listen(abstract, 4), 0)
            tcp = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var inet = sockaddr_in()
            inet.sin_family = sa_family_t(AF_INET)
            inet.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
            var size = socklen_t(MemoryLayout<sockaddr_in>.size)
            XCTAssertEqual(withUnsafePointer(to: &inet) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(tcp, $0, size) } }, 0)
            XCTAssertEqual(listen(tcp, 4), 0)
            XCTAssertEqual(withUnsafeMutablePointer(to: &inet) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(tcp, $0, &size) } }, 0)
            tcpPort = Int(UInt16(bigEndian: inet.sin_port))
            other.executableURL = URL(fileURLWithPath: "/bin/sleep")
            other.arguments = ["600"]
            try other.run()
        }

        /// A file of the library that no hostile code may read or write (`startDaemon` puts it there).
        static func recording(in daemon: Daemon) -> URL {
            daemon.dataDir.appendingPathComponent("Recordings/audio_00000000-0000-4000-8000-000000000000.m4a")
        }

        func environment(base: [String: String], daemon: Daemon, pulse: PulseAudioServer) -> [String: String] {
            base.merging([
                "LD_PRELOAD": hook,
                "HOSTILE_SECRET": secret,
                "HOSTILE_CATALOG": daemon.dataDir.appendingPathComponent("catalog.sqlite").path,
                "HOSTILE_RECORDINGS": daemon.dataDir.appendingPathComponent("Recordings").path,
                "HOSTILE_RECORDING": Self.recording(in: daemon).path,
                "HOSTILE_RECD_SOCKET": daemon.socket,
                "HOSTILE_PULSE_SOCKET": pulse.runtimeDir.appendingPathComponent("pulse/native").path,
                "HOSTILE_ABSTRACT": abstractName,
                "HOSTILE_TCP_PORT": String(tcpPort),
                "HOSTILE_OTHER_PID": String(other.processIdentifier),
            ]) { $1 }
        }

        func close() {
            if abstract >= 0 { Glibc.close(abstract) }
            if tcp >= 0 { Glibc.close(tcp) }
            if other.isRunning { other.terminate() }
            try? FileManager.default.removeItem(at: hookDir)
        }
    }

    override func setUpWithError() throws {
        try Skip.if(Tools.which("cc") == nil, "cc is missing (build-essential): scripts/install-deps.sh --test installs it")
        pulse = try PulseAudioServer()
    }

    override func tearDown() {
        daemon?.cleanUp()
        pulse?.stop()
        targets?.close()
    }

    /// `hookDir`: where the hook goes (a folder of its own beside the test's by default).
    func startDaemon(extraArgs: [String] = [], hookDir: URL? = nil) throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-test-\(UUID().uuidString.prefix(8))")
        targets = try HostileTargets(dir: dir, hookDir: hookDir ?? URL(fileURLWithPath: dir.path + "-hook"))
        let plain = try Daemon(environment: pulse.environment, extraArgs: extraArgs, dir: dir)
        daemon = try Daemon(environment: targets.environment(base: pulse.environment, daemon: plain, pulse: pulse), extraArgs: extraArgs, dir: dir)
        try daemon.start()
        try Data("RECORDING\n".utf8).write(to: HostileTargets.recording(in: daemon))
    }

    /// Builds Tests/hostile/escape-hook.c into `dir` (made here); returns the library's path.
    @discardableResult
    static func buildHook(into dir: URL) throws -> String {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let hook = dir.appendingPathComponent("escape-hook.so").path
        let source = Tools.packageRoot.appendingPathComponent("Tests/hostile/escape-hook.c").path
        let cc = try Tools.run("cc", ["-shared", "-fPIC", "-O1", "-o", hook, source, "-ldl", "-lpthread"])
        XCTAssertEqual(cc.status, 0, cc.stderr)
        return hook
    }

    /// The hostile code's line of results from `place` in `log` (each escape: `ok` or the errno's
    /// name), or nil when it has not reported.
    static func results(in log: String, from place: String) -> [String: String]? {
        guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("HOSTILE \(place)") }) else { return nil }
        return Dictionary(uniqueKeysWithValues: line.split(separator: " ").dropFirst(2).map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1)
            return (String(kv[0]), kv.count > 1 ? String(kv[1]) : "")
        })
    }

    func results(from place: String, within seconds: Double) throws -> [String: String] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let found = Self.results(in: daemon.log, from: place) { return found }
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTFail("the hostile code in the \(place) never reported\n\(daemon.log)")
        return [:]
    }

    static let escapes = ["read-secret", "write-catalog", "read-recording", "write-recording", "symlink", "hardlink", "mkfifo", "connect-recd", "connect-pulse",
                          "connect-abstract", "connect-tcp", "kill-parent", "kill-other", "kill-group", "ptrace",
                          "process_vm_readv", "execve"]

    static func assertEveryEscapeFailed(_ results: [String: String], file: StaticString = #filePath, line: UInt = #line) {
        for name in Self.escapes {
            XCTAssertNotNil(results[name], "\(name) was tried", file: file, line: line)
            XCTAssertNotEqual(results[name], "ok", "\(name) must fail: \(results)", file: file, line: line)
        }
        // New sockets are refused outright (seccomp), whatever Landlock this kernel has.
        for name in ["connect-recd", "connect-pulse", "connect-abstract", "connect-tcp", "ptrace", "execve"] {
            XCTAssertEqual(results[name], "EPERM", name, file: file, line: line)
        }
        XCTAssertEqual(results["read-secret"], "EACCES", file: file, line: line)
        XCTAssertEqual(results["write-catalog"], "EACCES", "the catalog is not the worker's", file: file, line: line)
        XCTAssertEqual(results["read-recording"], "EACCES", "reads no recording but its job's", file: file, line: line)
        XCTAssertEqual(results["write-recording"], "EACCES", "writes no recording but its job's output", file: file, line: line)
    }

    func assertNothingPlanted(file: StaticString = #filePath, line: UInt = #line) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent("Recordings").path)
        XCTAssertEqual(names.filter { $0.contains("hostile") }, [], file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: targets.secret, encoding: .utf8), "PRIVATE KEY\n", file: file, line: line)
        // (A restart's recovery moves it aside: it is no recording of the catalog.)
        if FileManager.default.fileExists(atPath: HostileTargets.recording(in: daemon).path) {
            XCTAssertEqual(try String(contentsOf: HostileTargets.recording(in: daemon), encoding: .utf8), "RECORDING\n", file: file, line: line)
        }
    }

    /// A media worker that was made to run code while probing an upload reads no private file,
    /// writes no catalog, makes no link, reaches no socket (recd's, PulseAudio's, abstract, TCP),
    /// signals and traces no process and runs no program; the import itself still goes through.
    func testHostileCodeInAMediaWorkerReachesNothingButItsJob() throws {
        try startDaemon()
        let wav = targets.dir.appendingPathComponent("memo.wav").path
        XCTAssertEqual(try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=duration=1", wav]).status, 0)
        let imported = try daemon.recctlJSON(Recording.self, "import", wav)
        Self.assertEveryEscapeFailed(try results(from: "media-worker", within: 10))
        try assertNothingPlanted()
        XCTAssertTrue(targets.other.isRunning)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", imported.id.uuidString).state, .ready)
        XCTAssertTrue(daemon.log.contains("Landlock ABI"), daemon.log)

        // The imported file's packets, parsed again by a library job (its trim): the process a
        // library worker forked for it reads its source and writes its output, and reaches no other
        // recording, catalog, socket or process, not even the worker that forked it, which is kept
        // for the next job (FFmpeg loaded once).
        let cut = try daemon.recctlJSON(Recording.self, "trim", imported.id.uuidString, "--start", "0.2", "--end", "0.8")
        let library = try results(from: "library-worker", within: 10)
        Self.assertEveryEscapeFailed(library)
        XCTAssertEqual(library["kill-parent"], "EPERM", "the library worker that forked the job is not the job's to signal")
        try assertNothingPlanted()
        XCTAssertEqual(cut.duration ?? 0, 0.6, accuracy: 0.1, "the trim itself went through")
        XCTAssertTrue(targets.other.isRunning)
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        let kept = try Tools.run("ps", ["-o", "args=", "--ppid", "\(pid)"]).stdout.split(separator: "\n").filter { $0.contains("recd-media") && $0.contains(" normal ") && $0.contains("--library") }
        XCTAssertEqual(kept.count, 1, "one library worker (normal priority: the loudness pass has its own at background) forked the trim's job and is kept\n\(kept)")
    }

    /// A take's worker forks a process for each of its jobs, walled in to that job's files: the
    /// process that finalizes a take (reading it, writing what becomes it) reads no other recording,
    /// writes no catalog, makes no link, reaches no socket and signals no process, not even the
    /// worker that forked it; and the take is kept whole. The next take is served by the same
    /// worker (FFmpeg loaded once).
    func testHostileCodeInATakesWorkerReachesOnlyItsTake() throws {
        try startDaemon()
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 1.2)
        let stop = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save")
        Self.assertEveryEscapeFailed(try results(from: "take-worker", within: 10))
        XCTAssertEqual(try results(from: "take-worker", within: 1)["kill-parent"], "EPERM", "the worker that forked the job is not the job's to signal")
        try assertNothingPlanted()
        XCTAssertTrue(targets.other.isRunning)
        let take = try XCTUnwrap(stop.recording)
        XCTAssertEqual(take.state, .ready)
        XCTAssertEqual(try XCTUnwrap(take.duration), 1.2, accuracy: 0.4, "the take was finalized whole\n\(daemon.log)")
        XCTAssertEqual(try AudioAnalysis.of(daemon.path(of: take)).frequency, 1000, accuracy: 10)
        // The worker stays for the next take, its job's process gone.
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        let workers = try Tools.run("ps", ["-o", "pid=,args=", "--ppid", "\(pid)"]).stdout.split(separator: "\n").filter { $0.contains("recd-media") && $0.contains("--take") }
        XCTAssertEqual(workers.count, 1, "one take's worker kept\n\(workers)")
        let worker = try XCTUnwrap(workers.first.flatMap { Int32($0.trimmingCharacters(in: .whitespaces).split(separator: " ")[0]) })
        XCTAssertEqual(try Tools.run("ps", ["-o", "pid=", "--ppid", "\(worker)"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines), "",
                       "the job's process ended with its lease")
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertEqual(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording?.state, .ready)
        XCTAssertTrue(try Tools.run("ps", ["-o", "pid=,args=", "--ppid", "\(pid)"]).stdout.contains("\(worker) "), "the same worker served the next take")
    }

    /// What a worker could have done on an older kernel or before this sandbox: a link in Recordings/
    /// to the owner's key in place of a recording's file, and a catalog value that leads out of
    /// Recordings/. recd serves neither (an error that says why, in the reply and in its log), and its
    /// delete removes only what is its own.
    func testRecdFollowsNoLinkAndNoCatalogValueAWorkerCouldHavePlaced() throws {
        try startDaemon()
        let wav = targets.dir.appendingPathComponent("memo.wav").path
        XCTAssertEqual(try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=duration=1", wav]).status, 0)
        let linked = try daemon.recctlJSON(Recording.self, "import", wav, "--title", "Linked")
        let file = daemon.path(of: linked)
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: targets.secret)
        let (status, body) = try daemon.curl("GET", "/v1/recordings/\(linked.id.uuidString)/media")
        XCTAssertEqual(status, 500, body)
        XCTAssertFalse(body.contains("PRIVATE KEY"), body)
        XCTAssertTrue(body.contains("symbolic link") && body.contains("storage_failure"), body)
        XCTAssertTrue(daemon.log.contains("symbolic link"), "logged as the server error it is")
        let head = try Tools.run("curl", ["-s", "-I", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", daemon.socket,
                                          "http://recd/v1/recordings/\(linked.id.uuidString)/media"])
        XCTAssertEqual(head.stdout, "500")

        // A catalog value that leads out of Recordings/ (written as a worker with the catalog could).
        let wav2 = targets.dir.appendingPathComponent("memo2.wav").path
        XCTAssertEqual(try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=duration=1:frequency=880", wav2]).status, 0)
        let crafted = try daemon.recctlJSON(Recording.self, "import", wav2, "--title", "Crafted")
        daemon.stop()
        let sql = "UPDATE recording SET file = 'Recordings/../private/id_ed25519' WHERE id = '\(crafted.id.uuidString)';"
        let update = try Tools.run("sqlite3", [daemon.dataDir.appendingPathComponent("catalog.sqlite").path, sql])
        XCTAssertEqual(update.status, 0, update.stderr)
        try FileManager.default.createDirectory(at: daemon.dataDir.appendingPathComponent("private"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: targets.secret, toPath: daemon.dataDir.appendingPathComponent("private/id_ed25519").path)
        try daemon.start()
        let (craftedStatus, craftedBody) = try daemon.curl("GET", "/v1/recordings/\(crafted.id.uuidString)/media")
        XCTAssertNotEqual(craftedStatus, 200, craftedBody)
        XCTAssertFalse(craftedBody.contains("PRIVATE KEY"), craftedBody)
        _ = try daemon.recctl("delete", crafted.id.uuidString, "--yes")
        XCTAssertTrue(FileManager.default.fileExists(atPath: daemon.dataDir.appendingPathComponent("private/id_ed25519").path),
                      "recd's delete did not follow the crafted value out of Recordings/")
        try assertNothingPlanted()
    }

    /// The transcriber, once its model is loaded, is as shut in as a media worker, and runs no
    /// program (its own second filter); the transcript is still made.
    func testHostileCodeInTheTranscriberReachesNothing() throws {
        try Skip.if(!FileManager.default.fileExists(atPath: TranscriptTests.transcriber + "/.installed"),
                    "the transcriber is not installed in \(TranscriptTests.transcriber): scripts/install-deps.sh --transcribe")
        // The hook in a folder of the transcriber's own (removed after): the only place beside the
        // system's that its sandbox lets it load a library from, as its own packages' code is.
        try startDaemon(extraArgs: ["--transcriber", TranscriptTests.transcriber, "--transcribe-priority", "normal"],
                        hookDir: URL(fileURLWithPath: TranscriptTests.transcriber).appendingPathComponent("test-hook-\(UUID().uuidString.prefix(8))"))
        let wav = targets.dir.appendingPathComponent("speech.wav").path
        XCTAssertEqual(try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", wav]).status, 0)
        let imported = try daemon.recctlJSON(Recording.self, "import", wav)
        Self.assertEveryEscapeFailed(try results(from: "transcriber", within: 180))
        try assertNothingPlanted()
        let deadline = Date().addingTimeInterval(180)
        var transcript = try daemon.recctlJSON(Transcript.self, "transcript", imported.id.uuidString)
        while transcript.state == .pending && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.5)
            transcript = try daemon.recctlJSON(Transcript.self, "transcript", imported.id.uuidString)
        }
        XCTAssertEqual(transcript.state, .done, "\(transcript)\n\(daemon.log)")
    }
}
