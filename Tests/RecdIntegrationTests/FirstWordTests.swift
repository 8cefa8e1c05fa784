// A take's first word (issue 36): capture starts at the request, before the media worker that
// writes the file, so however long that worker takes to start, the sound from the request on is in
// the file. The worker is made slow here on purpose: recd starts it through a wrapper that sleeps
// 2 s before it execs recd-media (`RECD_MEDIA_WORKER`), as an exec of FFmpeg's ~130 libraries from
// a cold SD card or under heavy load can take.
import Foundation
import RecdAPI
import XCTest

final class FirstWordTests: XCTestCase {
    var pulse: PulseAudioServer!
    var daemon: Daemon!

    override func setUpWithError() throws {
        pulse = try PulseAudioServer(micChannels: 2)
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-slow-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let slow = dir.appendingPathComponent("slow-recd-media").path
        let worker = URL(fileURLWithPath: Tools.recd).deletingLastPathComponent().appendingPathComponent("recd-media").path
        try Data("#!/bin/sh\nsleep 2\nexec \(worker) \"$@\"\n".utf8).write(to: URL(fileURLWithPath: slow))
        chmod(slow, 0o755)
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_MEDIA_WORKER": slow]) { $1 },
                            extraArgs: ["--channels", "2"], dir: dir)
        try daemon.start()
    }

    override func tearDown() {
        daemon?.cleanUp()
        pulse?.stop()
    }

    func testASlowWorkerLosesNoSoundFromTheStartRequestOn() throws {
        try pulse.play(try Tones.sine(frequency: 440, amplitude: 0.5), latencyMs: 40)   // 10 ms underran on a loaded machine (silent stretches in the mic)
        Thread.sleep(forTimeInterval: 3)   // the null sink's monitor delivers late while its first player starts
        let requested = Date()
        let start = try daemon.recctl("--json", "record", "start")
        XCTAssertEqual(start.status, 0, start.stderr)
        // The reply waited for the writer's worker (2 s and more); the sound did not.
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(requested), 2, "the worker was slow to start")
        Thread.sleep(forTimeInterval: 1)
        let stopAsked = Date()
        let stop = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop")
        let span = stopAsked.timeIntervalSince(requested)
        let recording = try XCTUnwrap(stop.recording)
        let duration = try XCTUnwrap(recording.duration)
        // Lost at the start: the row's insert, the device's open and its first period (tens of ms);
        // the stop's tail is kept. Before, the worker's 2 s were lost.
        XCTAssertGreaterThan(duration, span - 0.4, "file \(duration) s for \(span) s between start and stop requests\n\(daemon.log)")
        let started = try APIJSON.decoder().decode(StartRecordingResponse.self, from: start.stdoutData)
        XCTAssertLessThan(try XCTUnwrap(started.startLatencyMs), 1000, "the first buffer came before the worker was there")
        XCTAssertEqual(stop.capture.droppedFrames, 0, "the ring held the sound while the worker started")
        let analysis = try AudioAnalysis.of(daemon.dataDir.appendingPathComponent(recording.file).path)
        XCTAssertEqual(analysis.frequency, 440, accuracy: 20, "the tone is in the file")
    }
}
