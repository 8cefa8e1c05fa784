// Wire types of playback: play, transport controls, what is playing, how a playback ended.
import FoundationEssentials

/// `POST /v1/recordings/{id}/play`. Empty body = from the start.
public struct PlayRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = ["position", "normalize", "skipSilence", "speed", "enhanced"]
    /// Start here (seconds, clamped to the recording).
    public var position: Double?
    /// False: play as recorded, without the gain that brings it to `--playback-loudness`. Absent = true.
    public var normalize: Bool?
    /// True: the pauses of `GET /v1/recordings/{id}/silences` are skipped. Absent = false.
    public var skipSilence: Bool?
    /// 0.5-2 (the pitch kept); absent = 1.
    public var speed: Double?
    /// True: its enhanced copy is played (`no_media` when it has none). Absent = false.
    public var enhanced: Bool?
    public init(position: Double? = nil, normalize: Bool? = nil, skipSilence: Bool? = nil, speed: Double? = nil, enhanced: Bool? = nil) {
        self.position = position; self.normalize = normalize; self.skipSilence = skipSilence; self.speed = speed; self.enhanced = enhanced
    }
}

/// Level-matched playback: the gain that brings a recording to a target loudness.
public enum LevelMatch {
    /// ReplayGain 2.0's reference level, recd's default target (LUFS).
    public static let defaultTarget = -18.0
    /// The ceiling no gain may push the true peak above (dBTP).
    public static let peakCeiling = -1.0

    /// Gain in dB: `target − integrated`, lowered so that the true peak stays at or below
    /// `peakCeiling` (the limit MPD's ReplayGain users ask for). 0 when there is no target, or the
    /// loudness is not known or is silence.
    public static func gain(_ loudness: Loudness?, target: Double?) -> Double {
        guard let target, let integrated = loudness?.integrated else { return 0 }
        var g = target - integrated
        if let peak = loudness?.truePeak { g = min(g, peakCeiling - peak) }
        return (g * 100).rounded() / 100
    }
}

/// `POST /v1/playback/speed`: how fast the playback goes on, 0.5-2 (1: as recorded).
public struct SpeedRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = ["speed"]
    public var speed: Double
    public init(speed: Double) { self.speed = speed }
    /// The speeds a player offers, as recd and the web app take them.
    public static let range: ClosedRange<Double> = 0.5...2
}

/// `POST /v1/playback/seek`: exactly one of `by` (relative, ± seconds) and `to` (absolute seconds).
public struct SeekRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = ["by", "to"]
    public var by: Double?
    public var to: Double?
    public init(by: Double? = nil, to: Double? = nil) { self.by = by; self.to = to }

    /// The seed's skip buttons: 15 seconds.
    public static let defaultSkipSeconds = 15.0
}

/// The playback in progress.
public struct PlaybackInfo: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable { case playing, paused }
    /// Identifies this playback session (a new one per `play`).
    public var session: UUID
    public var recording: Recording
    public var state: State
    /// Seconds from the start of the recording of what is heard now.
    public var position: Double
    /// Seconds; null when the file does not say.
    @Nullable public var duration: Double?
    /// False for a preview of a pending recording: it will not count as a play.
    public var counts: Bool
    public var device: String
    /// Times the device ran dry and was restarted.
    public var underruns: Int
    public var startedAt: Date
    /// dB applied to bring the recording to `--playback-loudness` (0: played as recorded).
    public var gain: Double
    /// Pauses are skipped (`skipSilence`).
    public var skipSilence: Bool
    /// How fast it plays (1: as recorded).
    public var speed: Double
    /// Its enhanced copy is what plays.
    public var enhanced: Bool

    public init(session: UUID, recording: Recording, state: State, position: Double, duration: Double?, counts: Bool,
                device: String, underruns: Int, startedAt: Date, gain: Double = 0, skipSilence: Bool = false, speed: Double = 1,
                enhanced: Bool = false) {
        self.session = session; self.recording = recording; self.state = state; self.position = position
        self.duration = duration; self.counts = counts; self.device = device; self.underruns = underruns
        self.startedAt = startedAt; self.gain = gain; self.skipSilence = skipSilence; self.speed = speed; self.enhanced = enhanced
    }
}

/// How a playback session ended.
public struct PlaybackEnded: Codable, Sendable, Equatable {
    public enum Reason: String, Codable, Sendable, CaseIterable {
        /// Played to the end.
        case completed
        /// `recctl playback stop` (or Ctrl-C of `recctl play --wait`).
        case stopped
        /// Another `play` ended it.
        case replaced
        /// Its recording was deleted or discarded (never counted).
        case deleted
        /// The daemon shut down.
        case shutdown
        /// The device or the file failed mid-way (`error` says how).
        case failed
    }
    public var session: UUID
    public var recordingID: UUID
    public var title: String
    public var reason: Reason
    /// Where it was when it ended (seconds).
    public var position: Double
    /// Whether it added one to the recording's play count.
    public var counted: Bool
    public var at: Date
    @Nullable public var error: String?

    public init(session: UUID, recordingID: UUID, title: String, reason: Reason, position: Double, counted: Bool,
                at: Date, error: String? = nil) {
        self.session = session; self.recordingID = recordingID; self.title = title; self.reason = reason
        self.position = position; self.counted = counted; self.at = at; self.error = error
    }
}

/// `GET /v1/playback` and the replies of the transport controls.
public struct PlaybackStatus: Codable, Sendable, Equatable {
    /// What is playing (or paused); null when nothing is.
    @Nullable public var playback: PlaybackInfo?
    /// The last playback that ended since the daemon started.
    @Nullable public var lastEnded: PlaybackEnded?
    public init(playback: PlaybackInfo?, lastEnded: PlaybackEnded?) { self.playback = playback; self.lastEnded = lastEnded }
}

/// `POST /v1/recordings/{id}/play` reply (201).
public struct PlayResponse: Codable, Sendable, Equatable {
    public var playback: PlaybackInfo
    /// Milliseconds from the request's arrival to the first audio written to the device.
    public var startLatencyMs: Double
    /// The playback this one replaced, if one was in progress.
    @Nullable public var replaced: PlaybackEnded?
    public init(playback: PlaybackInfo, startLatencyMs: Double, replaced: PlaybackEnded?) {
        self.playback = playback; self.startLatencyMs = startLatencyMs; self.replaced = replaced
    }
}

/// A position or offset as people write it: "90", "1:30", "1:02:03", with an optional sign for a
/// relative move ("+15", "-1:00"). A lone "+" or "-" (or nothing) is the seed's 15-second skip.
public enum SeekArgument {
    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let s): "'\(s)' is not a position: use seconds (90), m:ss (1:30), h:mm:ss, or +N / -N to move by N seconds"
            }
        }
    }

    public static func parse(_ text: String?) throws(ParseError) -> SeekRequest {
        let t = (text ?? "").trimmingWhitespace()
        if t.isEmpty || t == "+" { return SeekRequest(by: SeekRequest.defaultSkipSeconds) }
        if t == "-" { return SeekRequest(by: -SeekRequest.defaultSkipSeconds) }
        if let sign = t.first, sign == "+" || sign == "-" {
            let seconds = try clock(String(t.dropFirst()), original: t)
            return SeekRequest(by: sign == "-" ? -seconds : seconds)
        }
        return SeekRequest(to: try clock(t, original: t))
    }

    /// "90", "1:30", "1:02:03", "2.5" → seconds.
    static func clock(_ s: String, original: String) throws(ParseError) -> Double {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...3).contains(parts.count) else { throw .invalid(original) }
        var total = 0.0
        for (i, p) in parts.enumerated() {
            let isLast = i == parts.count - 1
            guard !p.isEmpty, p.allSatisfy({ $0.isASCII && ($0.isNumber || (isLast && $0 == ".")) }),
                  let v = Double(p), v.isFinite else { throw .invalid(original) }
            // Minutes and seconds after a colon are 0-59.
            if i > 0 && v >= 60 { throw .invalid(original) }
            total = total * 60 + v
        }
        return total
    }
}
