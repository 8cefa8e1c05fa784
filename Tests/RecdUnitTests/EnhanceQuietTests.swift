// Where Enhance learns the noise from: the recording's quietest stretch, by its stored waveform.
import Engine
import RecdAPI
import XCTest

final class EnhanceQuietTests: XCTestCase {
    /// A mono waveform at 48 kHz, 256 samples a point: `level(t)` (0…1) at each point's time.
    func waveform(seconds: Double, _ level: (Double) -> Double) -> WaveformData {
        let points = Int(seconds * 48_000 / 256)
        let data = (0..<points).flatMap { p -> [Int16] in
            let v = Int16(32_767 * level(Double(p) * 256 / 48_000))
            return [-v, v]
        }
        return WaveformData(sampleRate: 48_000, samplesPerPixel: 256, channels: 1, bits: 16, data: data)
    }

    func testThePauseBetweenWordsIsFound() {
        // Speech everywhere but a pause at 3.0–3.6 s (noise at 0.01) and a quieter one at 6.0–6.2 s,
        // too short for the sample.
        let w = waveform(seconds: 8) { t in (3.0..<3.6).contains(t) ? 0.01 : (6.0..<6.2).contains(t) ? 0.001 : 0.5 }
        let quiet = RecordingEnhance.quietest(w, seconds: 0.35)
        XCTAssertGreaterThanOrEqual(quiet.lowerBound, 3.0 - 0.01)
        XCTAssertLessThanOrEqual(quiet.upperBound, 3.6 + 0.01)
        XCTAssertEqual(quiet.upperBound - quiet.lowerBound, 0.35, accuracy: 1e-9)
    }

    func testNotTheFirstOrLast50msAndAFallbackWithoutAWaveform() {
        // Digital silence at the very start and end (a fade, a click's edge) is not the room's noise.
        let w = waveform(seconds: 4) { t in t < 0.04 || t > 3.96 ? 0 : (1.0..<1.5).contains(t) ? 0.02 : 0.4 }
        XCTAssertEqual(RecordingEnhance.quietest(w, seconds: 0.35).lowerBound, 1.0, accuracy: 0.02)
        XCTAssertEqual(RecordingEnhance.quietest(nil, seconds: 0.35), 0.05...(0.05 + 0.35))
        // Shorter than the sample and its margins: the fallback.
        XCTAssertEqual(RecordingEnhance.quietest(waveform(seconds: 0.3) { _ in 0.1 }, seconds: 0.35), 0.05...(0.05 + 0.35))
    }

    func testARecordingJustLongEnoughForTheSampleAndItsMarginsIsNotATrap() {
        // 48 kHz, 256 a point: the sample is 65 points, each margin 9. With 83 points the windows'
        // range was (10...9): a trap that took recd down with it.
        for points in 82...86 {
            let w = WaveformData(sampleRate: 48_000, samplesPerPixel: 256, channels: 1, bits: 16,
                                 data: [Int16](repeating: 1000, count: 2 * points))
            let quiet = RecordingEnhance.quietest(w, seconds: 0.35)
            XCTAssertEqual(quiet.upperBound - quiet.lowerBound, 0.35, accuracy: 1e-9, "\(points) points")
            XCTAssertGreaterThanOrEqual(quiet.lowerBound, 0.04, "\(points) points")
        }
    }

    func testTheDenoisersDelayIsHalfItsWindowAtEachRate() {
        XCTAssertEqual(RecordingEnhance.denoiserDelay(rate: 48_000), 1200)
        XCTAssertEqual(RecordingEnhance.denoiserDelay(rate: 44_100), 1102)
        XCTAssertEqual(RecordingEnhance.denoiserDelay(rate: 16_000), 400)
    }
}
