import Foundation
import Media
import XCTest

/// The FFmpeg pipeline on synthesized audio: encode, fragmented write, finalize, probe.
final class MediaTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Writes `seconds` of a 1 kHz sine in blocks of an awkward size (not a multiple of 1024).
    func writeSine(_ path: String, seconds: Double, channels: Int, finish: Bool = true) throws -> AudioFileWriter {
        let writer = try AudioFileWriter(path: path, encoding: AudioEncoding(channels: channels))
        let total = Int(seconds * 48000)
        var written = 0
        var block = [Int16](repeating: 0, count: 777 * channels)
        while written < total {
            let n = min(777, total - written)
            for i in 0..<n {
                let v = Int16(16384 * sin(2 * Double.pi * 1000 * Double(written + i) / 48000))
                for c in 0..<channels { block[i * channels + c] = c == 0 ? v : v / 2 }
            }
            try block.withUnsafeBufferPointer { try writer.append(interleaved: $0, frames: n) }
            written += n
        }
        if finish { try writer.finish() }
        XCTAssertEqual(writer.samplesWritten, Int64(total))
        return writer
    }

    func testFragmentedFileThenFinalizedFileHaveTheRightDuration() throws {
        let path = dir.appendingPathComponent("a.m4a").path
        _ = try writeSine(path, seconds: 3.0, channels: 2)
        let fragmented = try MediaProbe.probe(path)
        XCTAssertEqual(fragmented.streams.first?.codec, "aac")
        XCTAssertEqual(fragmented.streams.first?.channels, 2)
        XCTAssertEqual(fragmented.streams.first?.sampleRate, 48000)

        let final = dir.appendingPathComponent("b.m4a").path
        let result = try MP4Finalizer.remux(from: path, to: final)
        XCTAssertFalse(result.stoppedAtDamage)
        XCTAssertGreaterThan(result.packets, 140)   // 3 s / (1024/48000 s) ≈ 141
        let info = try MediaProbe.probe(final)
        XCTAssertEqual(try XCTUnwrap(info.duration), 3.0, accuracy: 0.03)
    }

    func testAnUnfinishedFileIsReadableUpToItsLastFragment() throws {
        let path = dir.appendingPathComponent("torn.m4a").path
        // Never finished: what a crash leaves. One-second fragments are pushed out as they complete.
        let writer = try writeSine(path, seconds: 3.5, channels: 1, finish: false)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        XCTAssertGreaterThan(size, 20_000, "fragments were not flushed to the file while writing")
        let salvaged = dir.appendingPathComponent("salvaged.m4a").path
        let result = try MP4Finalizer.remux(from: path, to: salvaged)
        XCTAssertGreaterThan(result.packets, 100)
        let info = try MediaProbe.probe(salvaged)
        XCTAssertEqual(try XCTUnwrap(info.duration), 3.0, accuracy: 0.6)
        withExtendedLifetime(writer) {}
    }

    func testErrorsNameTheCallAndTheFile() {
        XCTAssertThrowsError(try MediaProbe.probe(dir.appendingPathComponent("missing.m4a").path)) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("avformat_open_input") && text.contains("missing.m4a"), text)
        }
        XCTAssertThrowsError(try AudioFileWriter(path: "/nonexistent-dir/x.m4a", encoding: AudioEncoding())) {
            XCTAssertTrue("\($0)".contains("avio_open"), "\($0)")
        }
    }
}
