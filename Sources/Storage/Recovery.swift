// Start-up recovery and the consistency check: whatever a crash left, finished or undone.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI

/// Brings `Recordings/` and the catalog back into agreement. Order matters:
/// 1. an interrupted "delete all" (its files go back, or its trash is emptied);
/// 2. interrupted discards/deletions (aside files put back or deleted) and half-written
///    finalization files (removed: their source is still there);
/// 3. interrupted recordings (finalized and made pending, or removed if they hold no audio);
/// 4. rows whose file is gone → `missing`; files no row refers to → adopted if media,
///    quarantined if not. Nothing that may be a recording is ever deleted.
public struct Recovery: Sendable {
    public let catalog: Catalog
    public let data: DataDirectory
    public let timeZone: TimeZone?
    public let logger: Logger

    public init(catalog: Catalog, data: DataDirectory, timeZone: TimeZone?, logger: Logger) {
        self.catalog = catalog; self.data = data; self.timeZone = timeZone; self.logger = logger
    }

    public static let quarantine = ".quarantine"

    /// Containers recd adopts (libavformat's demuxer names).
    public static let adoptableFormats = ["mov", "mp4", "m4a", "matroska", "webm", "wav", "ogg", "mp3", "flac", "aac", "caf"]

    public func run(activeID: UUID?) -> RecoveryReport {
        data.mutations.run { runLocked(activeID: activeID) }
    }

    private func runLocked(activeID: UUID?) -> RecoveryReport {
        var report = RecoveryReport()
        // One listing of `Recordings/` (100,000 names are a third of start-up's system time) serves
        // every step, unless one of the first three moved something: then reconcile lists again.
        var listing = try? data.listRecordings()
        DeleteAll.recover(catalog: catalog, data: data, hidden: listing?.hidden, report: &report, logger: logger)
        if !report.isClean { listing = nil }
        settleHiddenFiles(except: activeID, hidden: listing?.hidden, &report)
        salvageInterrupted(except: activeID, &report)
        reconcile(except: activeID, listed: report.isClean ? listing?.files : nil, &report)
        // What was moved (files put back, quarantined) stays moved after a power cut; were it
        // lost, the next recovery would only do it again, but the library would flicker.
        do { try FileOps.sync(dir) } catch { report.problems.append("\(error)") }
        if report.isClean {
            logger.info("recovery: catalog and Recordings/ agree")
        } else {
            logger.warning("recovery: \(report.salvaged.count) salvaged, \(report.adopted.count) adopted, \(report.quarantined.count) quarantined, \(report.markedMissing.count) marked missing, \(report.removalsUndone.count + report.removalsFinished.count) removals settled, \(report.problems.count) problems")
        }
        return report
    }

    private var dir: String { data.recordings.path }

    /// `except`: the recording in progress, whose finalization file may be being written right now.
    private func settleHiddenFiles(except activeID: UUID?, hidden: [String]?, _ report: inout RecoveryReport) {
        defer {
            do { _ = try FileReplacement.closeSettledEntries(catalog: catalog, data: data) }
            catch { report.problems.append("cannot close settled replacements in the journal: \(error)") }
        }
        let names: [String]
        do { names = try hidden ?? data.listRecordings().hidden }
        catch { report.problems.append("cannot list Recordings/: \(error)"); return }
        for name in names.sorted() {
            let path = dir + "/" + name
            if let original = DataDirectory.original(ofHidden: name, suffix: DataDirectory.finalizingSuffix) {
                if let activeID, original.contains(activeID.uuidString) { continue }
                do {
                    try FileOps.remove(path)
                    report.temporaryFilesRemoved.append(path)
                } catch {
                    report.problems.append("cannot remove \(path): \(error)")
                }
                continue
            }
            do {
                switch try FileReplacement.settle(name: name, catalog: catalog, data: data) {
                case .finished?:
                    let target = dir + "/" + (DataDirectory.original(ofHidden: name, suffix: DataDirectory.replacingSuffix) ?? name)
                    report.replacementsFinished.append(target)
                    logger.warning("recovery: the new file of \(target) (a trim) was committed but not in place; renamed into place")
                    continue
                case .removed?:
                    report.temporaryFilesRemoved.append(path)
                    continue
                case nil:
                    break
                }
            } catch {
                report.problems.append("leaving \(path) alone: \(error)")
                logger.error("recovery: leaving \(path) alone, cannot settle its replacement: \(error)")
                continue
            }
            do {
                switch try TakeRemoval.settleInterruptedRemoval(name: name, catalog: catalog, data: data) {
                case .undone?:
                    report.removalsUndone.append(path)
                    logger.warning("recovery: an interrupted discard/delete of \(path) was undone (its row is still there)")
                case .finished?:
                    report.removalsFinished.append(path)
                    logger.warning("recovery: an interrupted discard/delete of \(path) was finished")
                case nil:
                    break
                }
            } catch {
                report.problems.append("leaving \(path) alone: \(error)")
                logger.error("recovery: leaving \(path) alone, cannot settle its interrupted discard/delete: \(error)")
            }
        }
    }

    private func salvageInterrupted(except activeID: UUID?, _ report: inout RecoveryReport) {
        let interrupted: [UUID]
        do {
            interrupted = try catalog.ids(inState: .recording)
        } catch {
            report.problems.append("cannot list interrupted recordings: \(error)")
            return
        }
        for id in interrupted where id != activeID {
            do {
                try salvage(id, &report)
            } catch {
                report.problems.append("could not salvage recording \(id): \(error)")
                logger.error("recovery: could not salvage recording \(id): \(error)")
            }
        }
    }

    /// Finalizes the file of a recording the daemon was making when it died and makes it pending.
    /// A row whose file never came to be, or holds no audio at all, is removed: nothing was recorded.
    private func salvage(_ id: UUID, _ report: inout RecoveryReport) throws {
        guard let r = try catalog.recording(id: id) else { return }
        let path = try data.recordingPath(r.file)
        let finished = (FileOps.size(path) ?? 0) > 0
            ? RecordingFinalizer.finalize(path: path, data: data, logger: logger)
            : FinishedFile(duration: nil, sizeBytes: nil, packets: 0)
        if finished.packets == 0 {
            try TakeRemoval.remove(r, expecting: [.recording], action: "remove", catalog: catalog, data: data)
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

    /// `listed`: the names of `Recordings/`' files if listed since nothing moved (else listed here).
    private func reconcile(except activeID: UUID?, listed: [String]?, _ report: inout RecoveryReport) {
        let rows: [(file: String, id: String, state: String)]
        let files: [String]
        do {
            rows = try catalog.fileRows()
            files = try listed ?? data.listRecordings().files
        } catch {
            report.problems.append("cannot compare catalog and Recordings/: \(error)")
            return
        }
        let present = Set(files.map { Substring($0) })
        let active = activeID?.uuidString
        let (pending, ready, missing) = (RecordingState.pending.rawValue, RecordingState.ready.rawValue, RecordingState.missing.rawValue)
        // Rows whose file is one of the listing's: each names another (`file` is unique), so when
        // they are as many as the files, no file is without a row.
        var matched = 0
        for row in rows {
            let name = DataDirectory.recordingName(row.file)
            let there = name.map { present.contains($0) } ?? false
            if there && name != nil { matched += 1 }
            if !there && (row.state == pending || row.state == ready) && row.id != active {
                do {
                    guard let id = UUID(uuidString: row.id) else { throw CatalogError.corruptRow(id: row.id, detail: "id") }
                    // false: deleted or changed meanwhile (a repair runs beside requests); nothing to report.
                    if try catalog.markMissing(id: id) {
                        report.markedMissing.append(id)
                        logger.warning("recovery: the file of recording \(row.id) is gone (\(row.file)); marked missing")
                    }
                } catch {
                    report.problems.append("cannot mark \(row.id) missing: \(error)")
                }
            } else if there && row.state == missing, let id = UUID(uuidString: row.id) {
                // A missing recording whose file is back (put back by hand, as recctl advises, or by
                // a later rollback): the state it had when the file is the one it had (same size),
                // else pending, which asks the user to look.
                do {
                    if let back = try catalog.fileIsBack(id: id, sizeBytes: FileOps.size(data.recordingPath(row.file))) {
                        report.foundAgain.append(id)
                        logger.warning("recovery: the file of missing recording \(id) is back (\(row.file)); it is \(back.state.rawValue) again")
                    }
                } catch {
                    report.problems.append("cannot restore \(id): \(error)")
                }
            }
        }
        guard matched < files.count else { return }
        // Files no row names (few, if any: sorted for a stable order of adoption).
        let named = Set(rows.compactMap { DataDirectory.recordingName($0.file) })
        for name in files.filter({ !named.contains(Substring($0)) }).sorted() {
            adoptOrQuarantine(name, &report)
        }
    }

    /// A file with no row: adopted as a pending recovered recording if libavformat reads audio or
    /// video from it, else moved to `Recordings/.quarantine/` (never deleted).
    private func adoptOrQuarantine(_ name: String, _ report: inout RecoveryReport) {
        let path = dir + "/" + name
        if let info = try? WorkerMedia.probe(path),
           info.formatName.split(separator: ",").contains(where: { Self.adoptableFormats.contains(String($0)) }),
           info.streams.contains(where: { $0.kind == "audio" || $0.kind == "video" }) {
            let hasVideo = info.streams.contains { $0.kind == "video" && $0.codec != "mjpeg" && $0.codec != "png" }
            let created = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? Date()
            let r = Recording(id: UUID(), type: hasVideo ? .video : .audio, state: .pending,
                              title: MetadataRules.autoTitle(for: created, timeZone: timeZone), notes: "",
                              purpose: nil, createdAt: created, duration: info.duration, sizeBytes: FileOps.size(path),
                              file: "Recordings/" + name, playCount: 0, lastPlayedAt: nil, recovered: true, droppedFrames: 0,
                              format: info.streams.first { $0.kind == "audio" }.flatMap { RecordingFormat(rawValue: $0.codec) })
            do {
                try catalog.insert(r)
                report.adopted.append(r.id)
                logger.warning("recovery: adopted \(name) (no row) as pending recording \(r.id)")
            } catch {
                report.problems.append("cannot adopt \(name): \(error)")
            }
            return
        }
        let qdir = dir + "/" + Self.quarantine
        mkdir(qdir, 0o700)
        var target = qdir + "/" + name
        var n = 1
        while FileOps.exists(target) { n += 1; target = qdir + "/" + name + ".\(n)" }
        do {
            try FileOps.rename(path, target)
            report.quarantined.append(name)
            logger.warning("recovery: \(name) in Recordings/ is not media; moved to \(target)")
        } catch {
            report.problems.append("cannot quarantine \(name): \(error)")
        }
    }

    /// Whether a row's file is there: looked up in the listing of `Recordings/` (no system call). A
    /// value that is not a name there (`DataDirectory.recordingName`) is never looked at: not there.
    private func exists(_ relative: String, in listing: Set<Substring>) -> Bool {
        DataDirectory.recordingName(relative).map { listing.contains($0) } ?? false
    }

    /// The check without repairs. Under `data.mutations`, as every change of a file and its row is:
    /// a trim's or a chapter copy's temporary file, or a delete between the read of the rows and the
    /// listing, is otherwise reported as a leftover or a row without its file while the change is
    /// under way (the power-cut test's dump saw a chapter copy's `.replacing` file as "unsettled").
    /// A check during a long copy waits for it.
    public func inspect(activeID: UUID?) throws(StorageError) -> ConsistencyReport {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        let rows = try catalogCall { try catalog.fileRows() }
        let listing = try data.listRecordings()
        let files = listing.files.sorted()
        let present = Set(files.map { Substring($0) })
        // A trash folder that no open journal names is a committed delete-all being emptied after its
        // reply (`DeleteAll`): settled, not something to repair.
        let open = Set(try catalogCall { try catalog.openJournal() }.map { DeleteAll.trashPrefix + $0.id })
        let hidden = listing.hidden.filter {
            $0 != Self.quarantine && !($0.hasPrefix(DeleteAll.trashPrefix) && !open.contains($0))
        }
        let active = activeID?.uuidString
        let named = Set(rows.compactMap { DataDirectory.recordingName($0.file) })
        var withoutFile: [UUID] = [], missing: [UUID] = [], back: [UUID] = [], interrupted: [UUID] = []
        for row in rows where row.id != active {
            guard let id = UUID(uuidString: row.id) else { continue }
            switch RecordingState(rawValue: row.state) {
            case .pending?, .ready?: if !exists(row.file, in: present) { withoutFile.append(id) }
            case .missing?:
                missing.append(id)
                if exists(row.file, in: present) { back.append(id) }
            case .recording?: interrupted.append(id)
            case nil: break
            }
        }
        return ConsistencyReport(checkedAt: Date(), rowsWithoutFile: withoutFile.sorted { $0.uuidString < $1.uuidString },
                                 missing: missing.sorted { $0.uuidString < $1.uuidString },
                                 filesBack: back.sorted { $0.uuidString < $1.uuidString },
                                 filesWithoutRow: files.filter { !named.contains(Substring($0)) },
                                 interruptedRecordings: interrupted, unsettled: hidden.sorted(),
                                 lastRecovery: nil, repaired: nil)
    }
}
