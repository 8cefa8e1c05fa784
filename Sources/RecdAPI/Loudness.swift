// A recording's loudness by EBU R128 / ITU-R BS.1770.
import FoundationEssentials

/// What EBU R128 says of a recording. `integrated` is null for silence (−∞ LUFS: nothing passes the
/// gates), `truePeak` for a recording of digital silence.
public struct Loudness: Codable, Sendable, Equatable {
    /// Integrated (programme) loudness, LUFS.
    @Nullable public var integrated: Double?
    /// Loudness range, LU.
    @Nullable public var range: Double?
    /// True peak over all channels (4x oversampled), dBTP.
    @Nullable public var truePeak: Double?
    public init(integrated: Double?, range: Double?, truePeak: Double?) {
        self.integrated = integrated; self.range = range; self.truePeak = truePeak
    }
}
