import Foundation
import Media
import MediaWire
import XCTest

/// The playback decoder on a WAV with a known sample ramp: every frame's value says where it is.
final class DecoderTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-decoder-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// A mono 48 kHz WAV whose sample n is n % 30000 (a position stamp).
    func rampWAV(seconds: Int) throws -> String {
        let frames = seconds * 48000
        var data = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(36 + frames * 2); data.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16); u16(1); u16(1); u32(48000); u32(96000); u16(2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(frames * 2)
        var samples = [Int16](repeating: 0, count: frames)
        for n in 0..<frames { samples[n] = Int16(n % 30000) }
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        let path = dir.appendingPathComponent("ramp.wav").path
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    func testDecodesEveryFrameAndSeeksToTheExactSample() throws {
        let decoder = try AudioFileDecoder(path: try rampWAV(seconds: 3))
        XCTAssertEqual(decoder.sourceSampleRate, 48000)
        XCTAssertEqual(decoder.sourceChannels, 1)
        XCTAssertEqual(try XCTUnwrap(decoder.duration), 3.0, accuracy: 0.001)
        try decoder.setOutput(rate: 48000, channels: 1)
        var buffer: [Int16] = []
        var total = 0
        var expected = 0
        while let block = try decoder.read(into: &buffer) {
            XCTAssertEqual(block.start, Double(total) / 48000, accuracy: 1e-6)
            for i in 0..<block.frames where buffer[i] != Int16((expected + i) % 30000) {
                XCTFail("frame \(expected + i) is \(buffer[i])"); return
            }
            expected += block.frames
            total += block.frames
        }
        XCTAssertEqual(total, 3 * 48000)

        // Seek to 1.5 s: the next frame is exactly frame 72,000.
        try decoder.seek(to: 1.5)
        let block = try XCTUnwrap(try decoder.read(into: &buffer))
        XCTAssertEqual(block.start, 1.5, accuracy: 1e-6)
        XCTAssertEqual(buffer[0], Int16(72_000 % 30000))
        // And back to the start.
        try decoder.seek(to: 0)
        XCTAssertEqual(try XCTUnwrap(try decoder.read(into: &buffer)).start, 0)
        XCTAssertEqual(buffer[0], 0)
    }

    func testConvertsToWhatTheDeviceTakes() throws {
        let decoder = try AudioFileDecoder(path: try rampWAV(seconds: 1))
        // A device that only takes stereo at 44.1 kHz.
        try decoder.setOutput(rate: 44100, channels: 2)
        var buffer: [Int16] = []
        var total = 0
        while let block = try decoder.read(into: &buffer) { total += block.frames }
        XCTAssertEqual(Double(total), 44100, accuracy: 50)
    }

    func testAMissingFileSaysSo() {
        XCTAssertThrowsError(try AudioFileDecoder(path: dir.appendingPathComponent("gone.m4a").path)) {
            XCTAssertTrue(($0 as? FFmpegError)?.isFileMissing == true, "\($0)")
        }
    }
}
