import Foundation
import Metering
import RecdAPI
import XCTest

final class MeteringTests: XCTestCase {
    /// `seconds` of a sine at `amplitude` (of full scale) per channel, interleaved.
    func sine(_ amplitudes: [Double], seconds: Double, frequency: Double = 1000) -> [Int16] {
        let frames = Int(seconds * 48000)
        var out = [Int16](repeating: 0, count: frames * amplitudes.count)
        for n in 0..<frames {
            for (c, a) in amplitudes.enumerated() {
                out[n * amplitudes.count + c] = Int16((a * 32767 * sin(2 * .pi * frequency * Double(n) / 48000)).rounded())
            }
        }
        return out
    }

    func readings(_ samples: [Int16], channels: Int, intervalMs: Int = 50, block: Int = 1920) -> [LevelReading] {
        let meter = LevelMeter(LevelMeterSettings(sampleRate: 48000, channels: channels, intervalMs: intervalMs))
        var out: [LevelReading] = []
        samples.withUnsafeBufferPointer { all in
            var frame = 0
            let frames = samples.count / channels
            while frame < frames {
                let n = min(block, frames - frame)
                meter.process(UnsafeBufferPointer(rebasing: all[(frame * channels)..<((frame + n) * channels)]), frames: n) { out.append($0) }
                frame += n
            }
        }
        return out
    }

    func testFullScaleAndMinus6dBSinesAndSilence() {
        let full = readings(sine([1.0], seconds: 1), channels: 1)
        XCTAssertEqual(full.count, 20)
        for r in full {
            XCTAssertEqual(r.peak[0], 0.0, accuracy: 0.01)
            XCTAssertEqual(r.rms[0], -3.01, accuracy: 0.02)
        }
        let half = readings(sine([0.5012], seconds: 1), channels: 1)   // -6 dBFS
        XCTAssertEqual(half[5].peak[0], -6.0, accuracy: 0.02)
        XCTAssertEqual(half[5].rms[0], -9.01, accuracy: 0.02)
        let silence = readings([Int16](repeating: 0, count: 48000), channels: 1)
        XCTAssertEqual(silence[3].peak[0], LevelMeter.floorDB)
        XCTAssertEqual(silence[3].rms[0], LevelMeter.floorDB)
        XCTAssertEqual(silence[3].decay[0], LevelMeter.floorDB)
    }

    func testChannelsAreMeasuredApartAndIntervalsFollowTheSetting() {
        let r = readings(sine([0.5012, 0.1], seconds: 1), channels: 2, intervalMs: 100, block: 777)
        XCTAssertEqual(r.count, 10)
        XCTAssertEqual(r[4].peak[0], -6.0, accuracy: 0.02)
        XCTAssertEqual(r[4].peak[1], -20.0, accuracy: 0.05)
        XCTAssertEqual(r[4].endFrame, 5 * 4800)
    }

    func testDecayHoldsThenFallsAtTenDBPerSecond() {
        // 0.5 s at -6 dBFS, then silence.
        var samples = sine([0.5012], seconds: 0.5)
        samples += [Int16](repeating: 0, count: 48000 * 2)
        let r = readings(samples, channels: 1)
        XCTAssertEqual(r[9].decay[0], -6.0, accuracy: 0.02)        // loud
        XCTAssertEqual(r[15].decay[0], -6.0, accuracy: 0.02)       // 300 ms of silence: still held
        XCTAssertEqual(r[25].decay[0], -6.0 - 10 * 0.5, accuracy: 0.05)   // 0.8 s of silence: fallen 10 dB/s × 0.5 s
        XCTAssertEqual(r[25].peak[0], LevelMeter.floorDB)
    }

    func testWaveformMinMaxResampleAndFormats() throws {
        let builder = WaveformBuilder(sampleRate: 48000, channels: 2, samplesPerPixel: 4)
        // 10 frames: ch0 = n * 100, ch1 = -n * 100.
        let frames = (0..<10).flatMap { [Int16($0 * 100), Int16(-$0 * 100)] }
        frames.withUnsafeBufferPointer { builder.append($0, frames: 10) }
        let w = builder.finish()
        XCTAssertEqual(w.length, 3)
        XCTAssertEqual(w.data, [0, 300, -300, 0,   400, 700, -700, -400,   800, 900, -900, -800])
        let coarse = w.resampled(samplesPerPixel: 8)
        XCTAssertEqual(coarse.length, 2)
        XCTAssertEqual(coarse.data, [0, 700, -700, 0,   800, 900, -900, -800])
        XCTAssertEqual(w.eightBit().data, [0, 1, -1, 0, 1, 2, -2, -1, 3, 3, -3, -3])

        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: w.json()) as? [String: Any])
        XCTAssertEqual(json["version"] as? Int, 2)
        XCTAssertEqual(json["channels"] as? Int, 2)
        XCTAssertEqual(json["sample_rate"] as? Int, 48000)
        XCTAssertEqual(json["samples_per_pixel"] as? Int, 4)
        XCTAssertEqual(json["bits"] as? Int, 16)
        XCTAssertEqual(json["length"] as? Int, 3)
        XCTAssertEqual((json["data"] as? [Int])?.count, 2 * 3 * 2)

        XCTAssertEqual(try WaveformData(dat: w.dat()), w)
        XCTAssertEqual(try WaveformData(dat: w.eightBit().dat()), w.eightBit())
        XCTAssertEqual(w.dat().count, 24 + 12 * 2)
        XCTAssertThrowsError(try WaveformData(dat: Data(w.dat().prefix(30))))
    }

    /// The JSON recd writes is what recctl reads: one definition of the format (RecdAPI.WaveformData).
    func testWaveformJSONReadsBackAsWritten() throws {
        let w = WaveformData(sampleRate: 48_000, samplesPerPixel: 256, channels: 2, bits: 16,
                             data: [-32768, 32767, -5, 7, 0, 0, -100, 100])
        let read = try JSONDecoder().decode(WaveformData.self, from: w.json())
        XCTAssertEqual(read, w)
        XCTAssertEqual(read.envelope, [1, 100.0 / 32768])
        XCTAssertEqual(try WaveformData(dat: w.dat()), w)
        XCTAssertThrowsError(try JSONDecoder().decode(WaveformData.self, from: Data(#"{"version":1,"channels":1,"sample_rate":1,"samples_per_pixel":1,"bits":8,"data":[]}"#.utf8)))
    }
}
