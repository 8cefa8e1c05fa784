// Listening's ears (issue 49): the microphone's sound made into what a voice detector takes (16 kHz
// mono), and the two detectors — Silero VAD in a process of its own, or a level gate when the
// transcriber's environment is not installed.
import Alsa
import Capture
import Foundation
import MediaWorker
import RecdAPI

/// Decides speech per 32 ms window of 16 kHz mono sound. Made on one thread, then used by one only
/// (the listening loop's): hence Sendable.
package protocol SpeechDetector: AnyObject, Sendable {
    var kind: VoiceDetectorKind { get }
    /// One probability (0...1) per window of `VoiceDetectorWire.windowSamples` samples in `samples`
    /// (whole windows). Throws when the detector failed for good.
    func probabilities(_ samples: UnsafeBufferPointer<Int16>) throws -> [Double]
    /// The next sound does not follow the last (capture was reopened).
    func reset()
    /// Ends what the detector runs (its process).
    func close()
}

/// Silero VAD (`VoiceDetectorProcess`).
final class SileroSpeechDetector: SpeechDetector, @unchecked Sendable {
    let kind = VoiceDetectorKind.silero
    private let process: VoiceDetectorProcess
    init(transcriberDirectory: String) throws {
        process = try VoiceDetectorProcess(directory: transcriberDirectory)
    }
    func probabilities(_ samples: UnsafeBufferPointer<Int16>) throws -> [Double] { try process.detect(samples) }
    func reset() { try? process.reset() }
    func close() { process.end() }
}

/// A level gate with hysteresis: a window is "speech" (1) once its RMS reaches `openDb`, and stays so
/// until it falls below `closeDb`. It hears any sound, not only speech (music, a fan turned up): the
/// fallback when Silero is not installed, and said so in status.
package final class LevelGateDetector: SpeechDetector, @unchecked Sendable {
    package let kind = VoiceDetectorKind.level
    let openDb: Double
    let closeDb: Double
    private var open = false
    package init(openDb: Double = -40, closeDb: Double = -48) { self.openDb = openDb; self.closeDb = closeDb }

    package func probabilities(_ samples: UnsafeBufferPointer<Int16>) throws -> [Double] {
        let n = VoiceDetectorWire.windowSamples
        return stride(from: 0, to: samples.count - n + 1, by: n).map { at in
            var sum = 0.0
            for i in at..<(at + n) { let v = Double(samples[i]) / 32768; sum += v * v }
            let db = 10 * log10(max(sum / Double(n), 1e-16))
            open = open ? db >= closeDb : db >= openDb
            return open ? 1 : 0
        }
    }
    package func reset() { open = false }
    package func close() {}
}

/// The microphone's frames (any of ALSA's sample formats, rate and channels) → 16 kHz mono S16 for
/// the detector: channels averaged, then each 16 kHz sample the mean of the frames it spans (a box
/// filter: plain decimation aliased a voice's hiss into the band Silero listens to, and it heard the
/// first word a quarter second late), with the peak and RMS of what went in, for the level shown.
package struct SpeechInput {
    let format: CaptureStreamFormat
    /// Input frames per output sample.
    private let step: Double
    /// Input frames gathered into the output sample being made, and their sum.
    private var gathered = 0.0
    private var sum: Float = 0
    private var count = 0
    private(set) var peak: Float = 0
    private(set) var sumSquares: Double = 0
    private(set) var measured = 0

    package init(format: CaptureStreamFormat) {
        self.format = format
        step = Double(format.rate) / Double(VoiceDetectorWire.sampleRate)
    }

    /// The level since the last call, in dBFS (peak, RMS), and starts a new interval.
    mutating func takeLevel() -> (peak: Double, rms: Double) {
        defer { peak = 0; sumSquares = 0; measured = 0 }
        let db = { (x: Double) in x > 0 ? max(-160, 20 * log10(x)) : -160 }
        return (db(Double(peak)), measured > 0 ? db((sumSquares / Double(measured)).squareRoot()) : -160)
    }

    /// Appends `frames` frames of `raw` (in `format`), converted, to `out`.
    package mutating func convert(_ raw: UnsafeRawBufferPointer, frames: Int, into out: inout [Int16]) {
        let channels = format.channels
        let bytes = format.format.bytesPerSample
        for f in 0..<frames {
            // (Not `sum`: a local of that name hid the gathered sum, and the "box filter" was plain
            // decimation at 2/3 of the level, until 2026-11-30.)
            var channelSum: Float = 0
            for c in 0..<channels { channelSum += Self.sample(raw, at: (f * channels + c) * bytes, format.format) }
            let v = channelSum / Float(channels)
            peak = max(peak, abs(v))
            sumSquares += Double(v * v)
            measured += 1
            sum += v
            count += 1
            gathered += 1
            if gathered >= step {
                out.append(Int16(clamping: Int((sum / Float(count) * 32767).rounded())))
                gathered -= step
                sum = 0
                count = 0
            }
        }
    }

    /// One sample as -1...1.
    static func sample(_ raw: UnsafeRawBufferPointer, at offset: Int, _ format: AlsaSampleFormat) -> Float {
        switch format {
        case .s16: return Float(raw.loadUnaligned(fromByteOffset: offset, as: Int16.self)) / 32768
        case .s32, .s24In32:
            let v = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            return format == .s32 ? Float(v) / 2_147_483_648 : Float((v << 8) >> 8) / 8_388_608
        case .float: return raw.loadUnaligned(fromByteOffset: offset, as: Float.self)
        case .s24Packed:
            let b0 = Int32(raw[offset]), b1 = Int32(raw[offset + 1]), b2 = Int32(raw[offset + 2])
            return Float(((b0 | b1 << 8 | b2 << 16) << 8) >> 8) / 8_388_608
        }
    }
}
