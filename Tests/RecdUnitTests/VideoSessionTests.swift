// The video recording session behind its seams: a camera in memory (MemoryCamera), a microphone in
// memory (MemoryCaptureSource), and a real media worker writing the file (recd-media, as the daemon
// starts it). What V4L2 drivers and snd-aloop do is the VM's (VideoTests); what this session does
// with their frames — timing, sync, pauses, a lost camera, the poster — is checked here, in seconds.
import Capture
import Engine
import Foundation
import Logging
import Media
import MediaWire
import MediaWorker
import RecdAPI
import Storage
import Synchronization
import XCTest

/// The faults a session reported, in order.
final class FaultLog: Sendable { let said = Mutex<[String]>([]) }

final class VideoSessionTests: XCTestCase {
    var data: DataDirectory!

    override func setUpWithError() throws {
        let binary = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
            .map { $0.appendingPathComponent("recd-media").path }.first { FileManager.default.isExecutableFile(atPath: $0) }
        MediaWorkerPool.shared.configure(executable: try XCTUnwrap(binary, "recd-media is built beside the tests"),
                                         idleSeconds: 0, logLevel: "error")
        data = DataDirectory(root: FileManager.default.temporaryDirectory.appendingPathComponent("recd-video-\(UUID().uuidString)"))
        try data.create()
    }

    override func tearDown() { try? FileManager.default.removeItem(at: data.root) }

    /// Each stream's codec and duration, as ffprobe reads them.
    func streamDurations(_ path: String) throws -> [String: Double] {
        let p = Process(), out = Pipe()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        p.arguments = ["-v", "error", "-show_entries", "stream=codec_name,duration", "-of", "csv=p=0", path]
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return Dictionary(text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",")
            return f.count == 2 ? (String(f[0]), Double(f[1]) ?? 0) : nil
        }, uniquingKeysWith: { a, _ in a })
    }

    let h264 = VideoEncoding(width: 64, height: 48, fps: 15, preset: "ultrafast")

    /// A session of `camera` (and `microphone`), started; faults are collected in `faults`.
    func session(_ camera: MemoryCamera, microphone: MemoryCaptureSource? = nil, faults: FaultLog = FaultLog()) throws -> VideoRecordingSession {
        let path = data.recordings.appendingPathComponent("video_\(UUID().uuidString).mov").path
        let aac = AudioEncoding(codec: .aac, sampleRate: 48_000, channels: 1)
        let s = try VideoRecordingSession(path: path, camera: camera, fps: 15, video: h264,
                                          audio: microphone.map { ($0, aac) }, syncIntervalMs: 0,
                                          onFault: { error in faults.said.withLock { $0.append("\(error)") } })
        _ = try s.start()
        return s
    }

    func testASilentVideoKeepsEveryFrameAtTheCamerasRateAndItsFirstFrameAsPoster() throws {
        let camera = MemoryCamera()
        let s = try session(camera)
        XCTAssertEqual(s.video?.device, "memory-camera")
        XCTAssertEqual(s.video?.pixelFormat, "YU12")
        XCTAssertEqual([s.video?.width, s.video?.height], [64, 48])
        Thread.sleep(forTimeInterval: 1.2)
        let (stats, error) = s.stop()
        XCTAssertNil(error)
        // A loaded machine may hold all four buffers for a moment: the camera then drops a frame,
        // counted, and its time is kept in the file (as a driver's drops are).
        let frames = try XCTUnwrap(stats.videoFrames), dropped = try XCTUnwrap(stats.videoDroppedFrames)
        XCTAssertLessThanOrEqual(dropped, 3, "\(stats)")
        XCTAssertEqual(Double(frames + dropped), 18, accuracy: 4, "1.2 s at 15 fps")
        XCTAssertNil(s.audioFormats, "a silent video")
        let finished = s.finalize(data: data, logger: Logger(label: "recd.test.video"))
        let info = try MediaProbe.probe(s.path)
        XCTAssertEqual(info.streams.map(\.codec), ["h264"])
        XCTAssertEqual(try XCTUnwrap(finished.duration), Double(frames + dropped) / 15, accuracy: 0.1)
        XCTAssertEqual(Array(try XCTUnwrap(s.poster).prefix(2)), [0xFF, 0xD8], "a JPEG of the first frame")
    }

    func testSoundAndPictureCoverTheSameSpan() throws {
        let microphone = MemoryCaptureSource(samples: MemoryCaptureSource.tone(seconds: 4), periodFrames: 480, paced: true)
        let s = try session(MemoryCamera(), microphone: microphone)
        XCTAssertEqual(s.audioFormats?.recorded.sampleRate, 48_000)
        Thread.sleep(forTimeInterval: 1.5)
        let (stats, error) = s.stop()
        XCTAssertNil(error)
        XCTAssertGreaterThan(stats.framesCaptured, 48_000, "the sound was captured")
        _ = s.finalize(data: data, logger: Logger(label: "recd.test.video"))
        let streams = try streamDurations(s.path)
        XCTAssertEqual(Set(streams.keys), ["h264", "aac"])
        let (video, sound) = (try XCTUnwrap(streams["h264"]), try XCTUnwrap(streams["aac"]))
        XCTAssertEqual(video, sound, accuracy: 0.1, "both streams from the first frame to the stop: \(streams)")
        XCTAssertEqual(video, 1.5, accuracy: 0.35)
    }

    /// The camera unplugged mid-take: the fault is said with the device and the call, and the file
    /// keeps the frames that came before.
    func testALostCameraEndsTheTakeWithWhatCameBefore() throws {
        let faults = FaultLog()
        let s = try session(MemoryCamera(failAtFrame: 9), faults: faults)
        let deadline = Date().addingTimeInterval(5)
        while faults.said.withLock({ $0.isEmpty }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let said = faults.said.withLock { $0 }
        XCTAssertEqual(said.count, 1, "\(said)")
        XCTAssertTrue(said.first?.contains("memory-camera") == true && said.first?.contains("VIDIOC_DQBUF") == true, "\(said)")
        let (stats, _) = s.stop()
        XCTAssertEqual((stats.videoFrames ?? 0) + (stats.videoDroppedFrames ?? 0), 9, "the frames before it: \(stats)")
        _ = s.finalize(data: data, logger: Logger(label: "recd.test.video"))
        XCTAssertEqual(try MediaProbe.probe(s.path).streams.map(\.codec), ["h264"], "what came before is kept")
    }

    /// A paused silent video leaves the pause out of the file: its picture lasts what was recorded.
    func testAPauseIsLeftOutOfASilentVideo() throws {
        let s = try session(MemoryCamera())
        let started = Date()
        Thread.sleep(forTimeInterval: 0.8)
        let pausedAt = Date()
        s.setPaused(true)
        XCTAssertTrue(s.waitUntilPauseWritten(timeoutMs: 2000))
        Thread.sleep(forTimeInterval: 1.0)
        let resumedAt = Date()
        s.setPaused(false)
        Thread.sleep(forTimeInterval: 0.8)
        let stoppedAt = Date()
        let (stats, error) = s.stop()
        XCTAssertNil(error)
        let finished = s.finalize(data: data, logger: Logger(label: "recd.test.video"))
        let duration = try XCTUnwrap(finished.duration)
        // What was recorded, by the clock (a loaded machine sleeps longer than asked), less the
        // camera's first frame (up to a frame's time after the start).
        let recorded = pausedAt.timeIntervalSince(started) + stoppedAt.timeIntervalSince(resumedAt)
        XCTAssertEqual(duration, recorded, accuracy: 0.25, "the pause of \(resumedAt.timeIntervalSince(pausedAt)) s left out")
        XCTAssertEqual(duration, Double((stats.videoFrames ?? 0) + (stats.videoDroppedFrames ?? 0)) / 15, accuracy: 0.35, "\(stats)")
    }
}
