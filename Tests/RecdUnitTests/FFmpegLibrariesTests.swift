import Foundation
@testable import Media
import XCTest

/// FFmpeg loaded on use and closed when idle (CFFmpegShim's FFmpegLoader.c), in this process: an
/// unload never happens under a living FFmpeg object or a call, and everything works after a reload.
final class FFmpegLibrariesTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-fflib-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        FFmpegLibraries.unloadWhenIdle(after: nil)   // the rest of the suite: loaded once, as before
        try? FileManager.default.removeItem(at: dir)
    }

    /// One second of a 440 Hz tone written, finalized, probed, decoded back and hashed.
    func roundTrip(_ name: String) throws { try Self.roundTrip(dir.appendingPathComponent("\(name).m4a").path) }

    static func roundTrip(_ path: String) throws {
        let writer = try AudioFileWriter(path: path, encoding: AudioEncoding(channels: 1))
        var block = [Int16](repeating: 0, count: 960)
        for n in 0..<50 {
            for i in 0..<960 { block[i] = Int16(8000 * sin(2 * Double.pi * 440 * Double(n * 960 + i) / 48000)) }
            try block.withUnsafeBufferPointer { try writer.append(interleaved: $0, frames: 960) }
        }
        try writer.finish()
        XCTAssertEqual(try XCTUnwrap(MediaProbe.probe(path).duration), 1.0, accuracy: 0.05)
        let decoder = try AudioFileDecoder(path: path)
        try decoder.setOutput(rate: 48000, channels: 1)
        var buffer = [Int16](), frames = 0
        while let got = try decoder.read(into: &buffer) { frames += got.frames }
        XCTAssertEqual(Double(frames) / 48000, 1.0, accuracy: 0.05)
        let hash = try ContentHash()
        Array("abc".utf8).withUnsafeBytes { hash.update($0) }
        XCTAssertEqual(hash.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        try? FileManager.default.removeItem(atPath: path)
    }

    func testLibrariesAreClosedWhenIdleAndLoadedAgainOnUse() throws {
        FFmpegLibraries.unloadWhenIdle(after: 0.2)
        try roundTrip("first")
        XCTAssertTrue(FFmpegLibraries.isLoaded)
        let unloads = FFmpegLibraries.unloadCount, loads = FFmpegLibraries.loadCount
        let deadline = Date().addingTimeInterval(10)
        // (Counted once the libraries are closed, after `isLoaded` turned false.)
        while FFmpegLibraries.unloadCount == unloads && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(FFmpegLibraries.unloadCount, unloads + 1, "nothing held FFmpeg for 0.2 s: it should be closed")
        XCTAssertFalse(FFmpegLibraries.isLoaded)
        try roundTrip("again")
        XCTAssertEqual(FFmpegLibraries.loadCount, loads + 1)

        // While an object lives, the libraries stay, however long it waits between calls.
        let hash = try ContentHash()
        Thread.sleep(forTimeInterval: 0.6)
        XCTAssertTrue(FFmpegLibraries.isLoaded)
        Array("abc".utf8).withUnsafeBytes { hash.update($0) }
        XCTAssertEqual(hash.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// Four threads writing, decoding and hashing while the libraries are closed the moment nothing
    /// holds them: many unloads and loads race the work, and every result is still right.
    func testConcurrentWorkRacingUnloadsStaysCorrect() throws {
        FFmpegLibraries.unloadWhenIdle(after: 0)
        let loads = FFmpegLibraries.loadCount
        final class Errors: @unchecked Sendable {
            let lock = NSLock()
            var list: [String] = []
            func add(_ e: String) { lock.lock(); list.append(e); lock.unlock() }
        }
        let errors = Errors()
        let group = DispatchGroup()
        let dir = self.dir!
        for t in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for i in 0..<6 {
                    do {
                        try Self.roundTrip(dir.appendingPathComponent("t\(t)-\(i).m4a").path)
                        // An error's text comes from av_strerror, outside any object.
                        XCTAssertTrue(FFmpegError(call: "x", code: -2).message.contains("No such file"))
                    } catch {
                        errors.add("\(error)")
                    }
                    Thread.sleep(forTimeInterval: Double(t) * 0.01)
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(errors.list, [])
        XCTAssertGreaterThan(FFmpegLibraries.loadCount, loads + 1, "the work should have reloaded the libraries at least twice")
    }
}
