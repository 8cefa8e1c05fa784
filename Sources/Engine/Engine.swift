// The engine: catalog, recorder and library, wired together, with start-up recovery.
import Capture
import Catalog
import Foundation
import Logging
import Media
import RecdAPI

public final class Engine: Sendable {
    public let config: EngineConfiguration
    public let recorder: Recorder
    public let library: Library
    let catalog: Catalog
    let logger: Logger
    /// Held while the engine lives: a second daemon on the same data directory would "recover" the
    /// first one's recording in progress from under it.
    let dataLock: ExclusiveFileLock

    /// Opens (or creates) the data directory and the catalog, and routes alsa-lib's and FFmpeg's own
    /// messages into `logger`.
    public init(config: EngineConfiguration, logger: Logger) throws(EngineError) {
        self.config = config
        self.logger = logger
        try config.dataDirectory.create()
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
            throw .catalog("\(error)")
        }
        AlsaLog.route(to: logger)
        FFmpegLog.route(to: logger)
        recorder = Recorder(config: config, catalog: catalog, logger: logger)
        library = Library(catalog: catalog, recorder: recorder, config: config, logger: logger)
    }

    /// What start-up recovery did.
    public struct RecoveryReport: Sendable {
        public var salvaged: [UUID] = []
        /// Interrupted before any audio reached the file: row (and empty file) removed.
        public var removedEmpty: [UUID] = []
        public var removedTemporaryFiles: [String] = []
        /// Discards interrupted after the file was moved aside but before the row was deleted.
        public var discardsUndone: [String] = []
        /// Discards interrupted after the row was deleted: the aside file is deleted now.
        public var discardsFinished: [String] = []
    }

    /// Runs before the socket accepts requests. A recording that was in progress when the daemon died
    /// is salvaged: its fragmented file is finalized (the torn last fragment, if any, is dropped), its
    /// duration measured, and it comes back as `pending` with `recovered: true`. Never deleted.
    /// Half-written finalization files are removed (the original they were made from is still there),
    /// and interrupted discards are undone or finished (see `Library.discard`).
    public func recover() -> RecoveryReport {
        var report = RecoveryReport()
        let dir = config.dataDirectory.recordings.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        for name in names {
            let path = dir + "/" + name
            if DataDirectory.original(ofHidden: name, suffix: DataDirectory.finalizingSuffix) != nil {
                try? FileOps.remove(path)
                report.removedTemporaryFiles.append(path)
                continue
            }
            do {
                switch try TakeRemoval.settleInterruptedRemoval(name: name, catalog: catalog, data: config.dataDirectory) {
                case .undone?:
                    report.discardsUndone.append(path)
                    logger.warning("recovery: an interrupted discard of \(path) was undone (its row is still there)")
                case .finished?:
                    report.discardsFinished.append(path)
                    logger.warning("recovery: an interrupted discard of \(path) was finished")
                case nil:
                    break
                }
            } catch {
                logger.error("recovery: leaving \(path) alone, cannot settle its interrupted discard: \(error)")
            }
        }
        let interrupted: [UUID]
        do {
            interrupted = try catalog.ids(inState: .recording)
        } catch {
            logger.error("recovery: cannot list interrupted recordings, none salvaged: \(error)")
            interrupted = []
        }
        for id in interrupted {
            do {
                try salvage(id, into: &report)
            } catch {
                logger.error("recovery: could not salvage recording \(id): \(error)")
            }
        }
        return report
    }

    /// Finalizes the file of a recording the daemon was making when it died and makes it pending.
    /// A row whose file never came to be, or holds no audio at all, is removed: nothing was recorded.
    private func salvage(_ id: UUID, into report: inout RecoveryReport) throws {
        guard let r = try catalog.recording(id: id) else { return }
        let path = config.dataDirectory.absolute(r.file)
        let finished = (FileOps.size(path) ?? 0) > 0
            ? RecordingFinalizer.finalize(path: path, data: config.dataDirectory, logger: logger)
            : FinishedFile(duration: nil, sizeBytes: nil, packets: 0)
        if finished.packets == 0 {
            try TakeRemoval.remove(r, expecting: .recording, action: "remove", catalog: catalog, data: config.dataDirectory)
            report.removedEmpty.append(id)
            logger.warning("recovery: recording \(id) (\(r.title)) was interrupted before any audio was written; removed")
            return
        }
        try catalog.modify(id: id) { row in
            row.state = .pending
            row.recovered = true
            finished.apply(to: &row)
        }
        report.salvaged.append(id)
        logger.warning("recovery: salvaged interrupted recording \(id) (\(r.title)): \(finished.duration.map { String(format: "%.2f s", $0) } ?? "duration unknown")")
    }

    /// The daemon's status as the API shows it (without the server's own fields).
    public func status() async throws(EngineError) -> (activity: DaemonStatus.Activity, active: DaemonStatus.ActiveRecording?,
                                                       counts: [String: Int]) {
        guard let a = await recorder.active() else { return (.idle, nil, try library.counts()) }
        let activity: DaemonStatus.Activity = switch a.activity {
        case .idle: .idle
        case .starting: .starting
        case .recording: .recording
        case .stopping: .stopping
        }
        let active = try catalogCall({ try catalog.recording(id: a.id) }).map {
            DaemonStatus.ActiveRecording(recording: $0, elapsed: a.elapsed, capture: a.stats)
        }
        return (activity, active, try library.counts())
    }
}
