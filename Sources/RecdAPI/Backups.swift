// Backups of the library to a restic repository (issue 48): GET /v1/backup, POST /v1/backup,
// GET /v1/backup/snapshots.
import FoundationEssentials

/// Why a backup run failed, as a person acts on it.
public enum BackupFailure: String, Codable, Sendable, CaseIterable {
    /// restic refused the password (`--backup-password-file`).
    case wrongPassword = "wrong-password"
    /// Nothing is at the repository's location yet: `recctl backup init` makes it.
    case noRepository = "no-repository"
    /// The host or the store could not be reached (network, ssh, a server that is down).
    case unreachable
    /// The repository's disk or quota is full.
    case full
    /// Another restic holds the repository's lock.
    case locked
    /// restic is not installed (the package recommends it: `apt install restic`).
    case resticMissing = "restic-missing"
    /// recd could not gather the snapshot's files (its own disk: full, or unreadable).
    case staging
    /// Anything else restic said (its words are in `message`).
    case failed
}

/// The last backup that completed.
public struct BackupSnapshotSummary: Codable, Sendable, Equatable {
    /// restic's snapshot id (short form).
    public var snapshotID: String
    /// When the run began gathering the files: the snapshot holds the library as it was then.
    public var startedAt: Date
    public var finishedAt: Date
    /// Recordings in the snapshot.
    public var recordings: Int
    /// Bytes of the snapshot's files (the catalog and the recordings).
    public var totalBytes: Int64
    /// Bytes the run added to the repository (after deduplication and compression).
    public var addedBytes: Int64
    public init(snapshotID: String, startedAt: Date, finishedAt: Date, recordings: Int, totalBytes: Int64, addedBytes: Int64) {
        self.snapshotID = snapshotID; self.startedAt = startedAt; self.finishedAt = finishedAt; self.recordings = recordings
        self.totalBytes = totalBytes; self.addedBytes = addedBytes
    }
}

/// A run in progress: restic's own figures (its `--json` status lines).
public struct BackupProgress: Codable, Sendable, Equatable {
    public var startedAt: Date
    /// 0...1.
    public var fraction: Double
    public var bytesDone: Int64
    public var totalBytes: Int64
    public var filesDone: Int
    public var totalFiles: Int
    public init(startedAt: Date, fraction: Double = 0, bytesDone: Int64 = 0, totalBytes: Int64 = 0, filesDone: Int = 0, totalFiles: Int = 0) {
        self.startedAt = startedAt; self.fraction = fraction; self.bytesDone = bytesDone; self.totalBytes = totalBytes
        self.filesDone = filesDone; self.totalFiles = totalFiles
    }
}

/// A run that failed.
public struct BackupError: Codable, Sendable, Equatable {
    /// When the failed run began.
    public var startedAt: Date
    /// When it failed.
    public var at: Date
    public var reason: BackupFailure
    /// What happened, in words (restic's own message included).
    public var message: String
    public init(startedAt: Date, at: Date, reason: BackupFailure, message: String) {
        self.startedAt = startedAt; self.at = at; self.reason = reason; self.message = message
    }
}

/// The last `restic check` of the repository (recd runs one every `--backup-check-interval`,
/// reading back `--backup-check-subset` of the data).
public struct BackupCheck: Codable, Sendable, Equatable {
    public var at: Date
    /// No error found.
    public var ok: Bool
    /// restic's verdict, or what it found.
    public var message: String
    public init(at: Date, ok: Bool, message: String) { self.at = at; self.ok = ok; self.message = message }
}

/// The last `restic forget` of snapshots the retention policy (`--backup-keep`) no longer keeps.
public struct BackupForget: Codable, Sendable, Equatable {
    public var at: Date
    /// The policy, as given (`daily=7,weekly=5,monthly=12`).
    public var policy: String
    /// recd's snapshots of this host kept and removed.
    public var kept: Int
    public var removed: Int
    /// The data no snapshot uses any more was removed from the repository too (`--prune`).
    public var pruned: Bool
    public init(at: Date, policy: String, kept: Int, removed: Int, pruned: Bool) {
        self.at = at; self.policy = policy; self.kept = kept; self.removed = removed; self.pruned = pruned
    }
}

/// `GET /v1/backup` (and `POST /v1/backup`'s reply).
public struct BackupStatus: Codable, Sendable, Equatable {
    /// `off`: no repository set (`--backup`); `idle`: nothing to do until `nextRunAt`; `running`.
    public enum State: String, Codable, Sendable { case off, idle, running }
    public var state: State
    /// The repository, as restic names it (no password is ever part of it); null when off.
    @Nullable public var repository: String?
    @Nullable public var running: BackupProgress?
    @Nullable public var lastSuccess: BackupSnapshotSummary?
    /// The last run's failure, until a run succeeds.
    @Nullable public var lastError: BackupError?
    /// The last check of the repository; null before the first.
    @Nullable public var lastCheck: BackupCheck?
    /// The last forget of old snapshots (`--backup-keep`); null before the first, or with `--backup-keep all`.
    @Nullable public var lastForget: BackupForget?
    /// When the next run is due (the library changed: `--backup-delay` after the last change; or
    /// the schedule, `--backup-interval`); null when off or running.
    @Nullable public var nextRunAt: Date?
    /// The library changed since the last good backup, and that backup is older than
    /// `--backup-warn-after` (or there is none): said here, in the journal and on the web app's Data page.
    @Nullable public var warning: String?
    public init(state: State, repository: String? = nil, running: BackupProgress? = nil, lastSuccess: BackupSnapshotSummary? = nil,
                lastError: BackupError? = nil, lastCheck: BackupCheck? = nil, lastForget: BackupForget? = nil, nextRunAt: Date? = nil,
                warning: String? = nil) {
        self.state = state; self.repository = repository; self.running = running; self.lastSuccess = lastSuccess
        self.lastError = lastError; self.lastCheck = lastCheck; self.lastForget = lastForget; self.nextRunAt = nextRunAt; self.warning = warning
    }
}

/// One snapshot of the repository that recd made (`GET /v1/backup/snapshots`).
public struct BackupSnapshot: Codable, Sendable, Equatable {
    /// restic's short id (8 hex digits).
    public var id: String
    public var time: Date
    public var hostname: String
    public init(id: String, time: Date, hostname: String) { self.id = id; self.time = time; self.hostname = hostname }
}

/// `GET /v1/backup/snapshots`: newest first.
public struct BackupSnapshotList: Codable, Sendable, Equatable {
    public var snapshots: [BackupSnapshot]
    public init(snapshots: [BackupSnapshot]) { self.snapshots = snapshots }
}

/// `POST /v1/backup/restore`: a recording of a snapshot brought back into the library.
public struct BackupRestoreRequest: Codable, Sendable, Equatable, APIRequestBody {
    public static let fields = ["recording", "snapshot"]
    /// The recording's id in the snapshot (or a unique prefix of at least 4 characters).
    public var recording: String
    /// The snapshot (restic's id); null or absent: recd's newest.
    public var snapshot: String?
    public init(recording: String, snapshot: String? = nil) { self.recording = recording; self.snapshot = snapshot }
}
