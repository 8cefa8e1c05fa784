import Foundation
import Metering
import RecdAPI
import XCTest

/// EBU R128 by the test signals of EBU Tech 3341 / 3342 that can be generated here (sines at known
/// levels; tolerance ±0.1 LU, LRA ±1 LU).
final class LoudnessTests: XCTestCase {
    /// `seconds` of a 1 kHz sine at `dbfs` (peak), S16, `channels` equal channels, fed in 4096-frame blocks.
    func measure(_ parts: [(dbfs: Double, seconds: Double)], channels: Int = 2, hz: Double = 1000) throws -> Loudness {
        let meter = try XCTUnwrap(LoudnessMeter(sampleRate: 48_000, channels: channels))
        var n = 0
        for part in parts {
            let amplitude = 32767 * pow(10, part.dbfs / 20)
            let total = Int(part.seconds * 48_000)
            var block = [Int16](repeating: 0, count: 4096 * channels)
            var done = 0
            while done < total {
                let frames = min(4096, total - done)
                for i in 0..<frames {
                    let v = Int16((amplitude * sin(2 * .pi * hz * Double(n + i) / 48_000)).rounded())
                    for c in 0..<channels { block[i * channels + c] = v }
                }
                block.withUnsafeBufferPointer { meter.add($0, frames: frames) }
                done += frames
                n += frames
            }
        }
        return meter.result()
    }

    func testTech3341StereoSinesReadTheirLevel() throws {
        XCTAssertEqual(try XCTUnwrap(try measure([(-23, 20)]).integrated), -23.0, accuracy: 0.1)
        XCTAssertEqual(try XCTUnwrap(try measure([(-33, 20)]).integrated), -33.0, accuracy: 0.1)
    }

    func testMonoReadsAsTheSameSoundOnBothSpeakers() throws {
        XCTAssertEqual(try XCTUnwrap(try measure([(-23, 10)], channels: 1).integrated), -23.0, accuracy: 0.1)
    }

    func testTech3342LoudnessRangeOfTwoLevels() throws {
        // Test 1 of Tech 3342: 20 s at −20 dBFS then 20 s at −30: LRA 10 ±1 LU.
        XCTAssertEqual(try XCTUnwrap(try measure([(-20, 20), (-30, 20)]).range), 10, accuracy: 1)
    }

    func testTruePeakOfASine() throws {
        // At 1 kHz the samples reach the wave's peak: −6 dBFS reads −6 dBTP (±0.2 dB, Tech 3341's tolerance).
        XCTAssertEqual(try XCTUnwrap(try measure([(-6, 3)]).truePeak), -6.0, accuracy: 0.2)
        // Between samples: a sine at a quarter of the rate, phase-shifted, peaks between them (+3 dB).
        let meter = try XCTUnwrap(LoudnessMeter(sampleRate: 48_000, channels: 1))
        let a = 32767 * pow(10, -6.0 / 20)
        let samples = (0..<48_000).map { Int16((a * sin(2 * .pi * 12_000 * Double($0) / 48_000 + .pi / 4)).rounded()) }
        samples.withUnsafeBufferPointer { meter.add($0, frames: samples.count) }
        XCTAssertEqual(try XCTUnwrap(meter.result().truePeak), -6.0, accuracy: 0.5, "the inter-sample peak is found")
    }

    func testSilenceHasNoIntegratedLoudnessAndNoPeak() throws {
        let r = try measure([(-200, 5)])
        XCTAssertNil(r.integrated)
        XCTAssertNil(r.truePeak)
        let json = String(decoding: try JSONEncoder().encode(r), as: UTF8.self)
        XCTAssertTrue(json.contains("\"integrated\":null") && json.contains("\"truePeak\":null"), json)
    }
}

final class LevelMatchTests: XCTestCase {
    func testTheGainReachesTheTargetWithoutPushingThePeakOverTheCeiling() {
        func gain(_ i: Double?, _ tp: Double?, target: Double? = -18) -> Double {
            LevelMatch.gain(Loudness(integrated: i, range: 3, truePeak: tp), target: target)
        }
        XCTAssertEqual(gain(-26, -20), 8)          // raised to the target
        XCTAssertEqual(gain(-10, -1), -8)          // lowered to the target
        XCTAssertEqual(gain(-30, -5), 4)           // raised only until the true peak reaches -1 dBTP
        XCTAssertEqual(gain(-18, 0.5), -1.5)       // at the target, but over the ceiling: lowered
        XCTAssertEqual(gain(-26, -20, target: nil), 0, "off")
        XCTAssertEqual(gain(nil, nil), 0, "silence")
        XCTAssertEqual(LevelMatch.gain(nil, target: -18), 0, "not measured")
    }
}
