import CEbur128
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

/// recd's own true-peak meter reads what libebur128's true-peak mode reads (the same interpolator
/// design), on signals whose peaks fall between samples, at 48 kHz (4×) and 96 kHz (2×), in blocks of
/// awkward sizes (the history carried across blocks).
final class TruePeakMeterTests: XCTestCase {
    func libebur128TruePeak(_ samples: [Int16], channels: Int, rate: Int) throws -> [Double] {
        var s: UnsafeMutablePointer<ebur128_state>? = try XCTUnwrap(ebur128_init(UInt32(channels), UInt(rate), Int32(EBUR128_MODE_TRUE_PEAK.rawValue)))
        defer { ebur128_destroy(&s) }
        samples.withUnsafeBufferPointer { _ = ebur128_add_frames_short(s, $0.baseAddress, samples.count / channels) }
        return (0..<channels).map { c in var p = 0.0; _ = ebur128_true_peak(s, UInt32(c), &p); return p }
    }

    func testItReadsWhatLibebur128Reads() throws {
        var rng = SeededGenerator(seed: 1592590337)
        for (rate, channels) in [(48_000, 2), (48_000, 1), (96_000, 2), (44_100, 2)] {
            let frames = rate * 2
            var samples = [Int16](repeating: 0, count: frames * channels)
            for i in 0..<frames {
                // fs/4 at 45° (samples at 0.707 of the peak) on channel 0, tones and noise on the other;
                // a burst near full scale in the middle.
                let burst = (frames / 2..<(frames / 2 + 480)).contains(i) ? 0.9 : 0.3
                let a = burst * sin(2 * .pi * Double(i) / 4 + .pi / 4)
                let b = 0.5 * sin(2 * .pi * 997 * Double(i) / Double(rate)) + Double.random(in: -0.1...0.1, using: &rng)
                for c in 0..<channels { samples[i * channels + c] = Int16((c == 0 ? a : b) * 32767) }
            }
            let meter = TruePeakMeter(sampleRate: rate, channels: channels)
            var at = 0
            while at < frames {
                let n = min(frames - at, [333, 4096, 1, 1000][at % 4])
                samples[(at * channels)..<((at + n) * channels)].withUnsafeBufferPointer { meter.add($0, frames: n) }
                at += n
            }
            let theirs = try libebur128TruePeak(samples, channels: channels, rate: rate)
            for c in 0..<channels {
                XCTAssertEqual(20 * log10(meter.peaks[c]), 20 * log10(theirs[c]), accuracy: 0.01, "\(rate) Hz, channel \(c)")
            }
            if rate == 48_000 { XCTAssertEqual(20 * log10(meter.peaks[0]), 20 * log10(0.9), accuracy: 0.1, "the peak between samples") }
        }
    }

    /// Blocks that cannot raise the peak are skipped (see `gainBound`): a later block whose samples
    /// all stay below the peak found so far, but whose peak between samples exceeds it, still counts.
    func testABlockQuieterInItsSamplesButLouderBetweenThemStillCounts() throws {
        let rate = 48_000, frames = 9_600
        var samples = [Int16](repeating: 0, count: frames)
        for i in 0..<frames {
            // A click of 0.8 first; then fs/4 at 45°: samples at 0.95 × 0.707 = 0.67, peaks at 0.95 between them.
            let v = i == 100 ? 0.8 : i < 4_800 ? 0.0 : 0.95 * sin(2 * .pi * Double(i) / 4 + .pi / 4)
            samples[i] = Int16(v * 32767)
        }
        let meter = TruePeakMeter(sampleRate: rate, channels: 1)
        for at in stride(from: 0, to: frames, by: 480) {
            samples[at..<(at + 480)].withUnsafeBufferPointer { meter.add($0, frames: 480) }
        }
        let theirs = try libebur128TruePeak(samples, channels: 1, rate: rate)
        XCTAssertEqual(20 * log10(meter.peaks[0]), 20 * log10(theirs[0]), accuracy: 0.01)
        XCTAssertGreaterThan(meter.peaks[0], 0.9)
    }
}

/// recd's own gating and K-weighting for mono and stereo (`GatedLoudness`, behind `LoudnessMeter`)
/// reads what libebur128 reads: integrated loudness and loudness range, on noise, tones and speech-
/// like bursts at varying levels, short and silent takes, 44.1 and 48 kHz, in awkward block sizes.
final class GatedLoudnessTests: XCTestCase {
    func libebur128(_ samples: [Int16], channels: Int, rate: Int) throws -> (Double?, Double?) {
        var s: UnsafeMutablePointer<ebur128_state>? = try XCTUnwrap(ebur128_init(UInt32(channels), UInt(rate),
                                                                               Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue)))
        defer { ebur128_destroy(&s) }
        if channels == 1 { _ = ebur128_set_channel(s, 0, Int32(EBUR128_DUAL_MONO.rawValue)) }
        samples.withUnsafeBufferPointer { _ = ebur128_add_frames_short(s, $0.baseAddress, samples.count / channels) }
        var i = 0.0, r = 0.0
        return (ebur128_loudness_global(s, &i) == 0 && i.isFinite ? i : nil, ebur128_loudness_range(s, &r) == 0 && r.isFinite ? r : nil)
    }

    func testItReadsWhatLibebur128Reads() throws {
        var rng = SeededGenerator(seed: 1592590338)
        let cases: [(rate: Int, channels: Int, seconds: Double, kind: Int)] = [
            (48_000, 2, 20, 0), (48_000, 1, 12, 1), (44_100, 2, 15, 2), (48_000, 2, 2.5, 0), (48_000, 2, 3.05, 1),
            (48_000, 1, 0.3, 0), (48_000, 2, 6, 3), (44_100, 1, 9.9, 2), (96_000, 2, 5, 0),
            // Rates below what recordings use, which imports can have: GatedLoudness from 8 kHz,
            // libebur128 itself below (measured, as before, rather than refused).
            (8_000, 2, 6, 1), (8_000, 1, 8, 2), (6_000, 1, 8, 2), (16, 1, 40, 0),
        ]
        for c in cases {
            let frames = Int(c.seconds * Double(c.rate))
            var samples = [Int16](repeating: 0, count: frames * c.channels)
            var level = 0.3
            for i in 0..<frames {
                if i % (c.rate / 2) == 0 { level = Double.random(in: 0.001...0.9, using: &rng) }   // a new level every 0.5 s
                for ch in 0..<c.channels {
                    let t = Double(i) / Double(c.rate)
                    let v: Double = switch c.kind {
                    case 0: Double.random(in: -1...1, using: &rng) * level                       // noise
                    case 1: sin(2 * .pi * (100 + 900 * Double(ch)) * t) * level                // tones, 100 Hz and 1 kHz
                    case 2: (sin(2 * .pi * 3 * t) > 0 ? 1 : 0.01) * Double.random(in: -1...1, using: &rng) * level   // bursts
                    default: 0                                                                  // silence
                    }
                    samples[i * c.channels + ch] = Int16(max(-32768, min(32767, (v * 32767).rounded())))
                }
            }
            let meter = try XCTUnwrap(LoudnessMeter(sampleRate: c.rate, channels: c.channels))
            var at = 0
            while at < frames {
                let n = min(frames - at, [4096, 333, 1, 1920, 7000][at % 5])
                samples[(at * c.channels)..<((at + n) * c.channels)].withUnsafeBufferPointer { meter.add($0, frames: n) }
                at += n
            }
            let ours = meter.result()
            let (i, r) = try libebur128(samples, channels: c.channels, rate: c.rate)
            let label = "\(c.rate) Hz, \(c.channels) ch, \(c.seconds) s, kind \(c.kind)"
            XCTAssertEqual(ours.integrated == nil, i == nil, "\(label): \(String(describing: ours.integrated)) vs \(String(describing: i))")
            XCTAssertEqual(ours.range == nil, r == nil, "\(label): \(String(describing: ours.range)) vs \(String(describing: r))")
            if let a = ours.integrated, let b = i { XCTAssertEqual(a, b, accuracy: 0.011, label) }
            if let a = ours.range, let b = r { XCTAssertEqual(a, b, accuracy: 0.011, label) }
        }
    }
}
