// The event stream (`GET /v1/events`, Server-Sent Events): one JSON object per event.
import FoundationEssentials

/// The meter interval's allowed range (milliseconds).
public enum LevelMeterInterval {
    public static let range = 10...1000
}

/// Levels of one channel over one meter interval, in dBFS (0 = full scale, -160 = silence).
public struct ChannelLevel: Codable, Sendable, Equatable {
    public var peak: Double
    public var rms: Double
    /// Peak hold: holds 300 ms, then falls at 10 dB/s.
    public var decay: Double
    public init(peak: Double, rms: Double, decay: Double) { self.peak = peak; self.rms = rms; self.decay = decay }
}

/// A meter reading of what is being recorded or played.
public struct MeterEvent: Codable, Sendable, Equatable {
    public enum Source: String, Codable, Sendable { case recording, playback }
    public var source: Source
    /// The recording being recorded or played.
    public var recordingID: UUID
    /// Seconds into the recording at the end of the interval (for playback: the position heard).
    public var time: Double
    public var intervalMs: Int
    public var channels: [ChannelLevel]
    public init(source: Source, recordingID: UUID, time: Double, intervalMs: Int, channels: [ChannelLevel]) {
        self.source = source; self.recordingID = recordingID; self.time = time; self.intervalMs = intervalMs
        self.channels = channels
    }
}

/// A recording ended: stopped by a request, by a fault (device or disk), or at shutdown.
public struct RecordingStoppedEvent: Codable, Sendable, Equatable {
    public enum Reason: String, Codable, Sendable { case stopped, fault, shutdown, deleted }
    public var recordingID: UUID
    public var reason: Reason
    /// The recording as it was kept (pending or ready); null when it was discarded.
    @Nullable public var recording: Recording?
    public var discarded: Bool
    /// For a fault: what failed.
    @Nullable public var error: String?
    @Nullable public var capture: CaptureStats?
    public init(recordingID: UUID, reason: Reason, recording: Recording?, discarded: Bool, error: String?, capture: CaptureStats?) {
        self.recordingID = recordingID; self.reason = reason; self.recording = recording; self.discarded = discarded
        self.error = error; self.capture = capture
    }
}

/// Where a playback is (about four times a second while it plays).
public struct PlaybackProgressEvent: Codable, Sendable, Equatable {
    public var session: UUID
    public var recordingID: UUID
    public var state: PlaybackInfo.State
    public var position: Double
    @Nullable public var duration: Double?
    public init(session: UUID, recordingID: UUID, state: PlaybackInfo.State, position: Double, duration: Double?) {
        self.session = session; self.recordingID = recordingID; self.state = state; self.position = position
        self.duration = duration
    }
}

/// Something in the library changed.
public struct LibraryChangedEvent: Codable, Sendable, Equatable {
    public enum Change: String, Codable, Sendable {
        case created, edited, saved, discarded, deleted, played, recovered, deletedAll = "deleted_all"
    }
    /// The recording; null for `deleted_all` and `recovered` (a recovery may touch many).
    @Nullable public var recordingID: UUID?
    public var change: Change
    public init(recordingID: UUID?, change: Change) { self.recordingID = recordingID; self.change = change }
}

/// The kinds of event, as `type` names them (and `?type=` filters them).
public enum EventType: String, Codable, Sendable, CaseIterable {
    case meter
    case recordingStarted = "recording.started"
    case recordingStopped = "recording.stopped"
    case recordingPaused = "recording.paused"
    case recordingResumed = "recording.resumed"
    case playbackStarted = "playback.started"
    case playbackProgress = "playback.progress"
    case playbackEnded = "playback.ended"
    case libraryChanged = "library.changed"
    case transcriptProgress = "transcript.progress"
    case transcriptDone = "transcript.done"
    case backupProgress = "backup.progress"
    case backupStatus = "backup.status"
    case listenStatus = "listen.status"
    case listenUtterance = "listen.utterance"
    case listenLevel = "listen.level"
}

public enum EventPayload: Sendable, Equatable {
    case meter(MeterEvent)
    case recordingStarted(Recording)
    case recordingStopped(RecordingStoppedEvent)
    case recordingPaused(RecordingPauseState)
    case recordingResumed(RecordingPauseState)
    case playbackStarted(PlaybackInfo)
    case playbackProgress(PlaybackProgressEvent)
    case playbackEnded(PlaybackEnded)
    case libraryChanged(LibraryChangedEvent)
    case transcriptProgress(TranscriptProgressEvent)
    case transcriptDone(TranscriptProgressEvent)
    /// A backup run's progress, at most once a second while it runs.
    case backupProgress(BackupProgress)
    /// The backups' state when it changes: a run began, its snapshot was saved (its forget and check
    /// follow), it ended.
    case backupStatus(BackupStatus)
    /// Listening was armed or disarmed, or its state changed (speaking, yielded, device lost).
    case listenStatus(ListenStatus)
    /// An utterance was kept as a recording (its `recording.started` and `.stopped` came before) or dropped.
    case listenUtterance(ListenUtteranceEvent)
    /// What the microphone hears while listening (with meters: clients that want them).
    case listenLevel(ListenLevelEvent)

    public var type: EventType { typeAndData.type }

    /// Each event's `type` and what its `data` holds.
    var typeAndData: (type: EventType, data: any Encodable) {
        switch self {
        case .meter(let v): return (.meter, v)
        case .recordingStarted(let v): return (.recordingStarted, v)
        case .recordingStopped(let v): return (.recordingStopped, v)
        case .recordingPaused(let v): return (.recordingPaused, v)
        case .recordingResumed(let v): return (.recordingResumed, v)
        case .playbackStarted(let v): return (.playbackStarted, v)
        case .playbackProgress(let v): return (.playbackProgress, v)
        case .playbackEnded(let v): return (.playbackEnded, v)
        case .libraryChanged(let v): return (.libraryChanged, v)
        case .transcriptProgress(let v): return (.transcriptProgress, v)
        case .transcriptDone(let v): return (.transcriptDone, v)
        case .backupProgress(let v): return (.backupProgress, v)
        case .backupStatus(let v): return (.backupStatus, v)
        case .listenStatus(let v): return (.listenStatus, v)
        case .listenUtterance(let v): return (.listenUtterance, v)
        case .listenLevel(let v): return (.listenLevel, v)
        }
    }
}

/// One event: `{"seq": 12, "at": "...", "type": "meter", "data": {...}}`. `seq` rises by one per
/// event published (a gap in what a client sees means it skipped events: meters of a slow client).
public struct RecdEvent: Codable, Sendable, Equatable {
    public var seq: Int
    public var at: Date
    public var payload: EventPayload
    public var type: EventType { payload.type }

    public init(seq: Int, at: Date, payload: EventPayload) { self.seq = seq; self.at = at; self.payload = payload }

    enum CodingKeys: String, CodingKey { case seq, at, type, data }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        seq = try c.decode(Int.self, forKey: .seq)
        at = try c.decode(Date.self, forKey: .at)
        switch try c.decode(EventType.self, forKey: .type) {
        case .meter: payload = .meter(try c.decode(MeterEvent.self, forKey: .data))
        case .recordingStarted: payload = .recordingStarted(try c.decode(Recording.self, forKey: .data))
        case .recordingStopped: payload = .recordingStopped(try c.decode(RecordingStoppedEvent.self, forKey: .data))
        case .recordingPaused: payload = .recordingPaused(try c.decode(RecordingPauseState.self, forKey: .data))
        case .recordingResumed: payload = .recordingResumed(try c.decode(RecordingPauseState.self, forKey: .data))
        case .playbackStarted: payload = .playbackStarted(try c.decode(PlaybackInfo.self, forKey: .data))
        case .playbackProgress: payload = .playbackProgress(try c.decode(PlaybackProgressEvent.self, forKey: .data))
        case .playbackEnded: payload = .playbackEnded(try c.decode(PlaybackEnded.self, forKey: .data))
        case .libraryChanged: payload = .libraryChanged(try c.decode(LibraryChangedEvent.self, forKey: .data))
        case .transcriptProgress: payload = .transcriptProgress(try c.decode(TranscriptProgressEvent.self, forKey: .data))
        case .transcriptDone: payload = .transcriptDone(try c.decode(TranscriptProgressEvent.self, forKey: .data))
        case .backupProgress: payload = .backupProgress(try c.decode(BackupProgress.self, forKey: .data))
        case .backupStatus: payload = .backupStatus(try c.decode(BackupStatus.self, forKey: .data))
        case .listenStatus: payload = .listenStatus(try c.decode(ListenStatus.self, forKey: .data))
        case .listenUtterance: payload = .listenUtterance(try c.decode(ListenUtteranceEvent.self, forKey: .data))
        case .listenLevel: payload = .listenLevel(try c.decode(ListenLevelEvent.self, forKey: .data))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(seq, forKey: .seq)
        try c.encode(at, forKey: .at)
        let (type, data) = payload.typeAndData
        try c.encode(type, forKey: .type)
        try c.encode(data, forKey: .data)
    }
}
