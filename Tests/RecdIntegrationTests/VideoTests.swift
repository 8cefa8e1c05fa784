// Video recordings from a real V4L2 camera driver (vivid) with sound from a real ALSA card
// (snd-aloop), inside the throw-away VM of scripts/vm: Tests/vm/video-record.sh does the recording
// in the guest, the checks here read what it left with the ffmpeg CLI (independent of recd's code).
import Foundation
import RecdAPI
import XCTest

final class VideoTests: XCTestCase {
    /// One VM boot for every scenario (a boot costs ~5 s, and the guest is ~15x slower than the host).
    func testVideoRecordingsFromVividAndSndAloop() throws {
        let (out, run) = try VMRun.run("video-record.sh", modules: "vivid;snd-aloop", toneSeconds: 120)
        defer { try? FileManager.default.removeItem(at: out) }
        func file(_ name: String) -> String { out.appendingPathComponent(name).path }
        XCTAssertEqual(run.status, 0, "VM run failed: \(run.stdout)\n\(run.stderr)\n"
                       + VMRun.log(out, "recd.log", "recd-nocamera.log", "recd-nomic.log", "recd-killed.log", "recd-recovered.log"))
        guard run.status == 0 else { return }
        let decoder = APIJSON.decoder()

        // 1. Camera + microphone: H.264 + AAC in a QuickTime file, the size and rate asked for, both
        //    streams as long as each other and as the frames captured, every frame decodes.
        let started = try decoder.decode(StartRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("av-start.json")))
        let video = try XCTUnwrap(started.video)
        XCTAssertEqual(video.device, "/dev/video0")
        XCTAssertEqual([video.width, video.height], [320, 180])
        XCTAssertEqual(video.fps, 15)
        XCTAssertEqual(started.device, "hw:Loopback,1,0")
        XCTAssertEqual(started.recording.type, .video)
        XCTAssertTrue(started.recording.file.hasPrefix("Recordings/video_") && started.recording.file.hasSuffix(".mov"), started.recording.file)
        let stopped = try decoder.decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("av.json")))
        let av = try VideoProbe.of(file("av.mov"))
        let maps = try String(contentsOf: out.appendingPathComponent("av-ffmpeg-maps.txt"), encoding: .utf8)
        XCTAssertEqual(maps.trimmingCharacters(in: .whitespacesAndNewlines), "0", "FFmpeg is mapped in recd after a video recording (it belongs in its media workers)")
        // Frames went through a memory file both map (recd writes, its worker reads), not the socket.
        let frameMaps = try String(contentsOf: out.appendingPathComponent("av-frame-maps.txt"), encoding: .utf8)
            .split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        XCTAssertEqual(frameMaps.first { $0.first == "recd" }?.last, "1", frameMaps.description)
        XCTAssertEqual(frameMaps.filter { $0.first == "recd-media" && $0.last == "1" }.count, 1, frameMaps.description)
        XCTAssertTrue(av.formatName.contains("mov"), av.formatName)
        let h264 = try XCTUnwrap(av.streams.first { $0.codec == "h264" }, "\(av)")
        let aac = try XCTUnwrap(av.streams.first { $0.codec == "aac" }, "\(av)")
        XCTAssertEqual(av.streams.count, 2)
        XCTAssertEqual([h264.width, h264.height], [320, 180])
        XCTAssertEqual(h264.frameRate, "15/1")
        let frames = try XCTUnwrap(stopped.capture.videoFrames)
        // An emulated guest on a loaded host misses camera frames (the driver drops what is not
        // dequeued in time): each frame's encoding is a round trip to the guest's media worker, which
        // a starved guest does at a fraction of real time (CI: 13 of 132 and 19 of 110 missed). They
        // are counted, and their time kept in the file (sound and picture stay together), so N counts
        // them. A third missed would be recd's fault; on the host, VideoSessionTests bounds it to a
        // few frames with a camera in memory and a real worker.
        let missed = try XCTUnwrap(stopped.capture.videoDroppedFrames)
        XCTAssertLessThanOrEqual(missed * 3, frames + missed, "\(stopped.capture)")
        XCTAssertEqual(h264.frames, Int(frames))
        // N: the frames captured at the camera's rate. Both streams within 100 ms of it and of each other.
        let n = Double(frames + missed) / 15
        XCTAssertGreaterThan(n, 3.5, "a 4 s recording")
        XCTAssertEqual(h264.duration, n, accuracy: 0.1, "\(av)")
        XCTAssertEqual(aac.duration, n, accuracy: 0.1, "\(av)")
        XCTAssertEqual(aac.duration, h264.duration, accuracy: 0.1, "\(av)")
        XCTAssertEqual(h264.startTime, 0, accuracy: 0.02)
        XCTAssertEqual(aac.startTime, 0, accuracy: 0.03)
        // The sound was captured from the start of the recording to its stop; the file holds it from
        // the camera's first frame (a camera starts within a fraction of a second).
        let captured = Double(stopped.capture.framesCaptured) / 48000
        XCTAssertLessThanOrEqual(aac.duration, captured + 0.05)
        XCTAssertGreaterThan(aac.duration, captured - 0.5)
        XCTAssertEqual(try XCTUnwrap(stopped.recording?.duration), h264.duration, accuracy: 0.1)
        let decode = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", file("av.mov"), "-f", "null", "-"])
        XCTAssertEqual(decode.status, 0, decode.stderr)
        let sound = try AudioAnalysis.of(file("av.mov"))
        XCTAssertEqual(sound.frequency, 1000, accuracy: 10)
        XCTAssertEqual(sound.rms, 0.5 / 2.0.squareRoot(), accuracy: 0.04)
        // The poster: a JPEG of the first frame, at the video's size.
        let poster = try VideoProbe.of(file("av.jpg"))
        XCTAssertEqual(poster.streams.first?.codec, "mjpeg")
        XCTAssertEqual([poster.streams.first?.width, poster.streams.first?.height], [320, 180])
        let jpeg = try Data(contentsOf: out.appendingPathComponent("av.jpg"))
        XCTAssertEqual(Array(jpeg.prefix(3)), [0xFF, 0xD8, 0xFF])

        // 2. --video-only: a silent video has no audio stream.
        let silent = try VideoProbe.of(file("silent.mov"))
        XCTAssertEqual(silent.streams.map(\.codec), ["h264"])
        let silentStop = try decoder.decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("silent.json")))
        XCTAssertEqual(silentStop.capture.framesCaptured, 0)
        // (Frames a starved guest missed are counted and their time kept, as in the first take.)
        let silentMissed = try XCTUnwrap(silentStop.capture.videoDroppedFrames)
        XCTAssertLessThanOrEqual(silentMissed * 3, try XCTUnwrap(silentStop.capture.videoFrames) + silentMissed, "\(silentStop.capture)")
        XCTAssertEqual(silent.streams[0].duration, Double(try XCTUnwrap(silentStop.capture.videoFrames) + silentMissed) / 15, accuracy: 0.1)

        // 2a. Paused and resumed: one file whose picture and sound both leave the pause out, as long
        //     as each other, the picture without a hole where the pause was.
        let pausedStop = try decoder.decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("paused-av.json")))
        let pauseEnd = try decoder.decode(RecordingPauseState.self, from: Data(contentsOf: out.appendingPathComponent("paused-av-resume.json")))
        let pausedFile = try VideoProbe.of(file("paused-av.mov"))
        let pv = try XCTUnwrap(pausedFile.streams.first { $0.codec == "h264" }, "\(pausedFile)")
        let pa = try XCTUnwrap(pausedFile.streams.first { $0.codec == "aac" }, "\(pausedFile)")
        let pauseLength = try XCTUnwrap(pauseEnd.pausedFor)
        XCTAssertGreaterThan(pauseLength, 1.4)
        let pausedMissed = try XCTUnwrap(pausedStop.capture.videoDroppedFrames)
        XCTAssertLessThanOrEqual(pausedMissed * 3, try XCTUnwrap(pausedStop.capture.videoFrames) + pausedMissed, "\(pausedStop.capture)")
        // Frames missed while paused, or after the last one written, leave no time in the file: its
        // picture lasts its frames' time, plus the time of those missed between them.
        let pausedFrames = Double(try XCTUnwrap(pausedStop.capture.videoFrames))
        XCTAssertGreaterThanOrEqual(pv.duration, pausedFrames / 15 - 0.15, "\(pausedFile)")
        XCTAssertLessThanOrEqual(pv.duration, (pausedFrames + Double(pausedMissed)) / 15 + 0.15, "\(pausedFile)")
        XCTAssertEqual(pa.duration, pv.duration, accuracy: 0.1, "\(pausedFile)")
        // The microphone went on through the pause: the sound captured exceeds the sound kept by the
        // pause (and by the lead-in before the camera's first frame, a fraction of a second). Counted
        // by recd, not timed from here, which a loaded host would blur.
        let leftOut = Double(pausedStop.capture.framesCaptured) / 48000 - pa.duration
        XCTAssertGreaterThan(leftOut, pauseLength - 0.3, "\(pausedFile): only \(leftOut) s of the \(pauseLength) s pause left out")
        // (The lead-in is the camera's start: up to a second in a guest starved by a loaded host.)
        XCTAssertLessThan(leftOut, pauseLength + 1.0, "\(pausedFile): \(leftOut) s left out, the pause was \(pauseLength) s")
        func span(_ name: String) throws -> Double {
            let t = try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8).split(separator: "\n").compactMap { Double($0) }
            return t.count == 2 ? t[1] - t[0] : 0
        }
        XCTAssertEqual(try XCTUnwrap(pausedStop.recording?.duration), pv.duration, accuracy: 0.1)
        let frameTimes = try Tools.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
                                                   "-of", "csv=p=0", file("paused-av.mov")])
        let times = frameTimes.stdout.split(separator: "\n").compactMap { Double($0) }.sorted()
        let widest = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        // No hole where the pause was (1.5 s): a gap is at most the frames the guest missed, counted
        // above, and a little (seen: 3 in a row, 0.27 s, with the suite's other half beside it).
        XCTAssertLessThan(widest, (Double(pausedMissed) + 3.5) / 15, "a hole of \(widest) s between frames of the paused video, \(pausedMissed) frames missed")
        XCTAssertEqual(try AudioAnalysis.of(file("paused-av.mov")).frequency, 1000, accuracy: 10)
        let pausedDecode = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", file("paused-av.mov"), "-f", "null", "-"])
        XCTAssertEqual(pausedDecode.status, 0, pausedDecode.stderr)
        let silentPaused = try VideoProbe.of(file("paused-silent.mov"))
        let silentResume = try decoder.decode(RecordingPauseState.self, from: Data(contentsOf: out.appendingPathComponent("paused-silent-resume.json")))
        XCTAssertGreaterThan(silentResume.pausedFor ?? 0, 1.9)
        XCTAssertEqual(silentPaused.streams.map(\.codec), ["h264"])
        // A silent video has no sound to count: timed from the guest's clock around the requests
        // (curl). It ran at least from the start's reply to the stop's request, at most from before
        // the start to after the stop's reply — whatever a starved guest made of the requests' own
        // time —, less the pause; a kept pause (2 s) fits neither.
        let silentSpan = try span("paused-silent-times.txt"), silentOuter = try span("paused-silent-outer.txt")
        let silentPause = silentResume.pausedFor ?? 0
        let silentKept = silentPaused.streams[0].duration
        XCTAssertGreaterThan(silentKept, silentSpan - silentPause - 0.4, "\(silentPaused): \(silentSpan) s with a \(silentPause) s pause")
        XCTAssertLessThan(silentKept, silentOuter - silentPause + 0.3,
                          "\(silentPaused): at most \(silentOuter) s recording with a pause of \(silentPause) s, which should be left out")

        // The recording screen records video too.
        let screen = try String(contentsOf: out.appendingPathComponent("screen.txt"), encoding: .utf8)
        XCTAssertTrue(screen.contains("⏺ recording") && screen.contains("/dev/video0 (320x180) + hw:Loopback,1,0")
                      && screen.contains("Recording left pending"), screen)

        // 3. The camera busy, 4. missing: the refusal names the camera, says why and offers audio only.
        let busy = try String(contentsOf: out.appendingPathComponent("busy.txt"), encoding: .utf8)
        XCTAssertTrue(busy.contains("camera '/dev/video0'") && busy.contains("busy") && busy.contains("record audio-only"), busy)
        let noCamera = try String(contentsOf: out.appendingPathComponent("nocamera.txt"), encoding: .utf8)
        XCTAssertTrue(noCamera.contains("camera '/dev/video9'") && noCamera.contains("no such device")
                      && noCamera.contains("record audio-only"), noCamera)
        let (noCameraBody, noCameraStatus) = try Self.refusal(out.appendingPathComponent("nocamera.json"))
        XCTAssertEqual(noCameraStatus, 503)
        XCTAssertEqual(noCameraBody.error.code, .deviceUnavailable)
        XCTAssertEqual(noCameraBody.error.offer, .audioOnly)
        // A node that cannot capture (vivid's video output) is refused, naming it and saying why.
        let output = try String(contentsOf: out.appendingPathComponent("output-node.txt"), encoding: .utf8)
        XCTAssertTrue(output.contains("camera '/dev/video1' cannot be used") && output.contains("cannot capture video"), output)
        // No microphone: the refusal names it and offers a silent video, which then records.
        let noMic = try String(contentsOf: out.appendingPathComponent("nomic.txt"), encoding: .utf8)
        XCTAssertTrue(noMic.contains("'hw:7,0'") && noMic.contains("--video-only"), noMic)
        let (noMicBody, noMicStatus) = try Self.refusal(out.appendingPathComponent("nomic.json"))
        XCTAssertEqual(noMicStatus, 503)
        XCTAssertEqual(noMicBody.error.offer, .videoOnly)
        let noMicSilent = try decoder.decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("nomic-silent.json")))
        XCTAssertEqual(noMicSilent.recording?.type, .video)
        XCTAssertGreaterThan(noMicSilent.capture.videoFrames ?? 0, 0)

        // 5. Frames the driver dropped are counted, like audio overruns.
        let drops = try decoder.decode(StopRecordingResponse.self, from: Data(contentsOf: out.appendingPathComponent("drops.json")))
        let dropped = try XCTUnwrap(drops.capture.videoDroppedFrames)
        let kept = try XCTUnwrap(drops.capture.videoFrames)
        XCTAssertGreaterThan(dropped, 0, "\(drops.capture)")
        // vivid drops a quarter of its buffers; a guest starved of the host's CPU (TCG beside the
        // other half of the suite) misses more, which vivid counts the same way (seen: 48%).
        XCTAssertGreaterThan(Double(dropped) / Double(dropped + kept), 0.1, "\(drops.capture)")
        XCTAssertLessThan(Double(dropped) / Double(dropped + kept), 0.65, "\(drops.capture)")

        // 6. The camera unplugged mid-recording: the recording ended by itself, kept (pending) with
        //    what was captured, and it plays.
        let unplugged = try decoder.decode(Recording.self, from: Data(contentsOf: out.appendingPathComponent("unplugged.json")))
        XCTAssertEqual(unplugged.state, .pending)
        XCTAssertGreaterThan(unplugged.duration ?? 0, 1.5)
        let status = try decoder.decode(DaemonStatus.self, from: Data(contentsOf: out.appendingPathComponent("unplugged-status.json")))
        XCTAssertEqual(status.activity, .idle)
        XCTAssertTrue(status.lastFault?.reason.contains("disconnected") ?? false, "\(String(describing: status.lastFault))")
        let unpluggedDecode = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", file("unplugged.mov"), "-f", "null", "-"])
        XCTAssertEqual(unpluggedDecode.status, 0, unpluggedDecode.stderr)

        // 7. kill -9 mid-recording: the file as the kill left it plays (both streams, seconds of
        //    them), and the restarted daemon salvaged it as a pending, recovered video.
        let killed = try VideoProbe.of(file("killed.mov"))
        XCTAssertEqual(Set(killed.streams.map(\.codec)), ["h264", "aac"], "\(killed)")
        XCTAssertGreaterThan(killed.streams.map(\.duration).min() ?? 0, 2.0, "\(killed)")
        let killedDecode = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", file("killed.mov"), "-f", "null", "-"])
        XCTAssertEqual(killedDecode.status, 0, killedDecode.stderr)
        let recovered = try decoder.decode(Recording.self, from: Data(contentsOf: out.appendingPathComponent("recovered.json")))
        XCTAssertTrue(recovered.recovered)
        XCTAssertEqual(recovered.state, .pending)
        XCTAssertEqual(recovered.type, .video)
        XCTAssertGreaterThan(recovered.duration ?? 0, 2.0)

        // 8. The disk filled mid-recording: the recording ended by itself, said why, and what reached
        //    the disk is kept (pending) and plays.
        let fullStatus = try decoder.decode(DaemonStatus.self, from: Data(contentsOf: out.appendingPathComponent("full-status.json")))
        XCTAssertEqual(fullStatus.activity, .idle)
        XCTAssertTrue(fullStatus.lastFault?.reason.contains("No space left on device") ?? false, "\(String(describing: fullStatus.lastFault))")
        let full = try decoder.decode(Recording.self, from: Data(contentsOf: out.appendingPathComponent("full.json")))
        XCTAssertEqual(full.state, .pending)
        let fullFile = try VideoProbe.of(file("full.mov"))
        XCTAssertEqual(Set(fullFile.streams.map(\.codec)), ["h264", "aac"], "\(fullFile)")
        XCTAssertGreaterThan(fullFile.streams.map(\.duration).min() ?? 0, 1.0, "\(fullFile)")

        // `recctl devices`: the vivid camera with its formats, sizes and rates; the loopback card.
        let devices = try decoder.decode(DeviceList.self, from: Data(contentsOf: out.appendingPathComponent("devices.json")))
        let vivid = try XCTUnwrap(devices.cameras.first { $0.device == "/dev/video0" }, "\(devices.cameras.map(\.device))")
        XCTAssertEqual(vivid.driver, "vivid")
        let yuyv = try XCTUnwrap(vivid.formats.first { $0.pixelFormat == "YUYV" })
        let small = try XCTUnwrap(yuyv.sizes.first { $0.width == 320 && $0.height == 180 })
        XCTAssertTrue(small.fps.contains(15), "\(small)")
        // The loopback card's capture PCMs, probed: S16_LE among their formats, 48 kHz within their rates.
        let loopback = devices.audio.filter { $0.device.hasPrefix("hw:") && $0.device.contains("Loopback") }
        XCTAssertFalse(loopback.isEmpty, "\(devices.audio.map(\.device))")
        for pcm in loopback {
            let c = try XCTUnwrap(pcm.capabilities, "\(pcm)")
            XCTAssertTrue(c.formats.contains("S16_LE"), "\(pcm)")
            XCTAssertTrue((c.minRate...c.maxRate).contains(48_000), "\(pcm)")
        }
    }

    /// An API error body followed by curl's status line.
    static func refusal(_ url: URL) throws -> (APIErrorBody, Int) {
        let text = try String(contentsOf: url, encoding: .utf8)
        let lines = text.split(separator: "\n")
        let status = Int(lines.last ?? "") ?? 0
        let body = try APIJSON.decoder().decode(APIErrorBody.self, from: Data(lines.dropLast().joined(separator: "\n").utf8))
        return (body, status)
    }
}

/// ffprobe's view of a media file's streams.
struct VideoProbe: CustomStringConvertible {
    struct Stream {
        var codec: String
        var width: Int?
        var height: Int?
        var frameRate: String?
        var duration: Double
        var startTime: Double
        var frames: Int?
    }
    var formatName: String
    var streams: [Stream]
    var description: String {
        formatName + ": " + streams.map { "\($0.codec) \($0.duration) s from \($0.startTime)" + ($0.frames.map { " (\($0) frames)" } ?? "") }
            .joined(separator: ", ")
    }

    static func of(_ file: String) throws -> VideoProbe {
        let r = try Tools.run("ffprobe", ["-v", "error", "-show_entries",
                                          "format=format_name:stream=codec_name,width,height,r_frame_rate,duration,start_time,nb_frames",
                                          "-of", "json", file])
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any] else {
            throw NSError(domain: "recd-tests", code: 7, userInfo: [NSLocalizedDescriptionKey: "ffprobe \(file): \(r.stderr)"])
        }
        let format = (json["format"] as? [String: Any])?["format_name"] as? String ?? ""
        let streams = (json["streams"] as? [[String: Any]] ?? []).map { s in
            Stream(codec: s["codec_name"] as? String ?? "", width: s["width"] as? Int, height: s["height"] as? Int,
                   frameRate: s["r_frame_rate"] as? String, duration: Double(s["duration"] as? String ?? "") ?? 0,
                   startTime: Double(s["start_time"] as? String ?? "") ?? 0, frames: Int(s["nb_frames"] as? String ?? ""))
        }
        return VideoProbe(formatName: format, streams: streams)
    }
}
