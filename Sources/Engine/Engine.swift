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

    /// Opens (or creates) the data directory and the catalog, and routes alsa-lib's and FFmpeg's own
    /// messages into `logger`.
    public init(config: EngineConfiguration, logger: Logger) throws(EngineError) {
        self.config = config
        self.logger = logger
        try config.dataDirectory.create()
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
            } else if let original = DataDirectory.original(ofHidden: name, suffix: DataDirectory.discardingSuffix) {
                let relative = "Recordings/" + original
                let rowExists = ((try? catalog.recording(file: relative)) ?? nil) != nil
                do {
                    if rowExists {
                        try FileOps.rename(path, dir + "/" + original)
                        report.discardsUndone.append(relative)
                        logger.warning("recovery: an interrupted discard of \(relative) was undone (its row is still there)")
                    } else {
                        try FileOps.remove(path)
                        report.discardsFinished.append(relative)
                        logger.warning("recovery: an interrupted discard of \(relative) was finished")
                    }
                } catch {
                    logger.error("recovery: cannot settle the interrupted discard \(path): \(error)")
                }
            }
        }
        let interrupted = (try? catalog.recordings(inState: .recording)) ?? []
        for r in interrupted {
            let path = config.dataDirectory.absolute(r.file)
            let finished: FinishedFile = FileOps.exists(path)
                ? RecordingFinalizer.finalize(path: path, data: config.dataDirectory, logger: logger)
                : FinishedFile(duration: nil, sizeBytes: nil, stoppedAtDamage: true)
            do {
                try catalog.modify(id: r.id) { row in
                    row.state = .pending
                    row.recovered = true
                    row.duration = finished.duration
                    row.sizeBytes = finished.sizeBytes
                }
                report.salvaged.append(r.id)
                logger.warning("recovered interrupted recording \(r.id) (\(r.title)): \(finished.duration.map { String(format: "%.2f s", $0) } ?? "no readable audio")")
            } catch {
                logger.error("could not recover recording \(r.id): \(error)")
            }
        }
        return report
    }

    /// The daemon's status as the API shows it (without the server's own fields).
    public func status() async throws(EngineError) -> (active: DaemonStatus.ActiveRecording?, counts: [String: Int]) {
        var active: DaemonStatus.ActiveRecording?
        if let a = await recorder.active(), let r = try catalogCall({ try catalog.recording(id: a.id) }) {
            active = .init(recording: r, elapsed: a.elapsed, capture: a.stats)
        }
        return (active, try library.counts())
    }
}
