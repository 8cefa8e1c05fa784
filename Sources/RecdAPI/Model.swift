// Wire types shared by the daemon, recctl and the tests. Pure Swift: no C, no server code.
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What a recording holds. Decides the file name: `audio_<UUID>.m4a` or `video_<UUID>.mov`.
public enum RecordingType: String, Codable, Sendable, CaseIterable {
    case audio, video

    /// File extension for this type's container.
    public var fileExtension: String { self == .audio ? "m4a" : "mov" }
}

/// How a recording's sound is encoded. recd writes all three into an MP4 (`.m4a`; a video's `.mov` has
/// AAC): fragmented while recording, finalized at stop (see docs/storage.md).
/// - `aac`: AAC-LC (the default), what every player plays;
/// - `opus`: Opus at speech-grade bit rates (24–64 kbit/s, 32 by default): a quarter of AAC's size;
/// - `flac`: FLAC, lossless: decodes to exactly the samples captured.
public enum RecordingFormat: String, Codable, Sendable, CaseIterable {
    case aac, opus, flac
}

/// Lifecycle of a recording (seed Flow 5): `recording` → stop → `pending` (preview, not yet in the
/// library) → save → `ready`. Discard removes a pending recording entirely. `missing`: start-up
/// recovery or `check --repair` found the row's file gone; the row is kept (never dropped silently)
/// until it is deleted.
public enum RecordingState: String, Codable, Sendable, CaseIterable {
    case recording, pending, ready, missing

    /// The word people use for the state (the seed says "saved"; the API keeps `ready`).
    public var spoken: String {
        switch self {
        case .recording: return "being recorded"
        case .pending: return "pending"
        case .ready: return "saved"
        case .missing: return "missing its file"
        }
    }

    /// The API's word or the people's: `saved` is `ready`.
    public init?(word: String) {
        let w = word.lowercased()
        if w == "saved" { self = .ready } else { self.init(rawValue: w) }
    }
}

/// The seed's purpose chips (single select, optional).
public enum Purpose: String, Codable, Sendable, CaseIterable {
    case motivational, craving, reflection, milestone
}

/// Limits from the seed (Screens 5.3.3 and 5.4.3), counted in user-perceived characters.
public enum MetadataLimits {
    public static let titleMaxCharacters = 40
    public static let notesMaxCharacters = 200
}

/// One recording as the API shows it.
public struct Recording: Codable, Sendable, Equatable {
    public var id: UUID
    public var type: RecordingType
    public var state: RecordingState
    public var title: String
    public var notes: String
    @Nullable public var purpose: Purpose?
    public var createdAt: Date
    /// Seconds, measured from the finished file; null while recording.
    @Nullable public var duration: Double?
    /// Bytes on disk; null while recording.
    @Nullable public var sizeBytes: Int64?
    /// Path relative to the data directory, e.g. `Recordings/audio_<UUID>.m4a`.
    public var file: String
    public var playCount: Int
    @Nullable public var lastPlayedAt: Date?
    /// True when the recording was salvaged after a crash rather than stopped normally.
    public var recovered: Bool
    /// Capture frames lost to overruns while recording.
    public var droppedFrames: Int
    /// EBU R128 loudness of its sound; null until measured (and for a silent video).
    @Nullable public var loudness: Loudness?
    /// How its sound is encoded; null for a silent video, and for a file adopted or imported in another
    /// codec that recd keeps as it is.
    @Nullable public var format: RecordingFormat?
    /// How it came to be: a take, a thing said while listening, an import.
    public var source: RecordingSource

    public init(id: UUID, type: RecordingType, state: RecordingState, title: String, notes: String,
                purpose: Purpose?, createdAt: Date, duration: Double?, sizeBytes: Int64?, file: String,
                playCount: Int, lastPlayedAt: Date?, recovered: Bool, droppedFrames: Int, loudness: Loudness? = nil,
                format: RecordingFormat? = nil, source: RecordingSource = .record) {
        self.id = id; self.type = type; self.state = state; self.title = title; self.notes = notes
        self.purpose = purpose; self.createdAt = createdAt; self.duration = duration; self.sizeBytes = sizeBytes
        self.file = file; self.playCount = playCount; self.lastPlayedAt = lastPlayedAt
        self.recovered = recovered; self.droppedFrames = droppedFrames; self.loudness = loudness
        self.format = format; self.source = source
    }
}

/// How a recording came to be.
public enum RecordingSource: String, Codable, Sendable, CaseIterable {
    /// A take someone started (recctl record, the web app, the API).
    case record
    /// A thing said while recd was listening, kept as its own recording.
    case listen
    /// A file imported (recctl import, the web app's upload).
    case `import`
}

/// Sort orders of the library list.
public enum ListOrder: String, Codable, Sendable, CaseIterable {
    /// Newest first (the seed's default).
    case recent
    /// Play count descending, then newest first.
    case plays
}

/// Filter and order of a library listing.
public struct ListQuery: Sendable, Equatable {
    public var order: ListOrder = .recent
    public var state: RecordingState?
    public var type: RecordingType?
    public var limit: Int = 100
    public var offset: Int = 0
    public init(order: ListOrder = .recent, state: RecordingState? = nil, type: RecordingType? = nil,
                limit: Int = 100, offset: Int = 0) {
        self.order = order; self.state = state; self.type = type; self.limit = limit; self.offset = offset
    }
}

/// Export formats (seed Screen 7.2).
public enum ExportFormat: String, Codable, Sendable, CaseIterable {
    case csv, json
}

/// How dates are shown to people: "Oct 25, 2025 3:42 PM" (also the form of automatic titles), as
/// `DateFormatter` writes `MMM d, yyyy h:mm a` in `en_US_POSIX`, from FoundationEssentials' Gregorian
/// calendar: no ICU (recctl does not load FoundationInternationalization).
public enum DisplayDate {
    /// In the local time zone: libc's (`TZ`, else /etc/localtime), which is the zone Foundation's
    /// `TimeZone.current` names; FoundationEssentials alone knows only GMT.
    public static func string(_ date: Date) -> String {
        var t = time_t(toMilliseconds(date).timeIntervalSince1970.rounded(.down))
        var local = tm()
        localtime_r(&t, &local)
        return string(date, secondsFromGMT: Int(local.tm_gmtoff))
    }

    public static func string(_ date: Date, timeZone: TimeZone) -> String {
        string(date, secondsFromGMT: timeZone.secondsFromGMT(for: date))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The civil time `offset` seconds east of UTC, by libc's gmtime_r (a Gregorian `Calendar` looks up
    /// the current time zone when made, even one given a zone after: ICU's zone data, loaded by the
    /// first auto title).
    static func string(_ date: Date, secondsFromGMT offset: Int) -> String {
        var t = time_t(toMilliseconds(date).timeIntervalSince1970.rounded(.down)) + time_t(offset)
        var c = tm()
        gmtime_r(&t, &c)
        let (year, month, day, hour, minute) = (Int(c.tm_year) + 1900, Int(c.tm_mon) + 1, Int(c.tm_mday), Int(c.tm_hour), Int(c.tm_min))
        let yyyy = String(year), mm = String(minute)
        return "\(months[month - 1]) \(day), \(String(repeating: "0", count: max(0, 4 - yyyy.count)) + yyyy) "
            + "\(hour % 12 == 0 ? 12 : hour % 12):\(mm.count < 2 ? "0" + mm : mm) \(hour < 12 ? "AM" : "PM")"
    }

    /// ICU formats the date rounded to the millisecond: 15:42:59.9996 reads 3:43.
    private static func toMilliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
