// Test support: real processes (recd, recctl, PulseAudio, ffmpeg, curl), no mocks.
import Foundation
import RecdAPI
import XCTest

/// Result of a finished process.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var stdoutData: Data
}

enum Tools {
    /// Where `swift build` put recd and recctl (next to the test bundle).
    static let productsDirectory: URL = {
        var candidates: [URL] = []
        if let dir = ProcessInfo.processInfo.environment["RECD_BUILD_DIR"] { candidates.append(URL(fileURLWithPath: dir)) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for c in candidates where FileManager.default.isExecutableFile(atPath: c.appendingPathComponent("recd").path) {
            return c
        }
        return candidates.last!
    }()

    static var recd: String { productsDirectory.appendingPathComponent("recd").path }
    static var recctl: String { productsDirectory.appendingPathComponent("recctl").path }

    /// The package root (for files in the repository).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Sends SIGSTOP to `pid` and returns once every one of its threads is stopped (state `t`/`T`):
    /// kill(2) only queues the signal, and on a loaded machine a thread of the process can still run
    /// (accept a connection, answer a request) for a while after it returns.
    static func stop(_ pid: Int32, within seconds: TimeInterval = 10) -> Bool {
        kill(pid, SIGSTOP)
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            let running = tasks.contains { task in
                // The state follows the ")" that ends the command name: "pid (comm) S ...".
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return false }
                let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
                return state != "T" && state != "t"
            }
            if !tasks.isEmpty && !running { return true }
            Thread.sleep(forTimeInterval: 0.01)
        } while Date() < deadline
        return false
    }

    /// Runs a program to completion (output through files: no pipe can fill up and block it).
    @discardableResult
    static func run(_ program: String, _ args: [String], environment: [String: String]? = nil,
                    cwd: String? = nil, timeout: TimeInterval = 60) throws -> ProcessResult {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out"), err = dir.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : (which(program) ?? program))
        p.arguments = args
        if let environment { p.environment = environment }
        if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = try FileHandle(forWritingTo: out)
        p.standardError = try FileHandle(forWritingTo: err)
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if p.isRunning {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            throw NSError(domain: "recd-tests", code: 1,
                          userInfo: [NSLocalizedDescriptionKey: "\(program) \(args) timed out after \(timeout) s"])
        }
        let o = try Data(contentsOf: out), e = try Data(contentsOf: err)
        return ProcessResult(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                             stderr: String(decoding: e, as: UTF8.self), stdoutData: o)
    }
}

/// A private PulseAudio server with two null sinks: `mic` (its monitor is what recd records, paced in
/// real time) and `speaker`. See shared/TESTING-AUDIO.md.
final class PulseAudioServer {
    let runtimeDir: URL
    private(set) var players: [Process] = []

    /// ALSA PCM name of the capture side.
    static let captureDevice = "pulse:mic.monitor"

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = runtimeDir.path
        env["PULSE_SERVER"] = "unix:" + runtimeDir.appendingPathComponent("pulse/native").path
        return env
    }

    init(micChannels: Int = 1) throws {
        runtimeDir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-pa-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: runtimeDir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let script = """
            load-module module-null-sink sink_name=mic rate=48000 channels=\(micChannels)
            load-module module-null-sink sink_name=speaker rate=48000 channels=2
            load-module module-native-protocol-unix
            """
        let pa = runtimeDir.appendingPathComponent("pa.pa")
        try script.write(to: pa, atomically: true, encoding: .utf8)
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = runtimeDir.path
        let r = try Tools.run("pulseaudio", ["-n", "-F", pa.path, "--exit-idle-time=-1", "--daemonize=yes",
                                             "--use-pid-file=yes", "--log-target=stderr"], environment: env)
        guard r.status == 0 else { throw NSError(domain: "recd-tests", code: 2,
                                                 userInfo: [NSLocalizedDescriptionKey: "pulseaudio failed: \(r.stderr)"]) }
        // Wait until it answers.
        for _ in 0..<100 {
            if (try? Tools.run("pactl", ["info"], environment: environment).status) == 0 { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw NSError(domain: "recd-tests", code: 3, userInfo: [NSLocalizedDescriptionKey: "pulseaudio did not answer"])
    }

    /// Plays a WAV file into the `mic` sink (what recd records) in the background.
    /// `latencyMs`: paplay's latency. The null sink renders in blocks of its client's latency
    /// (paplay's default is seconds), and its monitor then delivers the sound in such blocks: a test
    /// that times a take's first sound asks for a short one.
    func play(_ wav: String, latencyMs: Int? = nil) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tools.which("paplay") ?? "/usr/bin/paplay")
        p.arguments = (latencyMs.map { ["--latency-msec=\($0)"] } ?? []) + ["-d", "mic", wav]
        p.environment = environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        players.append(p)
        // paplay needs a moment to connect and start streaming.
        Thread.sleep(forTimeInterval: 0.3)
    }

    func stop() {
        for p in players where p.isRunning { p.terminate(); p.waitUntilExit() }
        let pidFile = runtimeDir.appendingPathComponent("pulse/pid")
        if let s = try? String(contentsOf: pidFile, encoding: .utf8), let pid = Int32(s.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGTERM)
            for _ in 0..<100 where kill(pid, 0) == 0 { Thread.sleep(forTimeInterval: 0.02) }
        }
        try? FileManager.default.removeItem(at: runtimeDir)
    }
}

/// A running recd with its own data directory and socket.
final class Daemon {
    let dir: URL
    let dataDir: URL
    let socket: String
    let environment: [String: String]
    let extraArgs: [String]
    private(set) var process: Process?
    let logFile: URL

    init(environment: [String: String], captureDevice: String = PulseAudioServer.captureDevice,
         extraArgs: [String] = [], dir: URL? = nil) throws {
        self.dir = dir ?? URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: self.dir, withIntermediateDirectories: true)
        dataDir = self.dir.appendingPathComponent("data")
        socket = self.dir.appendingPathComponent("run/recd.sock").path
        logFile = self.dir.appendingPathComponent("recd.log")
        self.environment = environment
        self.extraArgs = ["--capture-device", captureDevice] + extraArgs
    }

    /// Transcription off unless a test asks for it (`--transcribe`, `--transcriber`): every import and
    /// save would otherwise start Whisper beside the test (TranscriptTests test it).
    var arguments: [String] {
        let transcription = extraArgs.contains { $0 == "--transcribe" || $0 == "--transcriber" } ? [] : ["--transcribe", "off"]
        return ["--data-dir", dataDir.path, "--socket", socket, "--log-level", "debug"] + transcription + extraArgs
    }

    /// Starts recd and waits until its socket answers.
    func start(file: StaticString = #filePath, line: UInt = #line) throws {
        try start(arguments: arguments, file: file, line: line)
    }

    /// Starts recd without `option` (and its value), e.g. to let an environment variable decide.
    func startWithout(option: String, file: StaticString = #filePath, line: UInt = #line) throws {
        var args = arguments
        if let i = args.firstIndex(of: option) { args.removeSubrange(i...min(i + 1, args.count - 1)) }
        try start(arguments: args, file: file, line: line)
    }

    private func start(arguments: [String], file: StaticString, line: UInt) throws {
        // A second recd would be refused its data directory, and the first one's answer taken for its.
        if process?.isRunning == true {
            XCTFail("recd is already running: stop it first", file: file, line: line)
            throw NSError(domain: "recd-tests", code: 5)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tools.recd)
        p.arguments = arguments
        p.environment = environment
        if !FileManager.default.fileExists(atPath: logFile.path) { _ = FileManager.default.createFile(atPath: logFile.path, contents: nil) }
        let log = try FileHandle(forWritingTo: logFile)
        log.seekToEndOfFile()
        p.standardOutput = log
        p.standardError = log
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        for _ in 0..<300 {
            if let r = try? Tools.run(Tools.recctl, ["--socket", socket, "status"], environment: environment), r.status == 0 { return }
            if !p.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("recd did not start: \(self.log)", file: file, line: line)
        throw NSError(domain: "recd-tests", code: 4)
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// SIGTERM, as systemd stops it: recd must end with status 0 (a unit that exits 1 is "failed").
    func stop(file: StaticString = #filePath, line: UInt = #line) {
        guard let p = process else { return }
        if p.isRunning {
            p.terminate()
            let deadline = Date().addingTimeInterval(10)
            while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if p.isRunning {
                kill(p.processIdentifier, SIGKILL)
                p.waitUntilExit()
                XCTFail("recd did not stop within 10 s of SIGTERM: \(log.suffix(3000))", file: file, line: line)
            } else if p.terminationReason != .exit || p.terminationStatus != 0 {
                XCTFail("recd ended with \(p.terminationReason == .exit ? "exit" : "signal") \(p.terminationStatus) on SIGTERM: \(log.suffix(3000))",
                        file: file, line: line)
            }
        }
        process = nil
    }

    func kill9() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        process = nil
    }

    func cleanUp(file: StaticString = #filePath, line: UInt = #line) {
        stop(file: file, line: line)
        try? FileManager.default.removeItem(at: dir)
    }

    /// Runs recctl against this daemon.
    @discardableResult
    func recctl(_ args: String..., cwd: String? = nil) throws -> ProcessResult {
        try recctl(args, cwd: cwd)
    }

    @discardableResult
    func recctl(_ args: [String], cwd: String? = nil) throws -> ProcessResult {
        try Tools.run(Tools.recctl, ["--socket", socket] + args, environment: environment, cwd: cwd)
    }

    /// Runs recctl with --json and decodes its output; fails the test if it exits non-zero.
    func recctlJSON<T: Decodable>(_ type: T.Type, _ args: String..., file: StaticString = #filePath, line: UInt = #line) throws -> T {
        let r = try recctl(["--json"] + args)
        XCTAssertEqual(r.status, 0, "recctl \(args) failed: \(r.stdout) \(r.stderr)", file: file, line: line)
        return try APIJSON.decoder().decode(T.self, from: r.stdoutData)
    }

    /// A raw HTTP request with curl through the socket: (status code, body).
    func curl(_ method: String, _ path: String, body: String? = nil) throws -> (Int, String) {
        let out = dir.appendingPathComponent("curl-\(UUID().uuidString.prefix(6))")
        var args = ["-s", "-o", out.path, "-w", "%{http_code}", "--unix-socket", socket, "-X", method,
                    "http://recd\(path)"]
        if let body {
            let bodyFile = dir.appendingPathComponent("body-\(UUID().uuidString.prefix(6))")
            try body.write(to: bodyFile, atomically: true, encoding: .utf8)
            args += ["-H", "Content-Type: application/json", "--data-binary", "@" + bodyFile.path]
        }
        let r = try Tools.run("curl", args)
        let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        return (Int(r.stdout) ?? 0, text)
    }

    func path(of r: Recording) -> String { dataDir.appendingPathComponent(r.file).path }
}

/// What a decoded audio file sounds like (decoded by the ffmpeg CLI, independent of recd's own code).
struct AudioAnalysis {
    var duration: Double
    var rms: Double
    var peak: Double
    /// Estimated from upward zero crossings, counted with hysteresis (from below −10% of the peak to
    /// above +10%): the encoder's noise around zero in a silent stretch (a paced source that
    /// underran on a loaded machine) is not taken for a tone of a kilohertz.
    var frequency: Double

    static func of(_ file: String, skipSeconds: Double = 0.1) throws -> AudioAnalysis {
        let raw = NSTemporaryDirectory() + "recd-analysis-\(UUID().uuidString).raw"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", file, "-ac", "1", "-ar", "48000",
                                         "-f", "s16le", "-y", raw])
        guard r.status == 0 else { throw NSError(domain: "recd-tests", code: 5, userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        let samples: [Int16] = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let skip = min(samples.count, Int(skipSeconds * 48000))
        let body = samples[skip..<max(skip, samples.count - skip)]
        var sum = 0.0, peak = 0.0, crossings = 0
        for s in body {
            let v = Double(s) / 32768
            sum += v * v
            peak = max(peak, abs(v))
        }
        let threshold = peak / 10
        var below = false
        for s in body {
            let v = Double(s) / 32768
            if v < -threshold { below = true } else if below && v > threshold { crossings += 1; below = false }
        }
        let n = Double(max(1, body.count))
        return AudioAnalysis(duration: Double(samples.count) / 48000, rms: (sum / n).squareRoot(), peak: peak,
                             frequency: Double(crossings) / (n / 48000))
    }
}

enum Probe {
    /// ffprobe's view: (codec name, container duration in seconds).
    static func audio(_ file: String) throws -> (codec: String, duration: Double?, formatName: String) {
        let r = try Tools.run("ffprobe", ["-v", "error", "-show_entries", "format=duration,format_name:stream=codec_name",
                                          "-of", "default=noprint_wrappers=1", file])
        var codec = "", duration: Double?, format = ""
        for line in r.stdout.split(separator: "\n") {
            let kv = line.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { continue }
            switch kv[0] {
            case "codec_name": codec = kv[1]
            case "duration": duration = Double(kv[1])
            case "format_name": format = kv[1]
            default: break
            }
        }
        return (codec, duration, format)
    }
}

/// A test tone as a WAV file (sox), cached per run.
enum Tones {
    static func sine(frequency: Int = 1000, amplitude: Double = 0.5, seconds: Int = 30, channels: Int = 1) throws -> String {
        let path = NSTemporaryDirectory() + "recd-tone-\(frequency)-\(amplitude)-\(seconds)-\(channels).wav"
        if FileManager.default.fileExists(atPath: path) { return path }
        let tmp = path + ".\(getpid()).tmp.wav"
        let r = try Tools.run("sox", ["-n", "-r", "48000", "-c", String(channels), "-b", "16", tmp, "synth", String(seconds),
                                      "sine", String(frequency), "vol", String(amplitude)])
        guard r.status == 0 else { throw NSError(domain: "recd-tests", code: 6, userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
        try? FileManager.default.moveItem(atPath: tmp, toPath: path)
        return path
    }
}

/// Records what is played into the `speaker` sink, from its monitor (parec, 48 kHz mono S16).
/// The monitor of a null sink delivers its first data up to ~1 s after parec connects, so `init`
/// waits for that: everything played after `init` returns is captured.
final class SpeakerMonitor {
    private let process = Process()
    private let file: URL

    init(_ pulse: PulseAudioServer) throws {
        file = pulse.runtimeDir.appendingPathComponent("monitor-\(UUID().uuidString.prefix(6)).raw")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: Tools.which("parec") ?? "/usr/bin/parec")
        process.arguments = ["-d", "speaker.monitor", "--rate=48000", "--channels=1", "--format=s16le", "--raw"]
        process.environment = pulse.environment
        process.standardOutput = try FileHandle(forWritingTo: file)
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if let size = try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber, size.intValue > 0 {
                Thread.sleep(forTimeInterval: 0.3)
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw NSError(domain: "recd-tests", code: 7, userInfo: [NSLocalizedDescriptionKey: "parec delivered nothing from speaker.monitor"])
    }

    /// Stops recording and returns what was heard.
    func stop() throws -> HeardAudio {
        process.terminate()
        process.waitUntilExit()
        let data = try Data(contentsOf: file)
        try? FileManager.default.removeItem(at: file)
        return HeardAudio(samples: data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) })
    }
}

/// Audio captured from a monitor, 48 kHz mono.
struct HeardAudio {
    let samples: [Int16]
    static let rate = 48_000.0

    /// Spans (seconds) where something is heard: 10 ms windows above `threshold` (full scale),
    /// joined across silences shorter than `gap` seconds.
    func sounding(threshold: Double = 0.02, gap: Double = 0.08) -> [ClosedRange<Double>] {
        let window = 480
        var spans: [ClosedRange<Double>] = []
        var i = 0
        while i + window <= samples.count {
            let peak = samples[i..<(i + window)].reduce(0) { max($0, abs(Int($1))) }
            if Double(peak) / 32768 > threshold {
                let t0 = Double(i) / Self.rate, t1 = Double(i + window) / Self.rate
                if let last = spans.last, t0 - last.upperBound <= gap {
                    spans[spans.count - 1] = last.lowerBound...t1
                } else {
                    spans.append(t0...t1)
                }
            }
            i += window
        }
        return spans
    }

    /// Frequency (upward zero crossings) and RMS between two times (seconds).
    func tone(from t0: Double, to t1: Double) -> (frequency: Double, rms: Double) {
        let a = max(0, Int(t0 * Self.rate)), b = min(samples.count, Int(t1 * Self.rate))
        guard b > a + 1 else { return (0, 0) }
        var crossings = 0, sum = 0.0
        for k in a..<b {
            let v = Double(samples[k]) / 32768
            sum += v * v
            if k > a && samples[k - 1] < 0 && samples[k] >= 0 { crossings += 1 }
        }
        let seconds = Double(b - a) / Self.rate
        return (Double(crossings) / seconds, (sum / Double(b - a)).squareRoot())
    }
}

/// `recctl events` running in the background: the event stream as the client prints it.
final class EventListener {
    private let process = Process()
    private let file: URL

    init(_ daemon: Daemon, types: [EventType] = []) throws {
        file = daemon.dir.appendingPathComponent("events-\(UUID().uuidString.prefix(6)).jsonl")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: Tools.recctl)
        process.arguments = ["--socket", daemon.socket, "events"] + types.flatMap { ["--type", $0.rawValue] }
        process.environment = daemon.environment
        process.standardOutput = try FileHandle(forWritingTo: file)
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Subscribed once the daemon counts it; a short wait is enough on a local socket.
        Thread.sleep(forTimeInterval: 0.3)
    }

    /// The events received so far.
    func events() throws -> [RecdEvent] {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try APIJSON.decoder().decode(RecdEvent.self, from: Data($0.utf8)) }
    }

    func stop() { if process.isRunning { process.terminate(); process.waitUntilExit() } }
    deinit { stop() }
}
