// Waveforms: built from a recording's samples as they pass, zoomed and reduced for the API.
import Foundation
import RecdAPI

/// Zoom and depth changes of a waveform (its format is RecdAPI's `WaveformData`, shared with recctl).
extension WaveformData {

    /// The same waveform at a coarser zoom: each new pixel covers `samplesPerPixel` samples (at least
    /// the stored resolution), the min of the mins and max of the maxes of the stored pixels under it.
    public func resampled(samplesPerPixel target: Int) -> WaveformData {
        guard target > samplesPerPixel else { return self }
        let totalSamples = length * samplesPerPixel
        let outLength = (totalSamples + target - 1) / target
        var out = [Int16]()
        out.reserveCapacity(outLength * 2 * channels)
        for p in 0..<outLength {
            let first = p * target / samplesPerPixel
            let last = min(length, ((p + 1) * target + samplesPerPixel - 1) / samplesPerPixel)
            for c in 0..<channels {
                var lo = Int16.max, hi = Int16.min
                for q in first..<max(first + 1, last) where q < length {
                    lo = min(lo, data[(q * channels + c) * 2])
                    hi = max(hi, data[(q * channels + c) * 2 + 1])
                }
                out.append(lo == Int16.max ? 0 : lo)
                out.append(hi == Int16.min ? 0 : hi)
            }
        }
        return WaveformData(sampleRate: sampleRate, samplesPerPixel: target, channels: channels, bits: bits, data: out)
    }

    /// 8-bit values as audiowaveform makes them from 16-bit samples (divided by 256).
    public func eightBit() -> WaveformData {
        guard bits == 16 else { return self }
        return WaveformData(sampleRate: sampleRate, samplesPerPixel: samplesPerPixel, channels: channels, bits: 8,
                            data: data.map { $0 / 256 })
    }
}

/// Builds a 16-bit waveform from interleaved S16 audio as it passes (the recording's own samples:
/// no second decode). Used from one thread.
public final class WaveformBuilder {
    /// audiowaveform's default zoom; coarser zooms are derived from it.
    public static let defaultSamplesPerPixel = 256

    public let sampleRate: Int
    public let channels: Int
    public let samplesPerPixel: Int
    private var data: [Int16] = []
    private var lo: [Int16], hi: [Int16]
    private var inPixel = 0

    public init(sampleRate: Int, channels: Int, samplesPerPixel: Int = WaveformBuilder.defaultSamplesPerPixel) {
        self.sampleRate = sampleRate; self.channels = channels; self.samplesPerPixel = samplesPerPixel
        lo = [Int16](repeating: .max, count: channels)
        hi = [Int16](repeating: .min, count: channels)
        // An hour's worth up front: appending never reallocates during a normal recording.
        data.reserveCapacity(min(3600 * sampleRate / samplesPerPixel, 1 << 22) * 2 * channels)
    }

    public func append(_ samples: UnsafeBufferPointer<Int16>, frames: Int) {
        guard let base = samples.baseAddress else { return }
        var frame = 0
        while frame < frames {
            // Up to the end of the current pixel, one channel at a time, in locals.
            let n = min(frames - frame, samplesPerPixel - inPixel)
            for c in 0..<channels {
                var l = lo[c], h = hi[c]
                var index = frame * channels + c
                for _ in 0..<n {
                    let v = base[index]
                    if v < l { l = v }
                    if v > h { h = v }
                    index += channels
                }
                lo[c] = l; hi[c] = h
            }
            frame += n
            inPixel += n
            if inPixel == samplesPerPixel { flushPixel() }
        }
    }

    private func flushPixel() {
        for c in 0..<channels {
            data.append(lo[c]); data.append(hi[c])
            lo[c] = .max; hi[c] = .min
        }
        inPixel = 0
    }

    /// The waveform so far, with a last partial pixel.
    public func finish() -> WaveformData {
        if inPixel > 0 { flushPixel() }
        return WaveformData(sampleRate: sampleRate, samplesPerPixel: samplesPerPixel, channels: channels, bits: 16, data: data)
    }
}
