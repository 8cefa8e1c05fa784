// recd on a real ALSA kernel driver (snd-aloop) inside a throw-away VM (scripts/vm):
// what PulseAudio cannot show — hw: devices and real overruns (EPIPE) with their recovery.
import Foundation
import RecdAPI
import XCTest

/// Runs a script of Tests/vm inside the throw-away VM of scripts/vm with a folder the script writes
/// its results into. Skips (with the reason printed) only where the VM scripts are not there.
enum VMRun {
    static let runInVM = Tools.packageRoot.appendingPathComponent("scripts/vm/run-in-vm.sh").path

    /// Returns the results folder (removed by the caller) and the run; `tone` is a 1 kHz sine of
    /// `toneSeconds` at half scale, passed to the script after RECD RECCTL OUTDIR. `binaries`: the
    /// folder of recd, recd-media and recctl to run (default: the build under test).
    static func run(_ script: String, modules: String, toneSeconds: Int, timeout: Int = 600, binaries: String? = nil,
                    prepare: (URL) throws -> Void = { _ in }) throws -> (URL, ProcessResult) {
        guard FileManager.default.isExecutableFile(atPath: runInVM) else {
            throw Skip.because("no \(runInVM): the VM scripts of this repository are missing")
        }
        let out = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-vm-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let tone = out.appendingPathComponent("tone.wav").path
        XCTAssertEqual(try Tools.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", String(toneSeconds),
                                             "sine", "1000", "vol", "0.5"]).status, 0)
        try prepare(out)
        var env = ProcessInfo.processInfo.environment
        env["VM_RW"] = out.path
        env["VM_MODULES"] = modules
        env["VM_TIMEOUT"] = String(timeout - 60)
        env["VM_TIMING"] = "1"
        let path = Tools.packageRoot.appendingPathComponent("Tests/vm/\(script)").path
        let (recd, recctl) = binaries.map { ("\($0)/recd", "\($0)/recctl") } ?? (Tools.recd, Tools.recctl)
        let run = try Tools.run(runInVM, [path, recd, recctl, out.path, tone], environment: env, timeout: Double(timeout))
        print(timing(script, run, trace: out.appendingPathComponent("trace.txt")))
        if run.status == 125 {
            // run-in-vm.sh's own status: the guest could not start or run the command (a module did
            // not load, the guest crashed). Not recd's failure: skipped, with the console's last lines.
            try? FileManager.default.removeItem(at: out)
            print("SKIPPED \(script): the VM could not start: \(run.stdout)\n\(run.stderr)")
            throw XCTSkip("the VM could not start (run-in-vm.sh exit 125): \(run.stderr.suffix(2000))")
        }
        return (out, run)
    }

    /// Where a guest's time went, for the log (the suite's time goal): run-in-vm.sh's boot and run
    /// times, and the script's slowest steps by the guest's clock (each traced command until the next).
    static func timing(_ script: String, _ run: ProcessResult, trace: URL, steps: Int = 8) -> String {
        let boot = run.stderr.split(separator: "\n").last { $0.hasPrefix("vm: accel=") } ?? "vm: no timing"
        let lines = ((try? String(contentsOf: trace, encoding: .utf8)) ?? "").split(separator: "\n")
        let traced = lines.compactMap { line -> (Double, Substring)? in
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, parts[0].allSatisfy({ $0 == "+" }), let t = Double(parts[1]) else { return nil }
            return (t, parts[2])
        }
        guard let first = traced.first, let last = traced.last else { return "\(script): \(boot)" }
        let slowest = zip(traced, traced.dropFirst()).map { ($1.0 - $0.0, $0.1) }.sorted { $0.0 > $1.0 }.prefix(steps)
        return "\(script): \(boot); traced \(String(format: "%.1f", last.0 - first.0)) s; slowest steps:\n"
            + slowest.map { String(format: "  %6.2f s  ", $0.0) + $0.1.prefix(140) }.joined(separator: "\n")
    }

    static func log(_ out: URL, _ names: String...) -> String {
        names.map { name in "--- \(name):\n" + ((try? String(contentsOf: out.appendingPathComponent(name), encoding: .utf8)) ?? "(none)") }
            .joined(separator: "\n")
    }
}

final class KernelDriverTests: XCTestCase {
    /// Any microphone: a device held to 44.1 kHz stereo S32_LE, one at 96 kHz and a mono-only one are
    /// opened as they are and converted to the recording's format; pitch and level are kept. The
    /// converter's worker stopped for 3 s mid-take loses nothing: capture never waits for it.
    func testRecordingFromDevicesThatDoNotOfferTheRecordingsFormat() throws {
        let amplitude = 0.5012   // -6 dBFS: a sine's RMS is then -9 dBFS
        // 60 s of tone for takes meant to last 3-6 s: a guest starved by a loaded host ran them for up to
        // 40 s (each recctl call and sleep slowed), and a take that outlasts its tone ends in silence,
        // which reads as a lower level (-10.1 dBFS for -9 in CI) and pitch.
        let (out, run) = try VMRun.run("aloop-formats.sh", modules: "snd-aloop", toneSeconds: 1) { out in
            for (name, rate, channels, bits) in [("s32-44k-stereo", 44100, 2, 32), ("s16-96k-stereo", 96000, 2, 16),
                                                ("s16-48k-mono", 48000, 1, 16)] {
                let r = try Tools.run("sox", ["-n", "-r", String(rate), "-c", String(channels), "-e", "signed", "-b", String(bits),
                                              out.appendingPathComponent("\(name).wav").path, "synth", "60", "sine", "440",
                                              "vol", String(amplitude)])
                XCTAssertEqual(r.status, 0, r.stderr)
            }
        }
        defer { try? FileManager.default.removeItem(at: out) }
        XCTAssertEqual(run.status, 0, "VM run failed: \(run.stdout)\n\(run.stderr)\n\(VMRun.log(out, "recd.log"))")
        guard run.status == 0 else { return }
        // `recctl devices`: what a person can record from, each probed; no plugin building blocks.
        let devices = try APIJSON.decoder().decode(DeviceList.self, from: Data(contentsOf: out.appendingPathComponent("devices.json")))
        let names = devices.audio.map(\.device)
        XCTAssertTrue(names.contains { $0.hasPrefix("hw:CARD=Loopback") }, "\(names)")
        XCTAssertTrue(names.contains { $0.hasPrefix("plughw:CARD=Loopback") }, "\(names)")
        XCTAssertFalse(names.contains { $0.hasPrefix("dsnoop") || $0.contains("speex") || $0.contains("upmix") || $0.contains("lavrate") || $0.contains("samplerate") }, "\(names)")
        let hw = try XCTUnwrap(devices.audio.first { $0.device.hasPrefix("hw:CARD=Loopback,DEV=1") })
        XCTAssertTrue(hw.capabilities?.formats.contains("S16_LE") == true, "\(hw)")
        let minus9 = 0.5012 / 2.0.squareRoot()
        var unstalled: CaptureStats?   // stereo44k's: the stalled take's format, without the stall
        for (name, device, channels) in [("stereo44k", AudioFormatInfo(sampleFormat: "S32_LE", sampleRate: 44100, channels: 2), 1),
                                         ("stall44k", AudioFormatInfo(sampleFormat: "S32_LE", sampleRate: 44100, channels: 2), 1),
                                         ("rate96k", AudioFormatInfo(sampleFormat: "S16_LE", sampleRate: 96000, channels: 2), 1),
                                         ("mono", AudioFormatInfo(sampleFormat: "S16_LE", sampleRate: 48000, channels: 1), 2)] {
            let start = try APIJSON.decoder().decode(StartRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("\(name).json")))
            XCTAssertEqual(start.deviceFormat, device, name)
            XCTAssertEqual(start.recordedFormat, AudioFormatInfo(sampleFormat: "S16_LE", sampleRate: 48000, channels: channels), name)
            let status = try String(contentsOf: out.appendingPathComponent("\(name).status.txt"), encoding: .utf8)
            XCTAssertTrue(status.contains("the device delivers \(device.sampleRate) Hz"), "\(name): \(status)")
            let file = out.appendingPathComponent("\(name).m4a").path
            let perChannel = try ChannelLevels.of(file, channels: channels)
            XCTAssertEqual(perChannel.count, channels, name)
            for (c, level) in perChannel.enumerated() {
                XCTAssertEqual(level.frequency, 440, accuracy: 5, "\(name) channel \(c)")
                XCTAssertEqual(level.rms, minus9, accuracy: 0.02, "\(name) channel \(c): \(20 * log10(level.rms)) dBFS")
            }
            let stop = try APIJSON.decoder().decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("\(name).stop.json")))
            // The file holds what was captured less what recd counted as lost. A guest starved by a loaded
            // host (CI: a take meant for 3 s ran 17 s) can fall behind in encoding for longer than the
            // rings between capture and the media worker hold: those frames are dropped and counted, and
            // the file is that much shorter (1.6 s of 17 in CI). An overrun's frames were never captured,
            // so with overruns the count of lost frames bounds the file from below only.
            let fileSeconds = try XCTUnwrap(Probe.audio(file).duration)
            let captured = Double(stop.capture.framesCaptured) / 48000, lost = Double(stop.capture.droppedFrames) / 48000
            print("\(name): a file of \(fileSeconds) s; \(stop.capture)")
            if stop.capture.overruns == 0 {
                XCTAssertEqual(fileSeconds, captured - lost, accuracy: 0.15, "\(name): \(stop.capture)")
            } else {
                XCTAssertGreaterThan(fileSeconds, captured - lost - 0.15, "\(name): \(stop.capture)")
                XCTAssertLessThan(fileSeconds, captured + 0.15, "\(name): \(stop.capture)")
            }
            XCTAssertGreaterThan(fileSeconds, 2, "\(name): the take lasted its 2.5 s at least (\(stop.capture))")
            if name == "stall44k" {
                let stopped = try String(contentsOf: out.appendingPathComponent("stall44k.stopped.txt"), encoding: .utf8)
                XCTAssertTrue(stopped.contains("recd-media") && stopped.contains("State:\tT"), stopped)
                // Nothing lost to the stopped worker: no overrun (capture never waits for it), and
                // nothing dropped where the same take without the stall dropped nothing. (A guest that
                // a loaded host starves below real time loses frames in every take, counted: then the
                // stall may cost no more than a tenth more of the take than the load did.)
                XCTAssertEqual(stop.capture.overruns, 0, "\(stop.capture)")
                let before = try XCTUnwrap(unstalled)
                if before.droppedFrames == 0 {
                    XCTAssertEqual(stop.capture.droppedFrames, 0, "\(stop.capture)")
                } else {
                    let share = { (c: CaptureStats) in Double(c.droppedFrames) / Double(max(1, c.framesCaptured)) }
                    XCTAssertLessThan(share(stop.capture), share(before) + 0.1, "stalled: \(stop.capture); without the stall: \(before)")
                }
                XCTAssertGreaterThan(try XCTUnwrap(Probe.audio(file).duration), 5.0, "the take went on through the stall")
            }
            if name == "stereo44k" { unstalled = stop.capture }
            let maps = try String(contentsOf: out.appendingPathComponent("\(name).ffmpeg-maps.txt"), encoding: .utf8)
            XCTAssertEqual(maps.trimmingCharacters(in: .whitespacesAndNewlines), "0", "\(name): FFmpeg is mapped in recd (it belongs in its media workers)")
            let workerMaps = try String(contentsOf: out.appendingPathComponent("\(name).worker-ffmpeg-maps.txt"), encoding: .utf8)
            XCTAssertGreaterThanOrEqual(Int(workerMaps.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 5,
                                        "\(name): the recording's media worker maps FFmpeg (\(workerMaps))")
        }
    }

    func testRecordingFromSndAloopAndRecoveringAnOverrun() throws {
        // The tone outlasts the script however slow the emulated guest is (two guests at once on a
        // loaded host stretched it past 30 s: the overrun take was half silence).
        let (out, run) = try VMRun.run("aloop-record.sh", modules: "snd-aloop", toneSeconds: 120)
        defer { try? FileManager.default.removeItem(at: out) }
        XCTAssertEqual(run.status, 0, "VM run failed: \(run.stdout)\n\(run.stderr)\n\(VMRun.log(out, "recd.log"))")
        guard run.status == 0 else { return }

        // A clean recording from hw:Loopback,1,0: the tone, no overrun, duration = frames captured.
        let clean = try APIJSON.decoder().decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("clean.json")))
        XCTAssertEqual(clean.capture.overruns, 0)
        XCTAssertEqual(clean.capture.droppedFrames, 0)
        let cleanFile = out.appendingPathComponent("clean.m4a").path
        let sound = try AudioAnalysis.of(cleanFile)
        XCTAssertEqual(sound.frequency, 1000, accuracy: 10)
        XCTAssertEqual(sound.rms, 0.5 / 2.0.squareRoot(), accuracy: 0.04)
        XCTAssertEqual(try XCTUnwrap(Probe.audio(cleanFile).duration), Double(clean.capture.framesCaptured) / 48000, accuracy: 0.1)

        // The daemon was frozen 1.5 s with a 0.5 s device buffer: one overrun, about 1 s lost,
        // recovered, and the recording went on and finished as a playable file.
        let overrun = try APIJSON.decoder().decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("overrun.json")))
        XCTAssertGreaterThanOrEqual(overrun.capture.overruns, 1)
        let lostSeconds = Double(overrun.capture.droppedFrames) / 48000
        XCTAssertGreaterThan(lostSeconds, 0.7, "frames lost in the overrun: \(overrun.capture)")
        XCTAssertLessThan(lostSeconds, 2.5, "frames lost in the overrun: \(overrun.capture)")
        XCTAssertEqual(overrun.recording?.droppedFrames, Int(overrun.capture.droppedFrames))
        let overrunFile = out.appendingPathComponent("overrun.m4a").path
        let check = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", overrunFile, "-f", "null", "-"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(try AudioAnalysis.of(overrunFile).frequency, 1000, accuracy: 10)
    }
}

/// Frequency and RMS of each channel of a file, decoded by ffmpeg at 48 kHz (the first and last 0.2 s
/// left out: the device's start and the encoder's edges). The frequency is the tone's pitch where it
/// sounds: upward zero crossings in each 0.5 s window, the median window. A count over the whole file
/// is lowered by a gap in what the loopback carried (a starved guest's player underran, with recd
/// counting no lost frame: 428 Hz for 440 in CI); a wrong rate or a conversion error moves every window.
enum ChannelLevels {
    static func of(_ file: String, channels: Int) throws -> [(frequency: Double, rms: Double)] {
        let raw = NSTemporaryDirectory() + "recd-channels-\(UUID().uuidString).raw"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", file, "-ar", "48000", "-f", "s16le", "-acodec", "pcm_s16le", raw])
        guard r.status == 0 else { throw NSError(domain: "recd-tests", code: 20, userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        let samples: [Int16] = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let frames = samples.count / channels, skip = 9600
        guard frames > 2 * skip + 4800 else { return [] }
        let window = 24_000   // 0.5 s: a crossing more or less is 2 Hz
        return (0..<channels).map { c in
            var sum = 0.0, crossings = 0
            var perWindow: [Double] = []
            var previous = samples[skip * channels + c]
            for f in skip..<(frames - skip) {
                let v = samples[f * channels + c]
                sum += Double(v) * Double(v) / (32768 * 32768)
                if previous < 0 && v >= 0 { crossings += 1 }
                previous = v
                if (f - skip + 1) % window == 0 {
                    perWindow.append(Double(crossings) * 48000 / Double(window))
                    crossings = 0
                }
            }
            let n = Double(frames - 2 * skip)
            let sorted = perWindow.sorted()
            return (sorted.isEmpty ? 0 : sorted[sorted.count / 2], (sum / n).squareRoot())
        }
    }
}
