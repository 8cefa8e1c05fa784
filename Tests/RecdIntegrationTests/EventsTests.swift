// Meter levels through the real capture path, the event stream, and stored waveforms.
import Foundation
import RecdAPI
import XCTest

/// A sine at `amplitudes` per channel (of full scale), as a WAV for paplay.
func levelTone(_ amplitudes: [Double], seconds: Int = 30) throws -> String {
    let path = NSTemporaryDirectory() + "recd-level-\(amplitudes.map { String($0) }.joined(separator: "_"))-\(seconds).wav"
    if FileManager.default.fileExists(atPath: path) { return path }
    let tmp = path + ".\(getpid()).tmp.wav"
    // sox's sine is full scale; `remix` sets each channel's gain.
    let remix = amplitudes.enumerated().map { "1v\($0.element)" }
    let r = try Tools.run("sox", ["-n", "-r", "48000", "-c", String(amplitudes.count), "-b", "16", tmp, "synth",
                                  String(seconds), "sine", "1000", "remix"] + remix)
    guard r.status == 0 else { throw NSError(domain: "recd-tests", code: 11, userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
    try? FileManager.default.moveItem(atPath: tmp, toPath: path)
    return path
}

extension RecdEvent {
    var meter: MeterEvent? { if case .meter(let m) = payload { return m } else { return nil } }
}

final class MeterEventTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    func testMinus6dBSineReadsMinus6PeakMinus9RMSInOrderAtTheInterval() throws {
        try pulse.play(try levelTone([0.5012]))   // -6 dBFS
        let listener = try EventListener(daemon, types: [.meter, .recordingStarted, .recordingStopped])
        let stop = try record(seconds: 2.5, stopArgs: ["--save"])
        Thread.sleep(forTimeInterval: 0.3)
        let events = try listener.events()
        listener.stop()
        let r = try XCTUnwrap(stop.recording)

        // In order: started, meters, stopped; seq strictly rising.
        XCTAssertEqual(events.first?.type, .recordingStarted)
        XCTAssertEqual(events.last?.type, .recordingStopped)
        XCTAssertEqual(events.map(\.seq), events.map(\.seq).sorted())
        XCTAssertEqual(Set(events.map(\.seq)).count, events.count)
        let meters = events.compactMap(\.meter)
        XCTAssertTrue(meters.allSatisfy { $0.source == .recording && $0.recordingID == r.id && $0.intervalMs == 50 })
        XCTAssertEqual(meters.map(\.time), meters.map(\.time).sorted())

        // The rate: one per 50 ms of audio, and (wall clock) within 10% of 20 per second.
        let meterEvents = events.filter { $0.type == .meter }
        let span = try XCTUnwrap(meterEvents.last).at.timeIntervalSince(try XCTUnwrap(meterEvents.first).at)
        let rate = Double(meterEvents.count - 1) / span
        XCTAssertEqual(rate, 20, accuracy: 2, "meters per second")
        XCTAssertEqual(try XCTUnwrap(meters.last).time, Double(meters.count) * 0.05, accuracy: 0.001)

        // Accuracy: the steady part (skip the device's start-up and the last interval).
        let steady = meters.dropFirst(10).dropLast(2)
        XCTAssertGreaterThan(steady.count, 20)
        for m in steady {
            XCTAssertEqual(m.channels.count, 1)
            XCTAssertEqual(m.channels[0].peak, -6.0, accuracy: 0.2)
            XCTAssertEqual(m.channels[0].rms, -9.0, accuracy: 0.2)
            XCTAssertEqual(m.channels[0].decay, -6.0, accuracy: 0.2)
        }

        // The stored waveform against the finished file, decoded by the ffmpeg CLI: within one
        // 8-bit step per pixel (and the JSON obeys audiowaveform's field rules).
        let (code, body) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/waveform")
        XCTAssertEqual(code, 200, body)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(json["version"] as? Int, 2)
        XCTAssertEqual(json["bits"] as? Int, 8)
        XCTAssertEqual(json["channels"] as? Int, 1)
        XCTAssertEqual(json["sample_rate"] as? Int, 48000)
        XCTAssertEqual(json["samples_per_pixel"] as? Int, 256)
        let length = try XCTUnwrap(json["length"] as? Int)
        let data = try XCTUnwrap(json["data"] as? [Int])
        XCTAssertEqual(data.count, 2 * length * 1)
        let decoded = try decodedSamples(daemon.path(of: r))
        let pixels = min(length, decoded.count / 256) - 1
        XCTAssertGreaterThan(pixels, 300)
        // AAC is lossy: at a transient (the tone's onset) the decoded file overshoots (pre-echo) by a
        // few steps; everywhere else the file and the waveform agree within one step.
        var within = 0, worst = 0
        for p in 0..<pixels {
            let block = decoded[(p * 256)..<((p + 1) * 256)]
            let lo = Int(block.min()!) / 256, hi = Int(block.max()!) / 256
            let d = max(abs(lo - data[2 * p]), abs(hi - data[2 * p + 1]))
            worst = max(worst, d)
            if d <= 1 { within += 1 }
        }
        XCTAssertGreaterThanOrEqual(Double(within) / Double(pixels), 0.98, "pixels within one 8-bit step (worst: \(worst))")
        XCTAssertLessThanOrEqual(worst, 12)
        // Zoomed out to 100 pixels, and 16-bit on request.
        let (_, zoomed) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/waveform?pixels=100&bits=16")
        let z = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(zoomed.utf8)) as? [String: Any])
        XCTAssertLessThanOrEqual(try XCTUnwrap(z["length"] as? Int), 100)
        XCTAssertEqual(z["bits"] as? Int, 16)
        XCTAssertEqual(Double(try XCTUnwrap((z["data"] as? [Int])?.max())), 0.5012 * 32768, accuracy: 600)
    }

    /// The heartbeat runs only while a client listens (an idle recd does not wake for it); a client
    /// that connects to an idle recd still gets one every 15 s.
    func testAClientOfAnIdleDaemonGetsHeartbeats() throws {
        Thread.sleep(forTimeInterval: 1)   // idle, nobody listening: the heartbeat service waits
        let r = try Tools.run("curl", ["-s", "-N", "--max-time", "17", "--unix-socket", daemon.socket, "http://recd/v1/events"],
                              timeout: 30)
        XCTAssertEqual(r.status, 28, "curl ends at its --max-time: \(r.stderr)")
        XCTAssertTrue(r.stdout.hasPrefix(": recd "), r.stdout)
        XCTAssertEqual(r.stdout.components(separatedBy: ": heartbeat\n\n").count - 1, 1, r.stdout)
    }

    func testSilenceReadsTheFloor() throws {
        let listener = try EventListener(daemon, types: [.meter])
        try record(seconds: 1.2)
        let meters = try listener.events().compactMap(\.meter)
        XCTAssertGreaterThan(meters.count, 10)
        for m in meters.dropFirst(2) {
            XCTAssertEqual(m.channels[0].peak, -160)
            XCTAssertEqual(m.channels[0].rms, -160)
        }
    }

    func testAStalledClientDoesNotStallRecording() throws {
        try pulse.play(try levelTone([0.5012]))
        // A client that subscribes and never reads: its socket buffers fill, then its queue.
        let stalled = Process()
        stalled.executableURL = URL(fileURLWithPath: Tools.which("python3") ?? "/usr/bin/python3")
        stalled.arguments = ["-c", """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(sys.argv[1]); s.sendall(b"GET /v1/events HTTP/1.1\\r\\nHost: recd\\r\\n\\r\\n"); time.sleep(60)
            """, daemon.socket]
        try stalled.run()
        defer { stalled.terminate(); stalled.waitUntilExit() }
        let listener = try EventListener(daemon, types: [.meter, .recordingStopped])
        let stop = try record(seconds: 4)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(stop.capture.droppedFrames, 0)
        XCTAssertEqual(stop.capture.overruns, 0)
        let events = try listener.events()
        XCTAssertGreaterThan(events.compactMap(\.meter).count, 70, "a reading client still gets every meter")
        XCTAssertEqual(events.last?.type, .recordingStopped)
        XCTAssertEqual(try daemon.recctl("status").status, 0)
    }

    func testPlaybackMetersAndProgressFollowWhatIsHeard() throws {
        let dest = daemon.dataDir.appendingPathComponent("Recordings/audio_\(UUID().uuidString).m4a")
        try FileManager.default.copyItem(atPath: try TestMedia.twoTones(), toPath: dest.path)
        let report = try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair")
        let id = try XCTUnwrap(report.repaired?.adopted.first)
        // Adopted without a stored waveform: computed from the file on first request.
        let (code, body) = try daemon.curl("GET", "/v1/recordings/\(id.uuidString)/waveform?format=json")
        XCTAssertEqual(code, 200, body)
        let w = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(Double(try XCTUnwrap(w["length"] as? Int)), 4.0 * 48000 / 256, accuracy: 10)
        let maxima = try XCTUnwrap(w["data"] as? [Int]).enumerated().filter { $0.offset % 2 == 1 }.map(\.element).sorted()
        XCTAssertEqual(Double(maxima[maxima.count / 2]), 64, accuracy: 2)   // 0.5 of full scale in 8 bits (median pixel)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(id.uuidString)/waveform?bits=12").0, 422)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(id.uuidString)/waveform?samples_per_pixel=10").0, 422)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(id.uuidString)/waveform?pixels=0").0, 422)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(id.uuidString)/waveform?format=png").0, 400)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(UUID().uuidString)/waveform").0, 404)

        let listener = try EventListener(daemon, types: [.meter, .playbackStarted, .playbackProgress, .playbackEnded])
        let played = try daemon.recctl("play", id.uuidString, "--wait")
        XCTAssertEqual(played.status, 0, played.stderr)
        Thread.sleep(forTimeInterval: 0.3)
        let events = try listener.events()
        XCTAssertEqual(events.first?.type, .playbackStarted)
        XCTAssertEqual(events.last?.type, .playbackEnded)
        let progress = events.compactMap { e -> PlaybackProgressEvent? in
            if case .playbackProgress(let p) = e.payload { return p } else { return nil }
        }
        XCTAssertGreaterThan(progress.count, 8, "about four a second over 4 s")
        XCTAssertEqual(progress.map(\.position), progress.map(\.position).sorted())
        let meters = events.compactMap(\.meter)
        XCTAssertTrue(meters.allSatisfy { $0.source == .playback && $0.recordingID == id })
        XCTAssertEqual(Double(meters.count), 4.0 / 0.05, accuracy: 6)
        // The tone at 0.5 of full scale: -6 dBFS peak.
        let middle = meters.filter { $0.time > 0.5 && $0.time < 3.5 }
        XCTAssertGreaterThan(middle.count, 40)
        for m in middle { XCTAssertEqual(m.channels[0].peak, -6.0, accuracy: 0.5) }
    }

    /// The file decoded by the ffmpeg CLI to mono S16.
    func decodedSamples(_ file: String) throws -> [Int16] {
        let raw = daemon.dir.appendingPathComponent("decoded.raw").path
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", file, "-f", "s16le", "-ac", "1", "-y", raw])
        XCTAssertEqual(r.status, 0, r.stderr)
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }
}

final class StereoMeterTests: DaemonTestCase {
    override func setUpWithError() throws {
        pulse = try PulseAudioServer(micChannels: 2)
        daemon = try Daemon(environment: pulse.environment, extraArgs: ["--channels", "2", "--meter-interval-ms", "100"])
        try daemon.start()
    }

    func testTwoChannelsAtDifferentLevelsAreToldApart() throws {
        try pulse.play(try levelTone([0.5012, 0.1]))   // -6 and -20 dBFS
        let listener = try EventListener(daemon, types: [.meter])
        try record(seconds: 2.5)
        let meters = try listener.events().compactMap(\.meter)
        XCTAssertTrue(meters.allSatisfy { $0.intervalMs == 100 })
        let steady = meters.dropFirst(6).dropLast(1)
        XCTAssertGreaterThan(steady.count, 8)
        for m in steady {
            XCTAssertEqual(m.channels.count, 2)
            XCTAssertEqual(m.channels[0].peak, -6.0, accuracy: 0.2)
            XCTAssertEqual(m.channels[1].peak, -20.0, accuracy: 0.2)
            XCTAssertEqual(m.channels[1].rms, -23.0, accuracy: 0.2)
        }
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        XCTAssertEqual(try daemon.recctl("record", "stop", "--discard").status, 0)
    }
}
