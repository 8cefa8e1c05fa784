// A recording's loudness by EBU R128 / ITU-R BS.1770.
import Foundation

/// What EBU R128 says of a recording. `integrated` is null for silence (−∞ LUFS: nothing passes the
/// gates), `truePeak` for a recording of digital silence.
public struct Loudness: Codable, Sendable, Equatable {
    /// Integrated (programme) loudness, LUFS.
    public var integrated: Double?
    /// Loudness range, LU.
    public var range: Double?
    /// True peak over all channels (4x oversampled), dBTP.
    public var truePeak: Double?
    public init(integrated: Double?, range: Double?, truePeak: Double?) {
        self.integrated = integrated; self.range = range; self.truePeak = truePeak
    }

    enum CodingKeys: String, CodingKey { case integrated, range, truePeak }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        integrated = try c.decodeIfPresent(Double.self, forKey: .integrated)
        range = try c.decodeIfPresent(Double.self, forKey: .range)
        truePeak = try c.decodeIfPresent(Double.self, forKey: .truePeak)
    }

    /// Every key always present (null when there is no value), as the rest of the API.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(integrated, forKey: .integrated)
        try c.encode(range, forKey: .range)
        try c.encode(truePeak, forKey: .truePeak)
    }
}
