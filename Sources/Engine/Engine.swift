// The engine: catalog, recorder and library, wired together, with start-up recovery.
import Capture
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI
import Storage
import Synchronization

public final class Engine: Sendable {
    public let config: EngineConfiguration
    public let recorder: Recorder
    public let player: Player
    /// What `/v1/events` streams.
    public let events = EventHub()
    public let library: Library
    /// Measures the loudness of recordings that have none yet (run as a service by the server).
    public let loudnessPass: LoudnessPass
    /// Saved recordings' markers written into their files as chapters, in the background.
    public let chapterPass: ChapterPass
    public let transcriptionPass: TranscriptionPass
    /// Backups to a restic repository (run as a service by the server; off without `--backup`).
    public let backups: Backups
    /// Hands-free listening (`POST /v1/listen`): each thing said, a recording.
    public let listener: Listener
    let catalog: Catalog
    let logger: Logger
    /// Held while the engine lives: a second daemon on the same data directory would "recover" the
    /// first one's recording in progress from under it.
    let dataLock: ExclusiveFileLock
    /// What the last recovery (start-up or repair) found; shown by status and check.
    let lastRecovery = Mutex<RecoveryReport?>(nil)

    /// Opens (or creates) the data directory and the catalog, and routes alsa-lib's and FFmpeg's own
    /// messages into `logger`.
    public init(config: EngineConfiguration, logger: Logger) throws(EngineError) {
        self.config = config
        self.logger = logger
        try storageCall(config.dataDirectory.create())
        let lockPath = config.dataDirectory.root.appendingPathComponent(".recd.lock").path
        do {
            dataLock = try ExclusiveFileLock(path: lockPath)
        } catch {
            switch error {
            case .held(_, let pid):
                throw .dataDirectoryInUse(path: config.dataDirectory.root.path, holderPID: pid)
            case .cannotOpen(let path, let reason):
                throw .storage(file: path, operation: "lock", underlying: reason)
            }
        }
        do {
            catalog = try Catalog(path: config.dataDirectory.catalogPath)
        } catch {
            throw .from(error)
        }
        // A new data directory, catalog and folders: their entries durable before anything is
        // committed in them (SQLite syncs its WAL's directory entry, not the database's).
        for dir in [config.dataDirectory.root.deletingLastPathComponent(), config.dataDirectory.root] {
            do { try FileOps.sync(dir.path) } catch { logger.warning("\(error)") }
        }
        AlsaLog.route(to: logger)
        // FFmpeg runs in worker processes (recd-media), each job in a Landlock sandbox of its job's
        // files (an import's: its folder in .uploads) — never the catalog (said once here when the
        // kernel cannot: they run without). A take's worker (walled in to Recordings/) and a library
        // worker (Recordings/ and Enhanced/) fork a process per job and are kept this long for the next.
        let data = config.dataDirectory
        MediaWorkerPool.shared.configure(idleSeconds: config.ffmpegIdleUnloadSeconds, logLevel: logger.logLevel.rawValue,
                                         sandbox: [data.recordings.path], library: [data.recordings.path, data.enhanced.path])
        if let abi = MediaWorkerPool.landlockABI {
            logger.info("media workers: Landlock ABI \(abi)\(MediaWorkerPool.landlockScopes(abi)), each may use only its job's files in \(data.recordings.path) (a take's: that folder), or its import's folder in \(data.uploads.path)")
        } else {
            logger.warning("media workers: Landlock is not available here (the kernel has none, or a seccomp filter refuses it); they run without a filesystem sandbox")
        }
        let microphone = SharedMicrophone()
        recorder = Recorder(config: config, catalog: catalog, events: events, logger: logger,
                            sessions: DeviceSessionFactory(config: config, microphone: microphone))
        let capture = AlsaCaptureSettings(device: config.captureDevice, sampleRate: config.sampleRate, channels: config.channels)
        listener = Listener(config: config, recorder: recorder, microphone: microphone, events: events, logger: logger,
                            openMicrophone: { try AlsaCaptureSource(settings: capture) },
                            makeDetector: Listener.detectors(config.transcription))
        let plays = PlayCountCommitter(catalog: catalog)
        player = Player(config: config, catalog: catalog, plays: plays, events: events, logger: logger)
        loudnessPass = LoudnessPass(catalog: catalog, data: config.dataDirectory, logger: logger)
        chapterPass = ChapterPass(catalog: catalog, data: config.dataDirectory, minFreeBytes: config.minFreeBytes, logger: logger)
        transcriptionPass = TranscriptionPass(catalog: catalog, data: config.dataDirectory, events: events,
                                              settings: config.transcription, logger: logger)
        library = Library(catalog: catalog, recorder: recorder, player: player, events: events, config: config, logger: logger,
                          loudnessPass: loudnessPass, plays: plays)
        let backups = Backups(settings: config.backup, data: config.dataDirectory, catalog: catalog, events: events, logger: logger)
        self.backups = backups
        if config.backup != nil { events.observeLibraryChanges { Task { await backups.libraryChanged() } } }
        // A marker changed, a recording saved or trimmed: the pass reads which files are behind.
        events.observeLibraryChanges { [chapterPass] in chapterPass.wake() }
    }

    /// recd is stopping: an active recording is finalized and kept as pending (rather than lost), a
    /// playback ended (and counted); then the event streams end whole — what was published is written,
    /// then their end — rather than be cut with their last events in flight.
    public func stopSessions() async {
        // Listening makes no new take; the take under way (listening's, or one sharing its microphone)
        // ends as any take does at shutdown, while the microphone still delivers; then it closes.
        await listener.shutdown { [recorder, player] in
            async let recording: Void = recorder.shutdown()
            async let playback: Void = player.shutdown()
            _ = await (recording, playback)
        }
        events.finishAll()
    }

    /// Start-up recovery (before the socket accepts requests): see `Recovery`.
    public func recover() -> RecoveryReport {
        // Imports cut short by the stop: received or converted bytes that never reached the library.
        let uploads = config.dataDirectory.clearUploads()
        if !uploads.isEmpty { logger.warning("recovery: removed \(uploads.count) unfinished import(s) from \(config.dataDirectory.uploads.path)") }
        var report = Recovery(catalog: catalog, data: config.dataDirectory, timeZone: config.timeZone, logger: logger)
            .run(activeID: nil)
        report.temporaryFilesRemoved += uploads.map { config.dataDirectory.uploads.appendingPathComponent($0).path }
        // Enhanced copies half made, or made for a recording a crash deleted meanwhile.
        let (data, catalog, logger) = (config.dataDirectory, catalog, logger)
        let swept = data.mutations.run { EnhancedCopies.sweep(catalog: catalog, data: data, startUp: true, logger: logger) }
        report.temporaryFilesRemoved += swept.files.map { data.enhanced.appendingPathComponent($0).path }
        lastRecovery.withLock { $0 = report }
        return report
    }

    /// What the last recovery (start-up or repair) did.
    public var lastRecoveryReport: RecoveryReport? { lastRecovery.withLock { $0 } }

    /// `check`: the catalog against `Recordings/` now, and what the last recovery did.
    public func check() async throws(EngineError) -> ConsistencyReport {
        let activeID = await recorder.active()?.id
        let recovery = Recovery(catalog: catalog, data: config.dataDirectory, timeZone: config.timeZone, logger: logger)
        // A listing of Recordings/ and a read of every row: blocking, and long with a large library.
        var report = try await blockingCatalogCall { try recovery.inspect(activeID: activeID) }
        report.lastRecovery = lastRecovery.withLock { $0 }
        return report
    }

    /// `check --repair`: the start-up recovery, now, leaving the recording in progress alone. The
    /// recorder is held meanwhile (no recording starts or stops) and recovery runs on `BlockingPool`.
    public func repair() async throws(EngineError) -> ConsistencyReport {
        let recovery = Recovery(catalog: catalog, data: config.dataDirectory, timeZone: config.timeZone, logger: logger)
        let repaired = await recorder.repair { activeID in recovery.run(activeID: activeID) }
        lastRecovery.withLock { $0 = repaired }
        if !repaired.isClean { events.publish(.libraryChanged(LibraryChangedEvent(recordingID: nil, change: .recovered))) }
        var report = try await check()
        report.repaired = repaired
        return report
    }

    /// Recording `idOrPrefix` brought back from a backup's snapshot (`POST /v1/backup/restore`).
    public func restoreFromBackup(_ idOrPrefix: String, snapshot: String?) async throws(EngineError) -> Recording {
        let r = try await backups.restoreRecording(idOrPrefix, snapshot: snapshot, catalog: catalog)
        if r.loudness == nil { loudnessPass.wake() }
        return r
    }

    /// "Delete All Data": a playback in progress ends (not counted), then the recorder deletes
    /// everything (see `Recorder.deleteAll`).
    public func deleteAll() async throws(EngineError) -> DeleteAllResponse {
        await player.stopForDeletion()
        let reply = try await recorder.deleteAll()
        await library.sweepEnhancedCopies()
        return reply
    }

    /// The daemon's status as the API shows it (without the server's own fields).
    public func status() async throws(EngineError) -> (activity: DaemonStatus.Activity, active: DaemonStatus.ActiveRecording?,
                                                       counts: [String: Int]) {
        guard let a = await recorder.active() else { return (.idle, nil, try library.counts()) }
        let active = try catalogCall({ try catalog.recording(id: a.id) }).map {
            DaemonStatus.ActiveRecording(recording: $0, elapsed: a.pause?.elapsed, capture: a.stats,
                                         deviceFormat: a.formats?.device, recordedFormat: a.formats?.recorded,
                                         paused: a.pause?.paused ?? false, pausedFor: a.pause?.pausedFor,
                                         pausedTotal: a.pause?.pausedTotal ?? 0)
        }
        return (a.activity, active, try library.counts())
    }
}
