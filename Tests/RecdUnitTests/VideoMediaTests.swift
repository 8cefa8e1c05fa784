import Capture
import Foundation
import Media
import MediaWire
import XCTest

/// The video side of Media on synthesized camera frames (no camera needed): conversion from the
/// camera layouts, H.264 + AAC into fragmented .mov, finalizing, the poster, and what ffprobe reads.
final class VideoMediaTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-video-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    static func fourcc(_ s: StaticString) -> UInt32 { FourCC(s).rawValue }

    /// A YUYV frame: luma ramps with x and moves with `index`, chroma neutral.
    static func yuyvFrame(width: Int, height: Int, index: Int, bytesPerLine: Int? = nil) -> [UInt8] {
        let stride = bytesPerLine ?? width * 2
        var frame = [UInt8](repeating: 0, count: stride * height)
        for y in 0..<height {
            for x in 0..<width {
                frame[y * stride + x * 2] = UInt8(truncatingIfNeeded: 16 + (x + index * 4) % 200)
                frame[y * stride + x * 2 + 1] = 128
            }
        }
        return frame
    }

    func write(_ name: String, frames: Int, fps: Double = 25, audio: Bool, bytesPerLine: Int? = nil,
               fourcc: StaticString = "YUYV") throws -> (String, VideoFileWriter, Data?) {
        let path = dir.appendingPathComponent(name).path
        let width = 64, height = 48
        let camera = CameraFrameFormat(fourcc: Self.fourcc(fourcc), width: width, height: height,
                                       bytesPerLine: bytesPerLine ?? width * 2)
        let writer = try VideoFileWriter(path: path, video: VideoEncoding(width: width, height: height, fps: fps, preset: "ultrafast"),
                                         camera: camera, audio: audio ? AudioEncoding(sampleRate: 48_000, channels: 1) : nil)
        var poster: Data?
        let samplesPerFrame = Int(48_000 / fps)
        let tone = (0..<samplesPerFrame).map { Int16(8000 * sin(Double($0) * 2 * .pi * 1000 / 48_000)) }
        for i in 0..<frames {
            let bytes = Self.yuyvFrame(width: width, height: height, index: i, bytesPerLine: bytesPerLine)
            try bytes.withUnsafeBytes { raw in
                _ = try writer.appendVideo(raw, pts: Int64(Double(i) * 90_000 / fps), poster: i == 0 ? { poster = $0 } : nil)
            }
            if audio { try tone.withUnsafeBufferPointer { try writer.appendAudio(interleaved: $0, frames: samplesPerFrame) } }
        }
        try writer.finishVideo()
        try writer.finishAudio()
        try writer.close()
        return (path, writer, poster)
    }

    func testVideoWithSoundIsH264AndAACInQuickTimeAndFinalizes() throws {
        let (path, writer, poster) = try write("video_a.mov", frames: 50, audio: true)
        XCTAssertEqual(writer.framesWritten, 50)
        XCTAssertEqual(writer.videoEnd, 50 * 3600)   // 50 frames of 1/25 s in 1/90000 s
        let info = try MediaProbe.probe(path)
        XCTAssertEqual(info.streams.map(\.codec).sorted(), ["aac", "h264"])
        XCTAssertTrue(info.formatName.contains("mov"))
        let final = path + ".final.tmp"
        let result = try MP4Finalizer.remux(from: path, to: final)
        XCTAssertFalse(result.stoppedAtDamage)
        let finalInfo = try MediaProbe.probe(final)
        XCTAssertEqual(try XCTUnwrap(finalInfo.duration), 2.0, accuracy: 0.05)
        // Finalized as QuickTime, as its name says (".mov"), not MP4.
        let head = try Data(contentsOf: URL(fileURLWithPath: final)).prefix(12)
        XCTAssertEqual(String(decoding: head.suffix(4), as: UTF8.self), "qt  ")
        // The poster is a JPEG of the frame's size.
        let jpeg = try XCTUnwrap(poster)
        XCTAssertEqual(Array(jpeg.prefix(2)), [0xFF, 0xD8])
        let posterFile = dir.appendingPathComponent("poster.jpg")
        try jpeg.write(to: posterFile)
        let posterInfo = try MediaProbe.probe(posterFile.path)
        XCTAssertEqual(posterInfo.streams.first?.codec, "mjpeg")
        // The same poster can be made again from the file (for salvaged or adopted videos).
        let again = try PosterExtractor.poster(fromFile: final)
        XCTAssertEqual(Array(again.prefix(2)), [0xFF, 0xD8])
    }

    /// Luma of the top-left pixel of the first picture `ffmpeg` shows of `path` (an image or a video).
    func firstPictureLuma(_ path: String) throws -> Int {
        let raw = dir.appendingPathComponent("first-\(UUID().uuidString).gray").path
        XCTAssertEqual(try Self.ffmpeg(["-nostdin", "-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo",
                                        "-pix_fmt", "gray", "-y", raw]), 0)
        return Int(try Data(contentsOf: URL(fileURLWithPath: raw)).first ?? 0)
    }

    /// A trimmed video starts at the frame of the cut: decoded from the keyframe before it, the
    /// lead-in hidden by the edit list; the sound is cut at the same instant; the poster made from
    /// the trimmed file is the frame at the cut.
    func testATrimmedVideoShowsTheFrameAtTheCutFirst() throws {
        let (path, _, _) = try write("long.mov", frames: 100, audio: true)   // 4 s, a keyframe a second
        let final = dir.appendingPathComponent("final.mov").path
        _ = try MP4Finalizer.remux(from: path, to: final)
        let cut = dir.appendingPathComponent("cut.mov").path
        let result = try MP4Trimmer.trim(from: final, to: cut, start: 1.5, end: 3.0)
        XCTAssertEqual(result.videoLeadIn, 0.5, accuracy: 0.001, "decoded from the keyframe at 1 s")
        let info = try MediaProbe.probe(cut)
        XCTAssertEqual(info.streams.map(\.codec).sorted(), ["aac", "h264"])
        XCTAssertEqual(try XCTUnwrap(info.duration), 1.5, accuracy: 0.045)
        // Frame i has luma 16 + 4i at x = 0 (4i·255/219 read back as full-range gray): the first frame
        // shown is the one at the cut (frame 37 or 38 of 25 fps: 172, 177), not the keyframe it is
        // decoded from (frame 25: 116).
        func frame(_ i: Int) -> Int { 4 * i * 255 / 219 }
        let luma = try firstPictureLuma(cut)
        XCTAssertTrue((frame(37) - 4...frame(38) + 4).contains(luma), "first frame shown has luma \(luma)")
        let poster = dir.appendingPathComponent("poster.jpg")
        try PosterExtractor.poster(fromFile: cut).write(to: poster)
        let posterLuma = try firstPictureLuma(poster.path)
        XCTAssertTrue((frame(37) - 6...frame(38) + 6).contains(posterLuma), "poster luma \(posterLuma)")
        let decode = try Self.ffmpeg(["-nostdin", "-v", "error", "-xerror", "-i", cut, "-f", "null", "-"])
        XCTAssertEqual(decode, 0)
    }

    func testSilentVideoHasNoAudioStreamAndNoPosterFromAudio() throws {
        let (path, _, _) = try write("video_s.mov", frames: 10, audio: false)
        XCTAssertEqual(try MediaProbe.probe(path).streams.map(\.codec), ["h264"])
        XCTAssertThrowsError(try AudioFileDecoder(path: path)) { error in
            guard case MediaError.noStream(let kind, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(kind, "audio")
        }
        // An audio file has no picture for a poster.
        let audio = dir.appendingPathComponent("a.m4a").path
        let w = try AudioFileWriter(path: audio, encoding: AudioEncoding())
        try [Int16](repeating: 0, count: 4800).withUnsafeBufferPointer { try w.append(interleaved: $0, frames: 4800) }
        try w.finish()
        XCTAssertThrowsError(try PosterExtractor.poster(fromFile: audio)) { error in
            guard case MediaError.noStream = error else { return XCTFail("\(error)") }
        }
    }

    func testFramesNotAfterThePreviousOneAreSkipped() throws {
        let path = dir.appendingPathComponent("video_t.mov").path
        let camera = CameraFrameFormat(fourcc: Self.fourcc("YUYV"), width: 64, height: 48, bytesPerLine: 128)
        let writer = try VideoFileWriter(path: path, video: VideoEncoding(width: 64, height: 48, fps: 25, preset: "ultrafast"),
                                         camera: camera, audio: nil)
        let frame = Self.yuyvFrame(width: 64, height: 48, index: 0)
        try frame.withUnsafeBytes { raw in
            XCTAssertTrue(try writer.appendVideo(raw, pts: 0))
            XCTAssertFalse(try writer.appendVideo(raw, pts: 0))
            XCTAssertTrue(try writer.appendVideo(raw, pts: 3600))
            XCTAssertFalse(try writer.appendVideo(raw, pts: 1800))
        }
        XCTAssertEqual(writer.framesWritten, 2)
        XCTAssertEqual(writer.framesSkipped, 2)
        try writer.finishVideo()
        try writer.close()
    }

    func testPaddedLinesAndOtherLayoutsConvert() throws {
        // A driver that pads each line (bytesperline > width × 2) still gives the right picture.
        let (padded, _, _) = try write("video_p.mov", frames: 5, audio: false, bytesPerLine: 64 * 2 + 32)
        let check = try Self.ffmpeg(["-v", "error", "-xerror", "-i", padded, "-f", "null", "-"])
        XCTAssertEqual(check, 0)
        // A frame shorter than its format needs is refused, naming the sizes.
        let path = dir.appendingPathComponent("video_short.mov").path
        let writer = try VideoFileWriter(path: path, video: VideoEncoding(width: 64, height: 48, fps: 25, preset: "ultrafast"),
                                         camera: CameraFrameFormat(fourcc: Self.fourcc("YUYV"), width: 64, height: 48, bytesPerLine: 128),
                                         audio: nil)
        let short = [UInt8](repeating: 0, count: 100)
        XCTAssertThrowsError(try short.withUnsafeBytes { try writer.appendVideo($0, pts: 0) }) { error in
            XCTAssertTrue("\(error)".contains("64x48"), "\(error)")
        }
        // A format recd does not convert is refused when the writer is made.
        XCTAssertThrowsError(try VideoFileWriter(path: dir.appendingPathComponent("x.mov").path,
                                                 video: VideoEncoding(width: 64, height: 48, fps: 25),
                                                 camera: CameraFrameFormat(fourcc: Self.fourcc("BA81"), width: 64, height: 48, bytesPerLine: 64),
                                                 audio: nil))
    }

    /// A camera that sends only MJPEG: its frames are decoded with libavcodec, then encoded as H.264.
    func testMJPEGFramesAreDecodedAndEncoded() throws {
        let jpegPath = dir.appendingPathComponent("frame%02d.jpg").path
        XCTAssertEqual(try Self.ffmpeg(["-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-frames:v", "5",
                                        "-pix_fmt", "yuvj422p", jpegPath]), 0)
        let path = dir.appendingPathComponent("video_m.mov").path
        let writer = try VideoFileWriter(path: path, video: VideoEncoding(width: 64, height: 48, fps: 25, preset: "ultrafast"),
                                         camera: CameraFrameFormat(fourcc: Self.fourcc("MJPG"), width: 64, height: 48, bytesPerLine: 0),
                                         audio: nil)
        var poster: Data?
        for i in 1...5 {
            let jpeg = try Data(contentsOf: URL(fileURLWithPath: dir.appendingPathComponent(String(format: "frame%02d.jpg", i)).path))
            try jpeg.withUnsafeBytes { raw in
                _ = try writer.appendVideo(raw, pts: Int64(i - 1) * 3600, poster: i == 1 ? { poster = $0 } : nil)
            }
        }
        // A damaged frame is refused (the caller drops it), and the stream goes on.
        let damaged = [UInt8](repeating: 0x42, count: 300)
        XCTAssertThrowsError(try damaged.withUnsafeBytes { try writer.appendVideo($0, pts: 5 * 3600) })
        try writer.finishVideo()
        try writer.close()
        XCTAssertEqual(writer.framesWritten, 5)
        XCTAssertNotNil(poster)
        XCTAssertEqual(try MediaProbe.probe(path).streams.map(\.codec), ["h264"])
        XCTAssertEqual(try Self.ffmpeg(["-v", "error", "-xerror", "-i", path, "-f", "null", "-"]), 0)
    }

    static func ffmpeg(_ args: [String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-nostdin"] + args
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }
}

/// Pure pieces of the V4L2 side: fourcc codes, size choice, the audio clock.
final class V4L2LogicTests: XCTestCase {
    func testFourCCMatchesTheKernelsCodes() {
        XCTAssertEqual(FourCC.yuyv.rawValue, 0x5659_5559)   // v4l2_fourcc('Y','U','Y','V')
        XCTAssertEqual(FourCC.mjpeg.description, "MJPG")
        XCTAssertEqual(FourCC(rawValue: 0x3231_564E).description, "NV12")
    }

    func testTheNearestOfferedSizeIsChosen() {
        let vivid = [(320, 180), (640, 360), (640, 480), (1280, 720), (1920, 1080)].map { (width: $0.0, height: $0.1) }
        XCTAssertTrue(V4L2CaptureSource.nearestSize(vivid, width: 1280, height: 720) == (1280, 720))
        XCTAssertTrue(V4L2CaptureSource.nearestSize(vivid, width: 1024, height: 576) == (1280, 720))
        XCTAssertTrue(V4L2CaptureSource.nearestSize(vivid, width: 600, height: 400) == (640, 480))
        XCTAssertTrue(V4L2CaptureSource.nearestSize(vivid, width: 320, height: 240) == (640, 480))
        XCTAssertTrue(V4L2CaptureSource.nearestSize(vivid, width: 100, height: 100) == (320, 180))
        XCTAssertTrue(V4L2CaptureSource.nearestSize(vivid, width: 4000, height: 3000) == (1920, 1080))
        XCTAssertTrue(V4L2CaptureSource.nearestSize([], width: 800, height: 600) == (800, 600))
    }

    func testAudioClockMapsMonotonicTimeToFramePositions() {
        let clock = AudioClock(sampleRate: 48_000)
        XCTAssertNil(clock.position(atNs: 1_000))
        // Frame 4800 (0.1 s in) was captured at t = 10.1 s: the first frame at 10.0 s.
        clock.set(position: 4800, monotonicNs: 10_100_000_000)
        XCTAssertEqual(clock.position(atNs: 10_000_000_000)!, 0, accuracy: 0.5)
        XCTAssertEqual(clock.position(atNs: 10_600_000_000)!, 28_800, accuracy: 0.5)
        XCTAssertEqual(clock.position(atNs: 9_900_000_000)!, -4800, accuracy: 0.5)
        // A later anchor (after an overrun lost 0.5 s) moves the mapping: positions count frames delivered.
        clock.set(position: 9600, monotonicNs: 10_700_000_000)
        XCTAssertEqual(clock.position(atNs: 10_700_000_000)!, 9600, accuracy: 0.5)
    }
}
