import Foundation
import Media
import MediaWire
import Storage
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

    /// A disk that fills (or a power cut) while a fragment's `moof` is written: FFmpeg cannot open
    /// the file at all until the torn box is cut off; then it reads every whole fragment before it.
    func testATornMoofIsCutOffAndTheFragmentsBeforeItRead() throws {
        let path = dir.appendingPathComponent("whole.m4a").path
        let writer = try writeSine(path, seconds: 3.5, channels: 1, finish: false)
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        withExtendedLifetime(writer) {}
        var boxes: [(type: String, start: Int, size: Int)] = []
        var offset = 0
        while offset + 8 <= file.count {
            let size = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            boxes.append((String(decoding: file[offset + 4..<offset + 8], as: UTF8.self), offset, size))
            offset += size
        }
        let moof = try XCTUnwrap(boxes.last { $0.type == "moof" })
        let mdat = try XCTUnwrap(boxes.first { $0.type == "mdat" })
        XCTAssertGreaterThanOrEqual(boxes.filter { $0.type == "moof" }.count, 3, "\(boxes)")
        func cutCopy(_ name: String, at length: Int) throws -> String {
            let copy = dir.appendingPathComponent(name).path
            try file.prefix(length).write(to: URL(fileURLWithPath: copy))
            return copy
        }
        // Torn inside the moof, and inside its header.
        for (name, length) in [("torn-moof.m4a", moof.start + moof.size / 2), ("torn-header.m4a", moof.start + 5)] {
            let torn = try cutCopy(name, at: length)
            if length - moof.start > 8 {
                XCTAssertThrowsError(try MediaProbe.probe(torn), "FFmpeg opens a file torn in a moof: the cut is not needed")
            }
            XCTAssertEqual(TornFragment.tornTailOffset(of: torn), Int64(moof.start))
            XCTAssertEqual(try TornFragment.cut(torn), Int64(length - moof.start))
            XCTAssertEqual(FileOps.size(torn), Int64(moof.start))
            XCTAssertEqual(try TornFragment.cut(torn), 0, "a second pass finds nothing to cut")
            let result = try MP4Finalizer.remux(from: torn, to: torn + ".final.m4a")
            XCTAssertGreaterThan(result.packets, 90, "the two whole fragments before it: 2 s of 1024-sample packets")
        }
        // Torn inside an mdat: FFmpeg reads what is there; nothing is cut.
        let tornData = try cutCopy("torn-mdat.m4a", at: mdat.start + mdat.size / 2)
        XCTAssertNil(TornFragment.tornTailOffset(of: tornData))
        XCTAssertEqual(try TornFragment.cut(tornData), 0)
        XCTAssertNoThrow(try MediaProbe.probe(tornData))
        // Not MP4 boxes at all, or not starting with ftyp: not recd's to cut.
        let text = dir.appendingPathComponent("notes.m4a")
        try Data("these are not MP4 boxes\n".utf8).write(to: text)
        XCTAssertNil(TornFragment.tornTailOffset(of: text.path))
        try (Data([0, 0, 0, 16]) + Data("moov".utf8) + Data(count: 4)).write(to: text)
        XCTAssertNil(TornFragment.tornTailOffset(of: text.path))
    }

    func testErrorsNameTheCallAndTheFile() {
        XCTAssertThrowsError(try MediaProbe.probe(dir.appendingPathComponent("missing.m4a").path)) {
            let text = "\($0)"
            // recd-media opens the file itself (FFmpegInput), then hands it to FFmpeg.
            XCTAssertTrue(text.contains("avio_open2") && text.contains("missing.m4a"), text)
        }
        XCTAssertThrowsError(try AudioFileWriter(path: "/nonexistent-dir/x.m4a", encoding: AudioEncoding())) {
            XCTAssertTrue("\($0)".contains("avio_open"), "\($0)")
        }
    }
}

/// The capture side's conversion to the recording's format (any microphone, issue 13).
final class CapturedPCMConverterTests: XCTestCase {
    func testTwentyFourBitLayoutsWidenWithTheirSign() {
        // -2 and +0x123456 as S24_3LE and as S24_LE.
        let packed: [UInt8] = [0xFE, 0xFF, 0xFF, 0x56, 0x34, 0x12]
        let in32: [UInt8] = [0xFE, 0xFF, 0xFF, 0x00, 0x56, 0x34, 0x12, 0x00]
        var out = [Int32](repeating: 0, count: 2)
        for (bytes, format) in [(packed, CapturedSampleFormat.s24Packed), (in32, .s24In32)] {
            bytes.withUnsafeBytes { raw in
                out.withUnsafeMutableBufferPointer { CapturedPCMConverter.widen(raw.baseAddress!, format: format, count: 2, into: $0) }
            }
            XCTAssertEqual(out, [-2 << 8, 0x123456 << 8], "\(format)")
        }
    }

    /// A −6 dBFS sine on both channels of a 44.1 kHz S32 stereo device: recorded as 48 kHz mono at
    /// −6 dBFS peak, −9 dBFS RMS (averaged, not summed or mixed at −3 dB), and its pitch kept.
    func testStereoS32At44kBecomesMonoS16At48kWithLevelAndPitchKept() throws {
        let converter = try CapturedPCMConverter(from: .s32, rate: 44100, channels: 2, toRate: 48000, toChannels: 1)
        let amplitude = 0.5012, frequency = 440.0
        var output: [Int16] = []
        var n = 0
        for _ in 0..<50 {   // 50 reads of 1764 frames (40 ms): 2 s
            var block = [Int32](repeating: 0, count: 1764 * 2)
            for f in 0..<1764 {
                let v = Int32((amplitude * sin(2 * .pi * frequency * Double(n) / 44100) * 2147483647).rounded())
                block[2 * f] = v; block[2 * f + 1] = v
                n += 1
            }
            let converted = try block.withUnsafeBytes { try converter.convert($0.baseAddress!, frames: 1764) }
            output += converted
        }
        XCTAssertEqual(Double(output.count), 2 * 48000, accuracy: 100)
        let body = output[4800..<(output.count - 4800)]
        let peak = body.map { abs(Double($0)) / 32768 }.max()!
        let rms = (body.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(body.count)).squareRoot() / 32768
        XCTAssertEqual(20 * log10(peak), -6, accuracy: 0.1)
        XCTAssertEqual(20 * log10(rms), -9.01, accuracy: 0.1)
        var crossings = 0
        for i in body.indices.dropFirst() where body[i - 1] < 0 && body[i] >= 0 { crossings += 1 }
        XCTAssertEqual(Double(crossings) / (Double(body.count) / 48000), frequency, accuracy: 2)
    }

    /// A mono device recorded as stereo: both channels at the device's level.
    func testMonoBecomesStereoAtFullLevel() throws {
        let converter = try CapturedPCMConverter(from: .float, rate: 48000, channels: 1, toRate: 48000, toChannels: 2)
        let block: [Float] = (0..<4800).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        let converted = Array(try block.withUnsafeBytes { try converter.convert($0.baseAddress!, frames: 4800) })
        XCTAssertEqual(converted.count, 9600)
        let left = stride(from: 0, to: converted.count, by: 2).map { converted[$0] }
        let right = stride(from: 1, to: converted.count, by: 2).map { converted[$0] }
        XCTAssertEqual(left, right)
        XCTAssertEqual(Double(left.map { abs(Int($0)) }.max()!) / 32768, 0.5, accuracy: 0.01)
    }
}
