import Foundation
import Media
import MediaWire
import XCTest

/// Lossless trims of files as recd writes them: the cut lands on the sample asked for, at both ends.
final class TrimTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-trim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// A finalized recording (fragmented write, then the finalizing remux) of `signal` at 48 kHz mono.
    func recording(seconds: Double, _ signal: (Int) -> Int16) throws -> String {
        let fragmented = dir.appendingPathComponent("rec.frag.m4a").path
        let writer = try AudioFileWriter(path: fragmented, encoding: AudioEncoding(channels: 1))
        let total = Int(seconds * 48000)
        var block = [Int16](repeating: 0, count: 777)
        var written = 0
        while written < total {
            let n = min(777, total - written)
            for i in 0..<n { block[i] = signal(written + i) }
            try block.withUnsafeBufferPointer { try writer.append(interleaved: $0, frames: n) }
            written += n
        }
        try writer.finish()
        let path = dir.appendingPathComponent("rec.m4a").path
        _ = try MP4Finalizer.remux(from: fragmented, to: path)
        return path
    }

    /// Decoded by the ffmpeg CLI (not recd's code), 48 kHz mono.
    func decode(_ path: String) throws -> [Int16] {
        let raw = dir.appendingPathComponent("out-\(UUID().uuidString).raw").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-nostdin", "-v", "error", "-i", path, "-f", "s16le", "-ac", "1", "-ar", "48000", "-y", raw]
        try p.run(); p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// First sample louder than `threshold`.
    func onset(_ s: [Int16], threshold: Int16 = 3000) -> Int? { s.firstIndex { abs(Int($0)) > Int(threshold) } }

    func testTheCutStartsAndEndsOnTheSampleAskedFor() throws {
        // Silence with a 1 kHz burst from sample 72,000 (1.5 s) to 96,000 (2 s).
        let source = try recording(seconds: 4) { i in
            (72_000..<96_000).contains(i) ? Int16(16000 * sin(2 * Double.pi * 1000 * Double(i) / 48000)) : 0
        }
        XCTAssertEqual(onset(try decode(source)) ?? -1, 72_000, accuracy: 24)
        let cut = dir.appendingPathComponent("cut.m4a").path
        let result = try MP4Trimmer.trim(from: source, to: cut, start: 1.2345, end: 3.1)
        XCTAssertGreaterThan(result.packets, 80)
        let decoded = try decode(cut)
        // 1.2345 s = sample 59,256: the burst now starts at 12,744; the file is 1.8655 s long.
        XCTAssertEqual(onset(decoded) ?? -1, 72_000 - 59_256, accuracy: 24, "the start is not where it was cut")
        // The edit list ends at the cut (players that read it stop there); FFmpeg 5.1's decoder plays
        // the last AAC frame to its end: at most 1,023 samples (21 ms) more.
        XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(cut).duration), 1.8655, accuracy: 0.001)
        XCTAssertTrue((89_544..<(89_544 + 1024)).contains(decoded.count), "the end is not where it was cut: \(decoded.count)")
    }

    /// A whole copy with chapters (a recording's markers, issue 47): the sound sample for sample,
    /// the duration kept, and the chapters where ffprobe (not recd's code) reads them.
    func testAWholeCopyWithChaptersKeepsEverySampleAndCarriesTheChapters() throws {
        let source = try recording(seconds: 3) { i in Int16(12000 * sin(2 * Double.pi * 997 * Double(i) / 48000)) }
        let copy = dir.appendingPathComponent("chapters.m4a").path
        // Chapters cover the timeline from 0 (the muxer starts the first one there whatever it says).
        _ = try MP4Trimmer.trim(from: source, to: copy, start: 0, end: nil, chapters: [
            MediaChapter(start: 0, end: 0.5, title: "Walk"), MediaChapter(start: 0.5, end: 1.25, title: "The plan"),
            MediaChapter(start: 1.25, end: 3, title: "Naïve “quotes” ✓"),
        ])
        XCTAssertEqual(try decode(copy), try decode(source))
        XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(copy).duration), try XCTUnwrap(try MediaProbe.probe(source).duration), accuracy: 0.0005)
        let p = Process()
        let out = Pipe()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        p.arguments = ["-v", "error", "-show_chapters", "-of", "json", copy]
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let chapters = try XCTUnwrap(json?["chapters"] as? [[String: Any]], String(decoding: data, as: UTF8.self))
        XCTAssertEqual(chapters.count, 3, String(decoding: data, as: UTF8.self))
        XCTAssertEqual(chapters.compactMap { ($0["tags"] as? [String: String])?["title"] }, ["Walk", "The plan", "Naïve “quotes” ✓"])
        XCTAssertEqual(chapters.compactMap { ($0["start_time"] as? String).flatMap(Double.init) }, [0, 0.5, 1.25])
    }

    func testACutFromTheStartKeepsThePrimingHiddenAndACutToTheEndKeepsTheEnd() throws {
        let source = try recording(seconds: 3) { i in Int16(12000 * sin(2 * Double.pi * 997 * Double(i) / 48000)) }
        let head = dir.appendingPathComponent("head.m4a").path
        _ = try MP4Trimmer.trim(from: source, to: head, start: 0, end: 1)
        let h = try decode(head)
        XCTAssertTrue((48_000..<49_024).contains(h.count), "\(h.count)")
        XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(head).duration), 1, accuracy: 0.001)
        XCTAssertGreaterThan(abs(Int(h[100])), 1000, "the first samples are the tone, not the encoder's priming")
        let tail = dir.appendingPathComponent("tail.m4a").path
        _ = try MP4Trimmer.trim(from: source, to: tail, start: 2.5, end: 3)
        XCTAssertTrue((24_000..<25_024).contains(try decode(tail).count))
        XCTAssertEqual(try XCTUnwrap(try MediaProbe.probe(tail).duration), 0.5, accuracy: 0.001)
    }
}
