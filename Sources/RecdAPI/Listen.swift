// Hands-free listening (issue 49): POST /v1/listen arms it, DELETE /v1/listen disarms it, GET /v1/listen
// says where it stands. While armed, recd captures, a voice detector decides speech, and each thing
// said becomes a recording of its own (from `preRoll` before its first word to `silence` after its last).
import FoundationEssentials

/// `POST /v1/listen`: the settings of a listening session. Every field may be absent (its default).
public struct ListenRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = CodingKeys.allCases.map(\.rawValue)
    /// Seconds of silence after the last speech that end an utterance (a shorter pause is merged
    /// into it). 0.3...60, default 2.
    public var silence: Double?
    /// Seconds kept before the first speech detected. 0...10, default 1.
    public var preRoll: Double?
    /// Utterances with less speech than this are dropped (a cough, a door). 0...60, default 1.
    public var min: Double?
    /// An utterance longer than this is split into recordings of this length, without losing a
    /// frame between them. 5...14400 (4 h), default 600.
    public var max: Double?
    /// When listening stops by itself; null or absent: when asked.
    public var until: Date?
    /// The recordings' format (as `POST /v1/recordings` takes it); absent: recd's `--default-format`.
    public var format: String?
    /// The recordings' purpose chip (`motivational`, `craving`, `reflection`, `milestone`, `none`).
    public var purpose: String?

    public init(silence: Double? = nil, preRoll: Double? = nil, min: Double? = nil, max: Double? = nil, until: Date? = nil,
                format: String? = nil, purpose: String? = nil) {
        self.silence = silence; self.preRoll = preRoll; self.min = min; self.max = max; self.until = until
        self.format = format; self.purpose = purpose
    }

    public enum CodingKeys: String, CodingKey, CaseIterable { case silence, preRoll, min, max, until, format, purpose }

    /// The limits, for validation and the error messages.
    public static let silenceRange = 0.3...60.0
    public static let preRollRange = 0.0...10.0
    public static let minRange = 0.0...60.0
    public static let maxRange = 5.0...14_400.0
}

/// The settings in force (the request's, defaults filled in).
public struct ListenSettings: Codable, Sendable, Equatable {
    public var silence: Double
    public var preRoll: Double
    public var min: Double
    public var max: Double
    @Nullable public var until: Date?
    /// The format's name (`aac`, `flac`, …).
    public var format: String
    @Nullable public var purpose: String?
    public init(silence: Double = 2, preRoll: Double = 1, min: Double = 1, max: Double = 600, until: Date? = nil,
                format: String, purpose: String? = nil) {
        self.silence = silence; self.preRoll = preRoll; self.min = min; self.max = max; self.until = until
        self.format = format; self.purpose = purpose
    }
}

/// Which voice detector decides speech.
public enum VoiceDetectorKind: String, Codable, Sendable {
    /// Silero VAD (ONNX Runtime, in the transcriber's environment, run in a sandboxed process).
    case silero
    /// A level gate with hysteresis: the fallback when the transcriber is not installed (it cannot
    /// tell speech from other sound: music and noise above the gate are kept too).
    case level
}

/// Why listening stopped.
public enum ListenStopReason: String, Codable, Sendable {
    /// `DELETE /v1/listen` (recctl listen stop).
    case requested
    /// The `until` time came.
    case until
    /// The disk's free space fell to recd's limit (`--min-free-mb`) plus a margin.
    case diskLow = "disk-low"
    /// recd is stopping (it arms again when it starts: `resumedAfterRestart`).
    case shutdown
    /// The voice detector or the capture failed for good.
    case failed
}

/// `GET /v1/listen` (and the replies of POST and DELETE; the `listen.status` event).
public struct ListenStatus: Codable, Sendable, Equatable {
    /// `off`; `listening`: armed, waiting for speech; `speaking`: an utterance is being recorded;
    /// `yielded`: a recording started by hand is in progress (it has the microphone; listening goes
    /// on when it ends); `device-lost`: the microphone went away, recd opens it again every 2 s.
    public enum State: String, Codable, Sendable {
        case off, listening, speaking, yielded
        case deviceLost = "device-lost"
    }
    public var state: State
    /// Listening is on (any state but `off`): recd is capturing.
    public var armed: Bool
    @Nullable public var since: Date?
    @Nullable public var settings: ListenSettings?
    /// Null when off.
    @Nullable public var detector: VoiceDetectorKind?
    /// Why the detector is the level gate (the transcriber not installed, or its detector failed).
    @Nullable public var detectorNote: String?
    /// The microphone (ALSA PCM).
    @Nullable public var device: String?
    /// The recording of the utterance in progress.
    @Nullable public var recordingID: UUID?
    /// Utterances kept and dropped (too short) since armed; while off, the last session's.
    public var utterances: Int
    public var dropped: Int
    /// recd was restarted while armed, and armed again by itself.
    public var resumedAfterRestart: Bool
    /// How the last session ended (while off), or why the device is lost.
    @Nullable public var lastStop: ListenStopped?
    public init(state: State, since: Date? = nil, settings: ListenSettings? = nil, detector: VoiceDetectorKind? = nil,
                detectorNote: String? = nil, device: String? = nil, recordingID: UUID? = nil, utterances: Int = 0, dropped: Int = 0,
                resumedAfterRestart: Bool = false, lastStop: ListenStopped? = nil) {
        self.state = state; self.armed = state != .off; self.since = since; self.settings = settings; self.detector = detector; self.detectorNote = detectorNote
        self.device = device; self.recordingID = recordingID; self.utterances = utterances; self.dropped = dropped
        self.resumedAfterRestart = resumedAfterRestart; self.lastStop = lastStop
    }
}

/// How a listening session ended.
public struct ListenStopped: Codable, Sendable, Equatable {
    public var at: Date
    public var reason: ListenStopReason
    /// In words (the disk's free space, the detector's error).
    public var message: String
    public init(at: Date, reason: ListenStopReason, message: String) { self.at = at; self.reason = reason; self.message = message }
}

/// `listen.utterance`: an utterance was kept as a recording (or dropped as too short).
public struct ListenUtteranceEvent: Codable, Sendable, Equatable {
    /// The recording; null when dropped.
    @Nullable public var recordingID: UUID?
    /// Seconds of speech the detector heard in it.
    public var speech: Double
    /// Seconds of the recording (pre-roll and trailing silence included); 0 when dropped.
    public var duration: Double
    /// Dropped: less speech than `min`.
    public var dropped: Bool
    /// The utterance went on past `max`: this recording is one part, the next continues it.
    public var split: Bool
    public init(recordingID: UUID?, speech: Double, duration: Double, dropped: Bool, split: Bool) {
        self.recordingID = recordingID; self.speech = speech; self.duration = duration; self.dropped = dropped; self.split = split
    }
}

/// `listen.level`: what the microphone hears while armed (about four times a second, to clients
/// that want meters).
public struct ListenLevelEvent: Codable, Sendable, Equatable {
    /// dBFS over the interval (all channels).
    public var peak: Double
    public var rms: Double
    /// The detector's speech probability (0...1; the level gate says 0 or 1).
    public var speech: Double
    public init(peak: Double, rms: Double, speech: Double) { self.peak = peak; self.rms = rms; self.speech = speech }
}

/// The text forms people type for listening's settings (`recctl listen start --silence 2s --until 18:30`).
extension ListenRequest {
    /// "2s", "1.5" (seconds), "500ms", "10m", "1h", "1h30m".
    public static func parseDuration(_ text: String) -> Double? {
        if let plain = Double(text), plain.isFinite { return plain }
        var total = 0.0, number = "", unit = "", parts = 0
        func flush() -> Bool {
            guard let n = Double(number), n.isFinite else { return false }
            let scale: Double? = ["ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600][unit]
            guard let scale else { return false }
            total += n * scale; number = ""; unit = ""; parts += 1
            return true
        }
        for c in text.lowercased() {
            if c.isNumber || c == "." {
                if !unit.isEmpty { guard flush() else { return nil } }
                number.append(c)
            } else if c.isLetter {
                guard !number.isEmpty else { return nil }
                unit.append(c)
            } else {
                return nil
            }
        }
        guard flush(), parts > 0 else { return nil }
        return total
    }

    /// "18:30" (the next such time), an ISO 8601 date, or a delay ("2h", "30m").
    public static func parseUntil(_ text: String, now: Date) -> Date? {
        if let d = APIJSON.parseDate(text) { return d }
        let clock = text.split(separator: ":")
        if clock.count == 2, let h = Int(clock[0]), let m = Int(clock[1]), (0..<24).contains(h), (0..<60).contains(m) {
            let calendar = Calendar.current
            guard let today = calendar.date(bySettingHour: h, minute: m, second: 0, of: now) else { return nil }
            return today > now ? today : calendar.date(byAdding: .day, value: 1, to: today)
        }
        if text.last?.isLetter == true, let s = parseDuration(text) { return now.addingTimeInterval(s) }
        return nil
    }
}
