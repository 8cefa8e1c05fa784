// Request and response bodies of the /v1 HTTP API (see openapi.yaml).
import FoundationEssentials

/// A field that a request may leave out, set to a value, or set to JSON `null`.
/// `.absent` means "leave unchanged"; `.null` and `.value` both change it.
public enum PatchField<Value: Codable & Sendable & Equatable>: Sendable, Equatable {
    case absent
    case null
    case value(Value)

    /// `.value`, or `.absent` for nil (a field the request leaves out).
    public init(_ value: Value?) { self = value.map { .value($0) } ?? .absent }

    public var isPresent: Bool { if case .absent = self { return false } else { return true } }
}

extension KeyedDecodingContainer {
    func decodePatch<V>(_ type: V.Type, forKey key: Key) throws -> PatchField<V> {
        guard contains(key) else { return .absent }
        if try decodeNil(forKey: key) { return .null }
        return .value(try decode(V.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    mutating func encodePatch<V>(_ field: PatchField<V>, forKey key: Key) throws {
        switch field {
        case .absent: break
        case .null: try encodeNil(forKey: key)
        case .value(let v): try encode(v, forKey: key)
        }
    }
}

/// A request body whose keys the server checks: a key the body does not take is refused (400)
/// rather than ignored, so a misspelt `titel` is an error, not a request that silently changes nothing.
public protocol APIRequestBody: Decodable {
    /// Every key the body takes.
    static var fields: [String] { get }
}

/// Title, notes and purpose as a request changes them. Title absent/null/"" means "auto title" when
/// a recording is created or its title is edited to blank; absent leaves an existing title alone.
public struct MetadataPatch: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = CodingKeys.allCases.map(\.rawValue)
    public var title: PatchField<String>
    public var notes: PatchField<String>
    /// Kept as text so that an unknown purpose is a 422 naming the allowed values, not a 400.
    public var purpose: PatchField<String>

    public init(title: PatchField<String> = .absent, notes: PatchField<String> = .absent,
                purpose: PatchField<String> = .absent) {
        self.title = title; self.notes = notes; self.purpose = purpose
    }

    public var isEmpty: Bool { !title.isPresent && !notes.isPresent && !purpose.isPresent }

    enum CodingKeys: String, CodingKey, CaseIterable { case title, notes, purpose }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        title = try c.decodePatch(String.self, forKey: .title)
        notes = try c.decodePatch(String.self, forKey: .notes)
        purpose = try c.decodePatch(String.self, forKey: .purpose)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodePatch(title, forKey: .title)
        try c.encodePatch(notes, forKey: .notes)
        try c.encodePatch(purpose, forKey: .purpose)
    }
}

/// `POST /v1/record/start`: the metadata fields, and what to record.
public struct StartRecordingRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = MetadataPatch.fields + CodingKeys.allCases.map(\.rawValue)
    public var metadata: MetadataPatch
    /// `audio` (the default): the microphone into an .m4a; `video`: the camera (with the microphone
    /// unless `audio` is false) into a .mov.
    public var type: RecordingType
    /// With `type` video: false records a silent video (no audio stream). Must not be false for audio.
    public var audio: Bool
    /// How the sound is encoded (absent: recd's `--default-format`). Kept as text so that an unknown
    /// format is a 422 naming the formats, not a 400. A video's sound is AAC.
    public var format: String?

    public init(metadata: MetadataPatch = MetadataPatch(), type: RecordingType = .audio, audio: Bool = true,
                format: String? = nil) {
        self.metadata = metadata; self.type = type; self.audio = audio; self.format = format
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case type, audio, format }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type = try c.decodeIfPresent(RecordingType.self, forKey: .type) ?? .audio
        audio = try c.decodeIfPresent(Bool.self, forKey: .audio) ?? true
        format = try c.decodeIfPresent(String.self, forKey: .format)
        metadata = try MetadataPatch(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(audio, forKey: .audio)
        try c.encodeIfPresent(format, forKey: .format)
        try metadata.encode(to: encoder)
    }
}

/// The camera side of a video recording, as negotiated with the camera.
public struct VideoCaptureInfo: Codable, Sendable, Equatable {
    /// V4L2 device node.
    public var device: String
    /// The camera's pixel format (fourcc: `YUYV`, `NV12`, `MJPG`, ...).
    public var pixelFormat: String
    public var width: Int
    public var height: Int
    /// Frames per second the camera was set to.
    public var fps: Double
    /// Encoder and its settings (`libx264 preset=veryfast crf=23`).
    public var encoder: String
    public init(device: String, pixelFormat: String, width: Int, height: Int, fps: Double, encoder: String) {
        self.device = device; self.pixelFormat = pixelFormat; self.width = width; self.height = height
        self.fps = fps; self.encoder = encoder
    }
}

/// A stream of samples: what a capture device delivers, or what is recorded.
public struct AudioFormatInfo: Codable, Sendable, Equatable {
    /// ALSA's name: `S16_LE`, `S32_LE`, `FLOAT_LE`, `S24_3LE`, `S24_LE`.
    public var sampleFormat: String
    public var sampleRate: Int
    public var channels: Int
    public init(sampleFormat: String, sampleRate: Int, channels: Int) {
        self.sampleFormat = sampleFormat; self.sampleRate = sampleRate; self.channels = channels
    }
}

/// Reply to `POST /v1/record/start`.
public struct StartRecordingResponse: Codable, Sendable, Equatable {
    public var recording: Recording
    /// ALSA PCM name the recording captures sound from; null for a silent video.
    @Nullable public var device: String?
    /// What the microphone delivers (it is opened as it is when it does not offer the recording's
    /// format); null for a silent video.
    @Nullable public var deviceFormat: AudioFormatInfo?
    /// What is recorded: the device's samples converted to this (rate, channels, S16 into the encoder).
    @Nullable public var recordedFormat: AudioFormatInfo?
    /// The camera, for a video recording; null for audio.
    @Nullable public var video: VideoCaptureInfo?
    /// Milliseconds from receiving the request to the first captured buffer; for a video, to when
    /// both its first frame (where the file starts) and its first sound had come.
    public var startLatencyMs: Double
    public init(recording: Recording, device: String?, deviceFormat: AudioFormatInfo? = nil, recordedFormat: AudioFormatInfo? = nil,
                video: VideoCaptureInfo? = nil, startLatencyMs: Double) {
        self.recording = recording; self.device = device; self.video = video; self.startLatencyMs = startLatencyMs
        self.deviceFormat = deviceFormat; self.recordedFormat = recordedFormat
    }
}

/// What to do with the recording once it is stopped.
public enum StopDisposition: String, Codable, Sendable, CaseIterable {
    /// Keep it as `pending` (the seed's preview-then-save).
    case keep
    /// Save it into the library at once (`ready`).
    case save
    /// Throw it away: file and row are removed.
    case discard
}

/// `POST /v1/record/stop`.
public struct StopRecordingRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = MetadataPatch.fields + CodingKeys.allCases.map(\.rawValue)
    public var then: StopDisposition
    public var metadata: MetadataPatch

    public init(then: StopDisposition = .keep, metadata: MetadataPatch = MetadataPatch()) {
        self.then = then; self.metadata = metadata
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case then }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        then = try c.decodeIfPresent(StopDisposition.self, forKey: .then) ?? .keep
        metadata = try MetadataPatch(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(then, forKey: .then)
        try metadata.encode(to: encoder)
    }
}

/// `POST /v1/recordings/{id}/trim`: keep `[start, end)` (seconds) of the recording, losslessly.
public struct TrimRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = CodingKeys.allCases.map(\.rawValue)
    /// Seconds from the recording's start; absent = 0.
    public var start: Double?
    /// Seconds from the recording's start; absent = its end.
    public var end: Double?
    /// Keep the original and add the cut as a new recording (play count 0).
    public var asNew: Bool
    /// The shortest recording a trim may leave.
    public static let minimumSeconds = 0.1

    public init(start: Double? = nil, end: Double? = nil, asNew: Bool = false) {
        self.start = start; self.end = end; self.asNew = asNew
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case start, end, asNew }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        start = try c.decodeIfPresent(Double.self, forKey: .start)
        end = try c.decodeIfPresent(Double.self, forKey: .end)
        asNew = try c.decodeIfPresent(Bool.self, forKey: .asNew) ?? false
    }
}

/// Reply to `POST /v1/record/stop`.
public struct StopRecordingResponse: Codable, Sendable, Equatable {
    /// The stopped recording; null when it was discarded.
    @Nullable public var recording: Recording?
    public var discarded: Bool
    /// Capture statistics of the session.
    public var capture: CaptureStats
    public init(recording: Recording?, discarded: Bool, capture: CaptureStats) {
        self.recording = recording; self.discarded = discarded; self.capture = capture
    }
}

/// Counters of one capture session.
public struct CaptureStats: Codable, Sendable, Equatable {
    /// Audio frames captured (0 for a silent video).
    public var framesCaptured: Int64
    public var overruns: Int
    /// Audio frames lost (overruns, a stalled encoder).
    public var droppedFrames: Int64
    /// Video frames captured; null for an audio recording.
    @Nullable public var videoFrames: Int64?
    /// Video frames the camera dropped (gaps in its sequence numbers) or recd could not encode in
    /// time; null for an audio recording.
    @Nullable public var videoDroppedFrames: Int64?
    public init(framesCaptured: Int64 = 0, overruns: Int = 0, droppedFrames: Int64 = 0,
                videoFrames: Int64? = nil, videoDroppedFrames: Int64? = nil) {
        self.framesCaptured = framesCaptured; self.overruns = overruns; self.droppedFrames = droppedFrames
        self.videoFrames = videoFrames; self.videoDroppedFrames = videoDroppedFrames
    }
}

/// `GET /v1/recordings`.
public struct RecordingList: Codable, Sendable, Equatable {
    public var recordings: [Recording]
    /// Number of recordings matching the filter, ignoring limit and offset.
    public var total: Int
    public var limit: Int
    public var offset: Int
    public init(recordings: [Recording], total: Int, limit: Int, offset: Int) {
        self.recordings = recordings; self.total = total; self.limit = limit; self.offset = offset
    }
}

/// Reply to `POST /v1/record/pause` and `/resume`, and the data of `recording.paused` and
/// `recording.resumed`.
public struct RecordingPauseState: Codable, Sendable, Equatable {
    public var recordingID: UUID
    public var paused: Bool
    /// Seconds recorded (pauses not counted).
    public var elapsed: Double
    /// Seconds of the pause under way; null while recording. In `recording.resumed`: how long the
    /// pause that just ended lasted.
    @Nullable public var pausedFor: Double?
    /// Seconds of every pause so far, the current one included.
    public var pausedTotal: Double
    public init(recordingID: UUID, paused: Bool, elapsed: Double, pausedFor: Double?, pausedTotal: Double) {
        self.recordingID = recordingID; self.paused = paused; self.elapsed = elapsed; self.pausedFor = pausedFor
        self.pausedTotal = pausedTotal
    }
}

/// The background measurement of recordings without a loudness (in `GET /v1/status`).
public struct LoudnessPassStatus: Codable, Sendable, Equatable {
    /// Recordings left to measure in the pass under way (0 when none runs).
    public var pending: Int
    /// Recordings measured since recd started.
    public var measured: Int
    /// The one being measured now.
    @Nullable public var current: UUID?
    public init(pending: Int, measured: Int, current: UUID?) { self.pending = pending; self.measured = measured; self.current = current }
}

/// `GET /v1/status`.
public struct DaemonStatus: Codable, Sendable, Equatable {
    /// `starting`: the device is being opened; `stopping`: capture ended, the file is being finalized.
    public enum Activity: String, Codable, Sendable { case idle, starting, recording, stopping }

    public struct ActiveRecording: Codable, Sendable, Equatable {
        public var recording: Recording
        /// Seconds recorded (pauses not counted); null while starting or stopping.
        @Nullable public var elapsed: Double?
        /// Paused (`POST /v1/record/pause`): the devices stay open, nothing goes into the file.
        public var paused: Bool
        /// Seconds of the pause under way; null while not paused.
        @Nullable public var pausedFor: Double?
        /// Seconds of every pause so far.
        public var pausedTotal: Double
        /// Counters so far; null while starting or stopping.
        @Nullable public var capture: CaptureStats?
        /// What the microphone delivers and what is recorded; null while starting or stopping, and
        /// for a silent video.
        @Nullable public var deviceFormat: AudioFormatInfo?
        @Nullable public var recordedFormat: AudioFormatInfo?
        public init(recording: Recording, elapsed: Double?, capture: CaptureStats?,
                    deviceFormat: AudioFormatInfo? = nil, recordedFormat: AudioFormatInfo? = nil,
                    paused: Bool = false, pausedFor: Double? = nil, pausedTotal: Double = 0) {
            self.recording = recording; self.elapsed = elapsed; self.capture = capture
            self.deviceFormat = deviceFormat; self.recordedFormat = recordedFormat
            self.paused = paused; self.pausedFor = pausedFor; self.pausedTotal = pausedTotal
        }
    }

    public var version: String
    public var pid: Int32
    public var uptime: Double
    public var activity: Activity
    @Nullable public var active: ActiveRecording?
    public var captureDevice: String
    public var playbackDevice: String
    public var sampleRate: Int
    public var channels: Int
    public var dataDirectory: String
    public var socket: String
    public var counts: [String: Int]
    /// The last recording that ended by itself (device or disk fault) since the daemon started.
    @Nullable public var lastFault: FaultReport?
    /// What the last recovery (start-up, or `check --repair`) found and did.
    @Nullable public var recovery: RecoveryReport?
    /// What is playing (or paused), if anything.
    @Nullable public var playback: PlaybackInfo?
    /// Loudness measured in the background (recordings that have none yet).
    public var loudnessPass: LoudnessPassStatus
    /// Transcripts made in the background: off, not installed, idle or working, and how far.
    public var transcription: TranscriptionStatus
    /// Hands-free listening: armed or off, and what it does (`GET /v1/listen`). Null from a daemon
    /// older than listening.
    @Nullable public var listening: ListenStatus?

    public init(version: String, pid: Int32, uptime: Double, activity: Activity, active: ActiveRecording?,
                captureDevice: String, playbackDevice: String, sampleRate: Int, channels: Int,
                dataDirectory: String, socket: String, counts: [String: Int], lastFault: FaultReport? = nil,
                recovery: RecoveryReport? = nil, playback: PlaybackInfo? = nil,
                loudnessPass: LoudnessPassStatus = LoudnessPassStatus(pending: 0, measured: 0, current: nil),
                transcription: TranscriptionStatus = TranscriptionStatus(state: "off"), listening: ListenStatus? = nil) {
        self.playback = playback
        self.listening = listening
        self.transcription = transcription
        self.loudnessPass = loudnessPass
        self.version = version; self.pid = pid; self.uptime = uptime; self.activity = activity
        self.active = active; self.captureDevice = captureDevice; self.playbackDevice = playbackDevice
        self.sampleRate = sampleRate; self.channels = channels; self.dataDirectory = dataDirectory
        self.socket = socket; self.counts = counts; self.lastFault = lastFault; self.recovery = recovery
    }
}

/// One row of the metadata export (seed Screen 7.2): files are not exported.
public struct ExportRow: Codable, Sendable, Equatable {
    public var id: UUID
    public var title: String
    public var timestamp: Date
    @Nullable public var duration: Double?
    public var type: RecordingType
    @Nullable public var purpose: Purpose?
    public var playCount: Int
    /// EBU R128 loudness; null until measured.
    @Nullable public var loudness: Loudness?
    /// What was said (the transcript's text); null when there is none.
    @Nullable public var transcript: String?
    public var notes: String
    /// The file's size in bytes; null when not known.
    @Nullable public var sizeBytes: Int64?
    @Nullable public var lastPlayedAt: Date?
    /// Its markers, earliest first.
    public var markers: [Marker]
    public init(id: UUID, title: String, timestamp: Date, duration: Double?, type: RecordingType,
                purpose: Purpose?, playCount: Int, loudness: Loudness? = nil, transcript: String? = nil,
                notes: String = "", sizeBytes: Int64? = nil, lastPlayedAt: Date? = nil, markers: [Marker] = []) {
        self.id = id; self.title = title; self.timestamp = timestamp; self.duration = duration
        self.type = type; self.purpose = purpose; self.playCount = playCount; self.loudness = loudness
        self.transcript = transcript; self.notes = notes; self.sizeBytes = sizeBytes; self.lastPlayedAt = lastPlayedAt
        self.markers = markers
    }
}

/// Body of the JSON export.
public struct ExportDocument: Codable, Sendable, Equatable {
    public var exportedAt: Date
    public var recordings: [ExportRow]
    public init(exportedAt: Date, recordings: [ExportRow]) { self.exportedAt = exportedAt; self.recordings = recordings }
}

/// Reply to `DELETE /v1/recordings` (the seed's "Delete All Data").
public struct DeleteAllResponse: Codable, Sendable, Equatable {
    /// Recordings (rows) deleted, the one being recorded included.
    public var deletedRecordings: Int
    /// Files removed from `Recordings/`.
    public var deletedFiles: Int
    public init(deletedRecordings: Int, deletedFiles: Int) {
        self.deletedRecordings = deletedRecordings; self.deletedFiles = deletedFiles
    }
}

/// What recovery (at start-up, or `check --repair`) found and did.
public struct RecoveryReport: Codable, Sendable, Equatable {
    public var ranAt: Date
    /// Interrupted recordings finalized and made pending (`recovered: true`).
    public var salvaged: [UUID] = []
    /// Interrupted before any audio reached the file: row (and empty file) removed.
    public var removedEmpty: [UUID] = []
    /// Media files in `Recordings/` with no row, adopted as pending recovered recordings.
    public var adopted: [UUID] = []
    /// Files in `Recordings/` that are not media, moved to `Recordings/.quarantine/`.
    public var quarantined: [String] = []
    /// Rows whose file is gone, marked `missing`.
    public var markedMissing: [UUID] = []
    /// `missing` rows whose file is back: the state they had when it is the same file (same size),
    /// else `pending` (recovered).
    public var foundAgain: [UUID] = []
    /// Discards/deletions interrupted before the row was deleted: the file was put back.
    public var removalsUndone: [String] = []
    /// Discards/deletions interrupted after the row was deleted: the file was deleted.
    public var removalsFinished: [String] = []
    /// File replacements (trims) interrupted after their commit: the new file was renamed into place.
    public var replacementsFinished: [String] = []
    /// A "delete all" interrupted before its commit: everything was put back.
    public var deleteAllRolledBack = false
    /// A "delete all" interrupted after its commit: its files were deleted.
    public var deleteAllFinished = false
    /// Half-written finalization files removed (their source is still there).
    public var temporaryFilesRemoved: [String] = []
    /// Problems recovery could not settle (it leaves those files alone).
    public var problems: [String] = []

    public init(ranAt: Date = Date()) { self.ranAt = ranAt }

    /// Whether anything at all was found.
    public var isClean: Bool {
        salvaged.isEmpty && removedEmpty.isEmpty && adopted.isEmpty && quarantined.isEmpty && markedMissing.isEmpty
            && foundAgain.isEmpty
            && removalsUndone.isEmpty && removalsFinished.isEmpty && replacementsFinished.isEmpty && !deleteAllRolledBack && !deleteAllFinished
            && temporaryFilesRemoved.isEmpty && problems.isEmpty
    }
}

/// `GET /v1/check`: the catalog's consistency with `Recordings/` right now.
public struct ConsistencyReport: Codable, Sendable, Equatable {
    public var checkedAt: Date
    /// `pending`/`ready` rows whose file is not there.
    public var rowsWithoutFile: [UUID]
    /// Rows already marked `missing`.
    public var missing: [UUID]
    /// Of those, the ones whose file is there again (a repair restores them).
    public var filesBack: [UUID]
    /// Files in `Recordings/` that no row refers to.
    public var filesWithoutRow: [String]
    /// Interrupted recordings not yet salvaged (rows in `recording` that are not the active one).
    public var interruptedRecordings: [UUID]
    /// Leftovers of interrupted operations (aside files, trash folders, temporary files).
    public var unsettled: [String]
    /// What the last recovery (start-up or repair) did.
    @Nullable public var lastRecovery: RecoveryReport?
    /// After `POST /v1/check/repair`: what this repair did.
    @Nullable public var repaired: RecoveryReport?

    public var isConsistent: Bool {
        rowsWithoutFile.isEmpty && filesWithoutRow.isEmpty && interruptedRecordings.isEmpty && unsettled.isEmpty
            && filesBack.isEmpty
    }

    public init(checkedAt: Date, rowsWithoutFile: [UUID], missing: [UUID], filesBack: [UUID] = [], filesWithoutRow: [String],
                interruptedRecordings: [UUID], unsettled: [String], lastRecovery: RecoveryReport?, repaired: RecoveryReport?) {
        self.checkedAt = checkedAt; self.rowsWithoutFile = rowsWithoutFile; self.missing = missing; self.filesBack = filesBack
        self.filesWithoutRow = filesWithoutRow; self.interruptedRecordings = interruptedRecordings
        self.unsettled = unsettled; self.lastRecovery = lastRecovery; self.repaired = repaired
    }

    /// As synthesized, but `filesBack` may be absent: a recd from before it (an upgraded recctl
    /// talking to a daemon not yet restarted) still gets its report read.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        checkedAt = try c.decode(Date.self, forKey: .checkedAt)
        rowsWithoutFile = try c.decode([UUID].self, forKey: .rowsWithoutFile)
        missing = try c.decode([UUID].self, forKey: .missing)
        filesBack = try c.decodeIfPresent([UUID].self, forKey: .filesBack) ?? []
        filesWithoutRow = try c.decode([String].self, forKey: .filesWithoutRow)
        interruptedRecordings = try c.decode([UUID].self, forKey: .interruptedRecordings)
        unsettled = try c.decode([String].self, forKey: .unsettled)
        _lastRecovery = try c.decode(Nullable<RecoveryReport>.self, forKey: .lastRecovery)
        _repaired = try c.decode(Nullable<RecoveryReport>.self, forKey: .repaired)
    }
}

/// A recording that ended by itself: the capture device failed or the disk filled.
public struct FaultReport: Codable, Sendable, Equatable {
    public var recordingID: UUID
    public var reason: String
    public var at: Date
    public init(recordingID: UUID, reason: String, at: Date) {
        self.recordingID = recordingID; self.reason = reason; self.at = at
    }
}
