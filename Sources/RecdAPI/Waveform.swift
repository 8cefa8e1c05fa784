// Waveforms in the BBC audiowaveform data format (version 2): min/max pairs per pixel per channel.
// One definition of the format for recd (which writes it) and recctl (which reads it).
import FoundationEssentials

/// Waveform data as audiowaveform writes it, so peaks.js and the waveform-data libraries load it
/// unchanged. `data` holds, for each pixel, for each channel, min then max.
public struct WaveformData: Sendable, Equatable, Decodable {
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

    /// Reads the JSON form (`recctl waveform` draws from it).
    enum CodingKeys: String, CodingKey { case version, channels, sample_rate, samples_per_pixel, bits, data }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let version = try c.decode(Int.self, forKey: .version)
        guard version == 2 else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: c, debugDescription: "audiowaveform version \(version), not 2")
        }
        sampleRate = try c.decode(Int.self, forKey: .sample_rate)
        samplesPerPixel = try c.decode(Int.self, forKey: .samples_per_pixel)
        channels = max(1, try c.decode(Int.self, forKey: .channels))
        bits = try c.decode(Int.self, forKey: .bits)
        data = try c.decode([Int16].self, forKey: .data)
    }

    /// The pixels covering `[start, end)` seconds (whole pixels: to `samplesPerPixel` samples).
    public func slice(from start: Double, to end: Double) -> WaveformData {
        let first = max(0, min(length, Int((start * Double(sampleRate) / Double(samplesPerPixel)).rounded(.down))))
        let last = max(first, min(length, Int((end * Double(sampleRate) / Double(samplesPerPixel)).rounded(.up))))
        let width = 2 * channels
        return WaveformData(sampleRate: sampleRate, samplesPerPixel: samplesPerPixel, channels: channels, bits: bits,
                            data: Array(data[(first * width)..<(last * width)]))
    }

    /// Per pixel: the largest |min|, |max| over the channels, 0...1.
    public var envelope: [Double] {
        let full = bits == 8 ? 128.0 : 32768.0
        return (0..<length).map { p in
            var peak = 0
            for c in 0..<channels {
                peak = max(peak, abs(Int(data[(p * channels + c) * 2])), abs(Int(data[(p * channels + c) * 2 + 1])))
            }
            return min(1, Double(peak) / full)
        }
    }
}
