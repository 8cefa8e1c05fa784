// The video API on this machine, which has no camera: refusals, and videos that came from elsewhere
// (adopted files), through the real daemon. Recording from a real camera: VideoTests (in the VM).
import Foundation
import RecdAPI
import XCTest

final class VideoHostTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--video-device", "/dev/video-recd-none"] }

    var recordingsDir: String { daemon.dataDir.appendingPathComponent("Recordings").path }

    func testNoCameraRefusesWithTheHintAndChangesNothing() throws {
        let refused = try daemon.recctl("record", "start", "--video")
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("camera '/dev/video-recd-none' is unavailable: there is no such device"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("record audio-only instead"), refused.stderr)
        let (status, body) = try daemon.curl("POST", "/v1/record/start", body: #"{"type":"video","title":"Nope"}"#)
        XCTAssertEqual(status, 503)
        let error = try APIJSON.decoder().decode(APIErrorBody.self, from: Data(body.utf8))
        XCTAssertEqual(error.error.code, .deviceUnavailable)
        XCTAssertEqual(error.error.offer, .audioOnly)
        // So does the recording screen.
        let screen = try daemon.recctl("record", "--video")
        XCTAssertEqual(screen.status, 1)
        XCTAssertTrue(screen.stderr.contains("record audio-only instead"), screen.stderr)
        // --video-only needs the camera just as much.
        let silent = try daemon.recctl("record", "start", "--video-only")
        XCTAssertEqual(silent.status, 1)
        XCTAssertTrue(silent.stderr.contains("/dev/video-recd-none"), silent.stderr)
        // Nothing was left behind, and the daemon is idle.
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: recordingsDir).filter { !$0.hasPrefix(".") }, [])
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
        // An audio recording still works, and its audio start is not disturbed by the failed ones.
        try pulse.play(try Tones.sine())
        let audio = try record(seconds: 0.5)
        XCTAssertEqual(audio.recording?.type, .audio)
        XCTAssertNil(audio.capture.videoFrames)
    }

    func testBadVideoRequestsAreRefused() throws {
        let (status, body) = try daemon.curl("POST", "/v1/record/start", body: #"{"type":"audio","audio":false}"#)
        XCTAssertEqual(status, 422, body)
        XCTAssertTrue(body.contains("invalid_value") && body.contains("silent video"), body)
        let (status2, body2) = try daemon.curl("POST", "/v1/record/start", body: #"{"type":"film"}"#)
        XCTAssertEqual(status2, 400, body2)
        let (status3, body3) = try daemon.curl("POST", "/v1/record/start", body: #"{"type":"video","audio":"no"}"#)
        XCTAssertEqual(status3, 400, body3)
        let both = try daemon.recctl("record", "start", "--video", "--video-only")
        XCTAssertEqual(both.status, 2)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
    }

    /// recd refuses bad video options at start-up (usage error 64), naming the option and its range.
    func testBadVideoOptionsAreRefusedAtStartUp() throws {
        let cases: [([String], String)] = [
            (["--video-size", "1280"], "--video-size 1280 is not WIDTHxHEIGHT"),
            (["--video-size", "641x480"], "--video-size 641x480 is not WIDTHxHEIGHT"),
            (["--video-fps", "0"], "--video-fps must be 1...240"),
            (["--video-preset", "fastest"], "--video-preset must be one of ultrafast"),
            (["--video-crf", "52"], "--video-crf must be 0...51"),
            (["--video-bitrate", "1000"], "--video-bitrate must be 50000...100000000"),
        ]
        for (args, message) in cases {
            let r = try Tools.run(Tools.recd, args + ["--data-dir", daemon.dataDir.appendingPathComponent("unused").path,
                                                      "--socket", daemon.dataDir.appendingPathComponent("unused.sock").path])
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.dataDir.appendingPathComponent("unused").path))
    }

    func testPosterOfAnAudioRecordingAndOfAnUnknownIdAreRefused() throws {
        try pulse.play(try Tones.sine())
        let audio = try XCTUnwrap(try record(seconds: 0.5, stopArgs: ["--save"]).recording)
        let refused = try daemon.recctl("poster", audio.id.uuidString, "-o", daemon.dataDir.appendingPathComponent("p.jpg").path)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("is an audio recording: it has no picture"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.dataDir.appendingPathComponent("p.jpg").path))
        let (status, body) = try daemon.curl("GET", "/v1/recordings/\(audio.id.uuidString)/poster")
        XCTAssertEqual(status, 409)
        XCTAssertTrue(body.contains("no_media"), body)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/00000000-0000-0000-0000-000000000000/poster").0, 404)
    }

    /// A silent video and a video with sound copied into Recordings/ (made by the ffmpeg CLI) are
    /// adopted as videos; their posters are made from their first frames; the silent one has
    /// nothing to play and no waveform; the other plays its sound.
    func testAdoptedVideosGetPostersAndASilentOneHasNoSound() throws {
        daemon.stop()
        let silentPath = recordingsDir + "/camera clip.mov"
        let withSound = recordingsDir + "/phone clip.mov"
        var r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10", "-t", "2",
                                         "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", silentPath])
        XCTAssertEqual(r.status, 0, r.stderr)
        r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10",
                                     "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "10",
                                     "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", withSound])
        XCTAssertEqual(r.status, 0, r.stderr)
        try daemon.start()
        let list = try daemon.recctlJSON(RecordingList.self, "list")
        XCTAssertEqual(list.recordings.map(\.type), [.video, .video])
        let silent = try XCTUnwrap(list.recordings.first { $0.file.hasSuffix("camera clip.mov") })
        let sound = try XCTUnwrap(list.recordings.first { $0.file.hasSuffix("phone clip.mov") })

        // Posters: JPEGs of each first frame at the video's size.
        let posterFile = daemon.dataDir.appendingPathComponent("poster.jpg").path
        let saved = try daemon.recctl("poster", silent.id.uuidString, "-o", posterFile)
        XCTAssertEqual(saved.status, 0, saved.stderr)
        let poster = try VideoProbe.of(posterFile)
        XCTAssertEqual(poster.streams.first?.codec, "mjpeg")
        XCTAssertEqual([poster.streams.first?.width, poster.streams.first?.height], [320, 240])
        let (status, _) = try daemon.curl("GET", "/v1/recordings/\(sound.id.uuidString)/poster")
        XCTAssertEqual(status, 200)
        // Made once, then stored in the catalog.
        let stored = try Tools.run("sqlite3", [daemon.dataDir.appendingPathComponent("catalog.sqlite").path,
                                               "SELECT count(*) FROM poster"])
        XCTAssertEqual(stored.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "2")

        // The silent one: nothing to play, no waveform, a clear 409 each; nothing counted, and a
        // playback in progress goes on.
        let playing = try daemon.recctl("play", sound.id.uuidString)
        XCTAssertEqual(playing.status, 0, playing.stderr)
        let play = try daemon.recctl("play", silent.id.uuidString)
        XCTAssertEqual(play.status, 1)
        XCTAssertTrue(play.stderr.contains("silent video"), play.stderr)
        let still = try daemon.recctlJSON(PlaybackStatus.self, "playback", "status")
        XCTAssertEqual(still.playback?.recording.id, sound.id)
        XCTAssertEqual(try daemon.recctl("playback", "stop").status, 0)
        let (waveStatus, waveBody) = try daemon.curl("GET", "/v1/recordings/\(silent.id.uuidString)/waveform")
        XCTAssertEqual(waveStatus, 409)
        XCTAssertTrue(waveBody.contains("no_media"), waveBody)
        // The one with sound has a waveform of its sound.
        let (soundWave, _) = try daemon.curl("GET", "/v1/recordings/\(sound.id.uuidString)/waveform")
        XCTAssertEqual(soundWave, 200)
        // Deleting a video removes its file and its poster with its row.
        XCTAssertEqual(try daemon.recctl("delete", "--yes", silent.id.uuidString).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: silentPath))
        let left = try Tools.run("sqlite3", [daemon.dataDir.appendingPathComponent("catalog.sqlite").path, "SELECT count(*) FROM poster"])
        XCTAssertEqual(left.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "1")
    }

    func testDevicesListsWhatThisMachineHas() throws {
        let devices = try daemon.recctlJSON(DeviceList.self, "devices")
        XCTAssertEqual(devices.configuredCamera, "/dev/video-recd-none")
        XCTAssertEqual(devices.configuredAudio, PulseAudioServer.captureDevice)
        XCTAssertEqual(devices.cameras, [])   // no /dev/video* here
        XCTAssertFalse(devices.audio.isEmpty)
        let text = try daemon.recctl("devices")
        XCTAssertEqual(text.status, 0)
        XCTAssertTrue(text.stdout.contains("Cameras (V4L2; recd records from /dev/video-recd-none):\n  (none)"), text.stdout)
        // alsa-lib's complaints while it walks its PCM definitions stay out of the log.
        XCTAssertFalse(daemon.log.contains("Unknown parameter"), daemon.log)
    }
}
