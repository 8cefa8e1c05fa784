// Playback speed (issue 47): SpeechTempo, recd's WSOLA — the length scaled by the speed, the pitch kept.
import Foundation
import Metering
import XCTest

final class SpeechTempoTests: XCTestCase {
    /// `seconds` of a `hz` sine at 48 kHz, mono, through a tempo at `speed`, flushed: what comes out.
    func played(hz: Double, seconds: Double, speed: Double) throws -> [Int16] {
        let tempo = try XCTUnwrap(SpeechTempo(rate: 48000, channels: 1, speed: speed))
        var input = (0..<Int(seconds * 48000)).map { Int16(12000 * sin(2 * .pi * hz * Double($0) / 48000)) }
        var out: [Int16] = [], chunk: [Int16] = []
        // In blocks, as the decoder gives them.
        let block = 4800
        for start in stride(from: 0, to: input.count, by: block) {
            let n = min(block, input.count - start)
            XCTAssertTrue(input.withUnsafeMutableBufferPointer { tempo.write(UnsafeMutableBufferPointer(rebasing: $0[start..<(start + n)]), frames: n) })
            out += chunk[0..<tempo.read(into: &chunk)]
        }
        tempo.flush()
        out += chunk[0..<tempo.read(into: &chunk)]
        return out
    }

    /// Upward zero crossings a second.
    func frequency(_ s: ArraySlice<Int16>) -> Double {
        var crossings = 0
        for i in s.indices.dropFirst() where s[i - 1] < 0 && s[i] >= 0 { crossings += 1 }
        return Double(crossings) / (Double(s.count) / 48000)
    }

    func testTheLengthScalesWithTheSpeedAndThePitchIsKept() throws {
        for speed in [0.5, 1.5, 2.0] {
            let out = try played(hz: 440, seconds: 4, speed: speed)
            XCTAssertEqual(Double(out.count) / 48000, 4 / speed, accuracy: 0.05, "speed \(speed)")
            XCTAssertEqual(frequency(out[4800..<(out.count - 4800)]), 440, accuracy: 4, "speed \(speed): the pitch moved")
        }
    }
}
