// Waveforms in the BBC audiowaveform data format (version 2): min/max pairs per pixel per channel.
import Foundation

/// Waveform data as audiowaveform writes it, so peaks.js and the waveform-data libraries load it
/// unchanged. `data` holds, for each pixel, for each channel, min then max.
public struct WaveformData: Sendable, Equatable {
    public var sampleRate: Int
    public var samplesPerPixel: Int
    public var channels: Int
    /// 8 or 16.
    public var bits: Int
    public var data: [Int16]

    public var length: Int { data.count / max(1, 2 * channels) }

    public init(sampleRate: Int, samplesPerPixel: Int, channels: Int, bits: Int, data: [Int16]) {
        self.sampleRate = sampleRate; self.samplesPerPixel = samplesPerPixel; self.channels = channels
        self.bits = bits; self.data = data
    }

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

    /// audiowaveform's JSON form.
    public func json() -> Data {
        var s = "{\"version\":2,\"channels\":\(channels),\"sample_rate\":\(sampleRate),\"samples_per_pixel\":\(samplesPerPixel),"
        s += "\"bits\":\(bits),\"length\":\(length),\"data\":["
        s += data.map(String.init).joined(separator: ",")
        s += "]}"
        return Data(s.utf8)
    }

    /// audiowaveform's binary `.dat` form (little-endian header, then int8 or int16 values).
    public func dat() -> Data {
        var out = Data(capacity: 24 + data.count * (bits == 8 ? 1 : 2))
        func i32(_ v: Int) { withUnsafeBytes(of: Int32(truncatingIfNeeded: v).littleEndian) { out.append(contentsOf: $0) } }
        i32(2)                       // version
        i32(bits == 8 ? 1 : 0)       // flags: bit 0 set = 8-bit data
        i32(sampleRate)
        i32(samplesPerPixel)
        i32(length)
        i32(channels)
        if bits == 8 {
            out.append(contentsOf: data.map { UInt8(bitPattern: Int8(clamping: $0)) })
        } else {
            // One copy of the whole array (an hour of stereo is ~2.7 million values), byte-swapped
            // only on a big-endian host.
            let le = data.withUnsafeBufferPointer { b in
                1.littleEndian == 1 ? Array(b) : b.map(\.littleEndian)
            }
            le.withUnsafeBytes { out.append(contentsOf: $0) }
        }
        return out
    }

    public enum ParseError: Error, Equatable { case truncated, unsupportedVersion(Int) }

    /// Reads the binary form (as stored in the catalog).
    public init(dat: Data) throws(ParseError) {
        guard dat.count >= 24 else { throw .truncated }
        let bytes = [UInt8](dat)
        func i32(_ at: Int) -> Int {
            Int(Int32(bitPattern: UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24))
        }
        let version = i32(0)
        guard version == 2 else { throw .unsupportedVersion(version) }
        let eight = i32(4) & 1 == 1
        sampleRate = i32(8); samplesPerPixel = i32(12)
        let length = i32(16)
        channels = max(1, i32(20))
        bits = eight ? 8 : 16
        let count = length * 2 * channels
        guard bytes.count >= 24 + count * (eight ? 1 : 2) else { throw .truncated }
        if eight {
            data = (0..<count).map { Int16(Int8(bitPattern: bytes[24 + $0])) }
        } else {
            data = (0..<count).map { Int16(bitPattern: UInt16(bytes[24 + 2 * $0]) | UInt16(bytes[25 + 2 * $0]) << 8) }
        }
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
