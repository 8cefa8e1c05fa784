// Enhance (issue 47): a cleaned copy of a recording's sound — noise reduced, speech levelled — kept
// beside the original, never over it, for A/B listening, and removable.
import FoundationEssentials

/// A recording's enhanced copy: an AAC file recd made from the recording's sound with `filters`.
public struct EnhancedCopy: Codable, Sendable, Equatable {
    public var createdAt: Date
    /// Seconds (the original's, give or take an AAC frame).
    public var duration: Double
    public var sizeBytes: Int64
    /// The FFmpeg filters it was made with, as `ffmpeg -af` takes them.
    public var filters: String
    /// Integrated loudness (EBU R128, LUFS) and true peak (dBTP) of the copy, and the original's
    /// loudness when it was made; null for silence.
    @Nullable public var loudness: Double?
    @Nullable public var truePeak: Double?
    @Nullable public var originalLoudness: Double?
    public init(createdAt: Date, duration: Double, sizeBytes: Int64, filters: String, loudness: Double?, truePeak: Double?, originalLoudness: Double?) {
        self.createdAt = createdAt; self.duration = duration; self.sizeBytes = sizeBytes; self.filters = filters
        self.loudness = loudness; self.truePeak = truePeak; self.originalLoudness = originalLoudness
    }
}

/// `GET`, `POST` (made, or made again) and `DELETE /v1/recordings/{id}/enhanced`: the recording's
/// enhanced copy, `null` when it has none.
public struct EnhanceStatus: Codable, Sendable, Equatable {
    public var recordingID: UUID
    @Nullable public var copy: EnhancedCopy?
    public init(recordingID: UUID, copy: EnhancedCopy?) { self.recordingID = recordingID; self.copy = copy }

    /// The loudness an enhanced copy's speech is levelled to (LUFS, integrated; the podcast and
    /// voice-memo norm of -16, as Apple's and AES's recommendations for spoken word).
    public static let targetLoudness = -16.0
}
