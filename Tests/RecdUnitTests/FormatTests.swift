import Foundation
import Media
import MediaWire
import XCTest

/// Opus and FLAC written as recordings are (fragmented MP4, then the finalizing remux), salvaged torn,
/// and trimmed: FLAC gives back exactly the samples it was given; Opus starts on the sample.
final class FormatTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-formats-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Writes `samples` (interleaved) in blocks of an awkward size; finishes unless told not to.
    func write(_ samples: [Int16], codec: AudioCodec, channels: Int, to name: String, finish: Bool = true,
               bitRate: Int = 32_000) throws -> (String, AudioFileWriter) {
        let path = dir.appendingPathComponent(name).path
        let writer = try AudioFileWriter(path: path, encoding: AudioEncoding(codec: codec, channels: channels, bitRate: bitRate))
        var at = 0
        while at < samples.count {
            let n = min(777 * channels, samples.count - at)
            try samples[at..<(at + n)].withUnsafeBufferPointer { try writer.append(interleaved: $0, frames: n / channels) }
            at += n
        }
        if finish { try writer.finish() }
        return (path, writer)
    }

    /// Decoded by the ffmpeg CLI (not recd's code) as s16 with the file's own channels and rate.
    func decode(_ path: String) throws -> [Int16] {
        let raw = dir.appendingPathComponent("out-\(UUID().uuidString).raw").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-nostdin", "-v", "error", "-i", path, "-f", "s16le", "-y", raw]
        try p.run(); p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// A tone with noise on it (every bit of every sample matters to a lossless check), stereo
    /// channels different.
    func signal(frames: Int, channels: Int) -> [Int16] {
        var rng = SeededGenerator(seed: 1592590339)
        var out = [Int16](repeating: 0, count: frames * channels)
        for i in 0..<frames {
            let tone = 12000 * sin(2 * Double.pi * 997 * Double(i) / 48000)
            for c in 0..<channels {
                out[i * channels + c] = Int16(tone / Double(c + 1)) &+ Int16.random(in: -300...300, using: &rng)
            }
        }
        return out
    }

    func onset(_ s: [Int16], threshold: Int16 = 3000) -> Int? { s.firstIndex { abs(Int($0)) > Int(threshold) } }

    func testFLACGivesBackExactlyTheSamplesItWasGiven() throws {
        for channels in [1, 2] {
            let pcm = signal(frames: 48_000 * 2 + 333, channels: channels)
            let (fragmented, _) = try write(pcm, codec: .flac, channels: channels, to: "f\(channels).m4a")
            XCTAssertEqual(try MediaProbe.probe(fragmented).streams.first?.codec, "flac")
            XCTAssertTrue(try decode(fragmented) == pcm, "the fragmented file (\(channels) ch) does not decode to the samples given")
            let final = dir.appendingPathComponent("final\(channels).m4a").path
            let result = try MP4Finalizer.remux(from: fragmented, to: final)
            XCTAssertFalse(result.stoppedAtDamage)
            XCTAssertTrue(try decode(final) == pcm, "the finalized file (\(channels) ch) does not decode to the samples given")
            XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(final).duration), Double(48_000 * 2 + 333) / 48_000, accuracy: 0.001)
        }
    }

    func testOpusStartsOnTheSampleAndLastsAsLongAsWhatWasWritten() throws {
        // Silence, then a 1 kHz burst from sample 72,000 to 96,000.
        let pcm = (0..<(48_000 * 3)).map { i in
            (72_000..<96_000).contains(i) ? Int16(16000 * sin(2 * Double.pi * 1000 * Double(i) / 48000)) : 0
        }
        let (fragmented, _) = try write(pcm, codec: .opus, channels: 1, to: "o.m4a")
        XCTAssertEqual(try MediaProbe.probe(fragmented).streams.first?.codec, "opus")
        let final = dir.appendingPathComponent("final.m4a").path
        _ = try MP4Finalizer.remux(from: fragmented, to: final)
        let decoded = try decode(final)
        XCTAssertEqual(onset(decoded) ?? -1, 72_000, accuracy: 48, "Opus's pre-skip is not hidden (or hidden twice)")
        XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(final).duration), 3.0, accuracy: 0.025)
        XCTAssertEqual(Double(decoded.count), 144_000, accuracy: 960, "decoded \(decoded.count) samples")
        // 32 kbit/s: about 12 KB for 3 s.
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: final)[.size] as? NSNumber).intValue
        XCTAssertLessThan(size, 20_000)
    }

    func testTornOpusAndFLACFilesAreSalvagedUpToTheirLastFragment() throws {
        for codec in [AudioCodec.opus, .flac] {
            let pcm = signal(frames: 48_000 * 7 / 2, channels: 1)
            let (torn, writer) = try write(pcm, codec: codec, channels: 1, to: "torn-\(codec).m4a", finish: false)
            let salvaged = dir.appendingPathComponent("salvaged-\(codec).m4a").path
            let result = try MP4Finalizer.remux(from: torn, to: salvaged)
            XCTAssertGreaterThan(result.packets, 0)
            XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(salvaged).duration), 3.0, accuracy: 0.6, "\(codec)")
            if codec == .flac {
                let d = try decode(salvaged)
                XCTAssertTrue(pcm.prefix(d.count).elementsEqual(d), "a salvaged FLAC file holds the samples given, as far as it goes")
            }
            withExtendedLifetime(writer) {}
        }
    }

    func testCutsStartOnTheSampleAskedFor() throws {
        let pcm = (0..<(48_000 * 4)).map { i in
            (72_000..<96_000).contains(i) ? Int16(16000 * sin(2 * Double.pi * 1000 * Double(i) / 48000)) : 0
        }
        for codec in [AudioCodec.opus, .flac] {
            let (fragmented, _) = try write(pcm, codec: codec, channels: 1, to: "src-\(codec).frag.m4a")
            let source = dir.appendingPathComponent("src-\(codec).m4a").path
            _ = try MP4Finalizer.remux(from: fragmented, to: source)
            let cut = dir.appendingPathComponent("cut-\(codec).m4a").path
            _ = try MP4Trimmer.trim(from: source, to: cut, start: 1.2345, end: 3.1)
            let decoded = try decode(cut)
            // The burst's first loud sample is its third (72,002); 1.2345 s is sample 59,256.
            XCTAssertEqual(onset(decoded) ?? -1, try XCTUnwrap(onset(pcm)) - 59_256, accuracy: codec == .flac ? 0 : 48,
                           "\(codec): the start is not where it was cut")
            XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(cut).duration), 1.8655, accuracy: 0.001, "\(codec)")
            if codec == .flac {
                XCTAssertGreaterThanOrEqual(decoded.count, 89_544)
                XCTAssertTrue(decoded.prefix(89_544).elementsEqual(pcm[59_256..<(59_256 + 89_544)]), "a FLAC cut is the source's samples")
            }
        }
    }
}
