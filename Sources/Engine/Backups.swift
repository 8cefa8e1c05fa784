// Backups of the library to a restic repository, in the background (issue 48).
import Backup
import Catalog
import Foundation
import Logging
import RecdAPI
import Storage
import Synchronization

/// `--backup` and the settings that go with it.
public struct BackupSettings: Sendable {
    public var repository: ResticRepository
    /// Seconds after the library changed before a backup runs (changes meanwhile go in the same one).
    public var delay: Double
    /// Seconds between backups when nothing asks for one sooner.
    public var interval: Double
    /// A last good backup older than this, while the library changed since, is warned about.
    public var warnAfter: Double
    /// Seconds between checks of the repository (`restic check`, after a good backup); nil: never.
    public var checkInterval: Double?
    /// What part of the data a check reads back (restic's `--read-data-subset`: `10%`, `1/7`, `500M`).
    public var checkSubset: String
    /// Seconds a backup may go without progress before it is stopped (a repository that stopped answering).
    public var stallSeconds: Double
    /// The snapshots kept (`--backup-keep`): the others are forgotten after each good backup; nil
    /// (`all`): every snapshot is kept.
    public var keep: ResticRetention?
    /// Seconds between prunes (removing the data that forgotten snapshots alone used).
    public var pruneInterval: Double

    public init(repository: ResticRepository, delay: Double = 300, interval: Double = 86_400, warnAfter: Double = 86_400,
                checkInterval: Double? = 7 * 86_400, checkSubset: String = "10%", stallSeconds: Double = 600,
                keep: ResticRetention? = BackupSettings.defaultKeep, pruneInterval: Double = 86_400) {
        self.repository = repository; self.delay = delay; self.interval = interval; self.warnAfter = warnAfter
        self.checkInterval = checkInterval; self.checkSubset = checkSubset; self.stallSeconds = stallSeconds
        self.keep = keep; self.pruneInterval = pruneInterval
    }
}

extension BackupSettings {
    /// Ten most recent, then one a day for two weeks, a week for two months, a month for two years
    /// (docs/design.md: why).
    public static let defaultKeep = ResticRetention("last=10,daily=14,weekly=8,monthly=24")
}

/// Runs the backups: `delay` after the library changes, every `interval`, and when asked
/// (`runNow`); one at a time. Each run gathers the snapshot's files (`BackupStage`), then runs
/// `restic backup` at idle priority on a thread of its own, so that no take or request waits for
/// it; a failed run is tried again later (5 minutes, doubling to an hour). The last good one is
/// kept in `<data>/.backup/last.json` across restarts. State: one enum.
public actor Backups {
    enum State {
        case off
        /// Nothing running; the next run at `due` (nil: at the interval after the last good one).
        case idle(due: Date?)
        case running(BackupRunning)
    }

    private let settings: BackupSettings?
    private let stage: BackupStage
    private let logger: Logger
    private var state: State
    private var lastSuccess: BackupSnapshotSummary?
    private var lastError: BackupError?
    private var lastCheck: BackupCheck?
    private var lastForget: BackupForget?
    /// The last prune (`lastForget` says only whether the last forget pruned; a recd started after
    /// one that did not prunes at its first run).
    private var lastPruneAt: Date?
    private var failuresInARow = 0
    /// Changes of the library counted since recd started; and the count a run's snapshot holds.
    private var changes = 0
    private var changesBackedUp = 0
    /// The first change not in a good snapshot (recd's start counts as one: what changed while it
    /// was stopped is not known).
    private var unbackedSince: Date?
    private var warnedStale = false
    /// Asked for while a run was under way: another one follows it.
    private var runAgain = false
    private var sleeper: CheckedContinuation<Void, Never>?
    private var timer: Task<Void, Never>?
    /// Counts the sleeps, so that a timer wakes only its own.
    private var sleeps = 0
    private let startedAt = Date()

    private let events: EventHub

    init(settings: BackupSettings?, data: DataDirectory, catalog: Catalog, events: EventHub, logger: Logger) {
        self.settings = settings
        self.events = events
        stage = BackupStage(data: data, catalog: catalog)
        self.logger = logger
        lastSuccess = settings == nil ? nil : Self.load(Self.lastPath(data))
        lastCheck = settings == nil ? nil : Self.load(Self.checkPath(data))
        lastForget = settings?.keep == nil ? nil : Self.load(Self.forgetPath(data))
        lastPruneAt = lastForget?.pruned == true ? lastForget?.at : nil
        state = settings == nil ? .off : .idle(due: Date().addingTimeInterval(settings!.delay))
        unbackedSince = settings == nil ? nil : Date()
    }

    private static func lastPath(_ data: DataDirectory) -> String { data.root.appendingPathComponent(".backup/last.json").path }
    private static func checkPath(_ data: DataDirectory) -> String { data.root.appendingPathComponent(".backup/last-check.json").path }
    private static func forgetPath(_ data: DataDirectory) -> String { data.root.appendingPathComponent(".backup/last-forget.json").path }

    private static func load<T: Decodable>(_ path: String) -> T? {
        guard let bytes = FileManager.default.contents(atPath: path) else { return nil }
        return try? APIJSON.decoder().decode(T.self, from: bytes)
    }

    /// The library changed: a run `delay` from now, unless one is due sooner.
    public func libraryChanged() {
        guard let settings else { return }
        changes += 1
        if unbackedSince == nil { unbackedSince = Date() }
        if case .idle(let due) = state {
            let soon = Date().addingTimeInterval(settings.delay)
            if due == nil || due! > soon {
                state = .idle(due: soon)
                wake()
            }
        }
    }

    /// Asks for a run now; while one runs, another follows it (what changed since that one began
    /// is in the next). Throws when backups are off.
    public func runNow() throws(EngineError) -> BackupStatus {
        guard settings != nil else { throw .backupsOff }
        switch state {
        case .idle:
            state = .idle(due: Date())
            wake()
        case .running: runAgain = true
        case .off: break
        }
        return status
    }

    /// recd's snapshots in the repository, newest first (restic, on a thread of its own).
    public func snapshots() async throws(EngineError) -> BackupSnapshotList {
        guard let settings else { throw .backupsOff }
        let repository = settings.repository
        let result = await BackupThread.run { () -> Result<[BackupSnapshot], ResticError> in
            do throws(ResticError) { return .success(try repository.snapshots()) } catch { return .failure(error) }
        }
        switch result {
        case .success(let list): return BackupSnapshotList(snapshots: list)
        case .failure(let e): throw .backup(reason: e.reason, message: e.message)
        }
    }

    /// Brings recording `idOrPrefix` back from `snapshot` (nil: recd's newest) into the library
    /// (`BackupRestore`), on a thread of its own.
    public func restoreRecording(_ idOrPrefix: String, snapshot: String?, catalog: Catalog) async throws(EngineError) -> Recording {
        guard let settings else { throw .backupsOff }
        let job = BackupRestore(repository: settings.repository, catalog: catalog, data: stage.data, logger: logger)
        let result = await BackupThread.run { () -> Result<Recording, EngineError> in
            do throws(EngineError) { return .success(try job.run(idOrPrefix, snapshot: snapshot)) } catch { return .failure(error) }
        }
        let r = try result.get()
        logger.info("backup: recording \(r.id) ('\(r.title)') restored from snapshot \(snapshot ?? "latest")")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .created)))
        return r
    }

    /// Makes the repository (`restic init`); then a backup runs.
    public func initialize() async throws(EngineError) -> BackupStatus {
        guard let settings else { throw .backupsOff }
        let repository = settings.repository
        let result = await BackupThread.run { () -> ResticError? in
            do throws(ResticError) { try repository.initialize(); return nil } catch { return error }
        }
        if let e = result { throw .backup(reason: e.reason, message: e.message) }
        logger.info("backup: made the repository \(repository.location)")
        return try runNow()
    }

    public var status: BackupStatus {
        guard let settings else { return BackupStatus(state: .off) }
        var s = BackupStatus(state: .idle, repository: settings.repository.location, lastSuccess: lastSuccess, lastError: lastError,
                             lastCheck: lastCheck, lastForget: lastForget, warning: staleWarning(settings) ?? checkWarning)
        switch state {
        case .off: s.state = .off
        case .idle(let due): s.nextRunAt = due ?? nextScheduled(settings)
        case .running(let r):
            s.state = .running
            s.running = r.progress.withLock { $0 }
        }
        return s
    }

    /// What is said when the last good backup is older than `warnAfter` and the library changed since.
    private func staleWarning(_ settings: BackupSettings) -> String? {
        let reference = lastSuccess?.finishedAt ?? startedAt
        guard unbackedSince != nil, Date().timeIntervalSince(reference) > settings.warnAfter else { return nil }
        let age = Self.duration(Date().timeIntervalSince(reference))
        if let last = lastSuccess {
            return "the last good backup (snapshot \(last.snapshotID)) is \(age) old and the library changed since\(lastError.map { ": \($0.message)" } ?? "")"
        }
        return "no backup has completed in \(age) of changes\(lastError.map { ": \($0.message)" } ?? "")"
    }

    /// A check that found the repository damaged: said until a check finds it sound.
    private var checkWarning: String? {
        guard let lastCheck, !lastCheck.ok else { return nil }
        return "the repository's last check found errors: \(lastCheck.message) (restic check; restic repair or a new repository)"
    }

    private func nextScheduled(_ settings: BackupSettings) -> Date {
        (lastSuccess?.finishedAt ?? startedAt).addingTimeInterval(settings.interval)
    }

    static func duration(_ seconds: Double) -> String {
        if seconds >= 86_400 { return String(format: "%.1f days", seconds / 86_400) }
        if seconds >= 3_600 { return String(format: "%.1f hours", seconds / 3_600) }
        let minutes = Int(seconds / 60)
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }

    /// Runs until cancelled (recd's shutdown, which also interrupts a restic under way: it removes
    /// its lock and ends).
    public func run() async {
        guard let settings else {
            await sleep(until: nil)   // off: nothing to do until recd stops
            return
        }
        stage.remove()   // left by a run that recd's end cut short
        while !Task.isCancelled {
            let now = Date()
            let due: Date
            switch state {
            case .idle(let d): due = d ?? nextScheduled(settings)
            default: due = now
            }
            if due <= now {
                await perform(settings)
                continue
            }
            // The journal hears of a stale backup once (until a good one).
            if let warning = staleWarning(settings), !warnedStale {
                warnedStale = true
                logger.warning("backup: \(warning)")
            }
            let staleAt = (lastSuccess?.finishedAt ?? startedAt).addingTimeInterval(settings.warnAfter + 1)
            await sleep(until: warnedStale || staleAt <= now ? due : min(due, staleAt))
        }
        if case .running(let r) = state { r.run.withLock { $0 }?.interrupt() }
    }

    private func perform(_ settings: BackupSettings) async {
        let running = BackupRunning(startedAt: Date())
        state = .running(running)
        events.publish(.backupStatus(status))
        let mark = changes
        let (stage, repository, stall, events) = (self.stage, settings.repository, settings.stallSeconds, self.events)
        let outcome: Result<BackupSnapshotSummary, ResticError> = await withTaskCancellationHandler {
            await BackupThread.run {
                Self.makeSnapshot(stage: stage, repository: repository, stallSeconds: stall, running: running, events: events)
            }
        } onCancel: {
            running.run.withLock { $0 }?.interrupt()
        }
        switch outcome {
        case .success(let summary): await succeeded(summary, changesAt: mark, settings, running)
        case .failure(let error): failed(error, settings, running)
        }
    }

    /// One backup, on its thread: the stage made, `restic backup` of it, the stage removed.
    private static func makeSnapshot(stage: BackupStage, repository: ResticRepository, stallSeconds: Double, running: BackupRunning,
                                     events: EventHub) -> Result<BackupSnapshotSummary, ResticError> {
        let started = Date()
        defer { stage.remove() }
        let contents: BackupStage.Contents
        do throws(StorageError) {
            contents = try stage.make()
        } catch {
            if case .backup(let reason, let message) = error { return .failure(ResticError(reason: reason, message: message)) }
            return .failure(ResticError(reason: .staging, message: "\(error)"))
        }
        do throws(ResticError) {
            let r = try repository.backup(stage: stage.folder, stallSeconds: stallSeconds, started: { run in running.run.withLock { $0 = run } }) { f in
                reportProgress(f, running: running, events: events)
            }
            return .success(BackupSnapshotSummary(snapshotID: r.snapshotID, startedAt: started, finishedAt: Date(),
                                                  recordings: contents.recordings, totalBytes: r.totalBytes, addedBytes: r.addedBytes))
        } catch {
            return .failure(error)
        }
    }

    /// restic's figures into the run's progress, and out as an event.
    private static func reportProgress(_ f: BackupProgressFigures, running: BackupRunning, events: EventHub) {
        let now = ContinuousClock.now
        let update = running.progress.withLock { p -> BackupProgress? in
            p.fraction = f.fraction; p.bytesDone = f.bytesDone; p.totalBytes = f.totalBytes
            p.filesDone = f.filesDone; p.totalFiles = f.totalFiles
            return p
        }
        // At most one event a second (restic reports many times a second).
        if let update, running.lastEvent.withLock({ last in
            guard last.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            last = now
            return true
        }) {
            events.publish(.backupProgress(update))
        }
    }

    /// A good backup: kept and said, then the forget and the check when due, then the next run's time.
    /// `mark`: the changes counted when it began.
    private func succeeded(_ summary: BackupSnapshotSummary, changesAt mark: Int, _ settings: BackupSettings, _ running: BackupRunning) async {
        lastSuccess = summary
        lastError = nil
        failuresInARow = 0
        changesBackedUp = mark
        warnedStale = false
        if changes == mark { unbackedSince = nil }
        save(summary, to: Self.lastPath(stage.data))
        logger.info("backup: snapshot \(summary.snapshotID) of \(summary.recordings) recording(s), \(summary.totalBytes) bytes (\(summary.addedBytes) added) in \(String(format: "%.1f", summary.finishedAt.timeIntervalSince(summary.startedAt))) s")
        // Saved: said now, while the forget and the check (if due) still run (a page shows "checking").
        events.publish(.backupStatus(status))
        if let keep = settings.keep { await forget(keep, settings, running) }
        if let every = settings.checkInterval, Date().timeIntervalSince(lastCheck?.at ?? .distantPast) >= every {
            await check(settings, running)
        }
        state = .idle(due: runAgain ? Date() : changes == mark ? nil : Date().addingTimeInterval(settings.delay))
        runAgain = false
        events.publish(.backupStatus(status))
    }

    /// A failed backup: kept for the status, and tried again later.
    private func failed(_ error: ResticError, _ settings: BackupSettings, _ running: BackupRunning) {
        failuresInARow += 1
        lastError = BackupError(startedAt: running.progress.withLock { $0.startedAt }, at: Date(), reason: error.reason, message: error.message)
        let retry = min(max(settings.delay, 60) * pow(2, Double(failuresInARow - 1)), 3_600)
        logger.error("backup failed (\(error.reason.rawValue)): \(error.message); trying again in \(Self.duration(retry))")
        state = .idle(due: Date().addingTimeInterval(runAgain ? 0 : retry))
        runAgain = false
        events.publish(.backupStatus(status))
    }

    /// `restic forget` of the snapshots `keep` no longer keeps, after each good backup (still in the
    /// running state); pruned at most every `pruneInterval` — when there is something to prune. A
    /// failure is logged and tried again after the next backup: the snapshot just made stands.
    private func forget(_ keep: ResticRetention, _ settings: BackupSettings, _ running: BackupRunning) async {
        let repository = settings.repository
        let prune = Date().timeIntervalSince(lastPruneAt ?? .distantPast) >= settings.pruneInterval
        let result = await withTaskCancellationHandler {
            await BackupThread.run { () -> Result<(kept: Int, removed: Int), ResticError> in
                do throws(ResticError) {
                    return .success(try repository.forget(keep, prune: prune) { run in running.run.withLock { $0 = run } })
                } catch { return .failure(error) }
            }
        } onCancel: {
            running.run.withLock { $0 }?.interrupt()
        }
        if Task.isCancelled { return }
        switch result {
        case .success(let r):
            lastForget = BackupForget(at: Date(), policy: keep.description, kept: r.kept, removed: r.removed, pruned: prune)
            if prune { lastPruneAt = Date() }
            if r.removed > 0 || prune {
                logger.info("backup: \(r.removed) old snapshot(s) forgotten, \(r.kept) kept (--backup-keep \(keep))\(prune ? "; unused data pruned" : "")")
            }
            save(lastForget, to: Self.forgetPath(stage.data))
        case .failure(let e):
            logger.warning("backup: old snapshots could not be forgotten: \(e.message) (tried again after the next backup)")
        }
    }

    /// `restic check` of part of the data (still in the running state: no backup starts meanwhile).
    private func check(_ settings: BackupSettings, _ running: BackupRunning) async {
        let (repository, subset) = (settings.repository, settings.checkSubset)
        let result = await withTaskCancellationHandler {
            await BackupThread.run { () -> Result<(ok: Bool, message: String), ResticError> in
                do throws(ResticError) {
                    return .success(try repository.check(subset: subset) { run in running.run.withLock { $0 = run } })
                } catch { return .failure(error) }
            }
        } onCancel: {
            running.run.withLock { $0 }?.interrupt()
        }
        if Task.isCancelled { return }   // interrupted by recd's stop: no verdict
        switch result {
        case .success(let r):
            lastCheck = BackupCheck(at: Date(), ok: r.ok, message: r.message)
            if r.ok { logger.info("backup: the repository checks clean (\(subset) of its data read back)") }
            else { logger.error("backup: the repository's check found errors: \(r.message)") }
            save(lastCheck, to: Self.checkPath(stage.data))
        case .failure(let e):
            // Not a verdict on the repository (it could not be reached or opened): tried after the next backup.
            logger.warning("backup: the repository could not be checked: \(e.message)")
        }
    }

    private func save(_ value: some Encodable, to path: String) {
        do {
            let bytes = try APIJSON.encoder().encode(value)
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try bytes.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.warning("backup: could not keep \(path): \(error)")
        }
    }

    /// Until `date` (nil: no time), a wake-up, or cancellation.
    private func sleep(until date: Date?) async {
        sleeps += 1
        let this = sleeps
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                if Task.isCancelled { c.resume(); return }
                sleeper = c
                guard let date else { return }
                timer = Task { [weak self] in
                    // A timer cancelled by a wake-up must not wake the sleep that follows it.
                    do { try await Task.sleep(for: .seconds(max(0, date.timeIntervalSinceNow))) } catch { return }
                    await self?.wake(sleep: this)
                }
            }
        } onCancel: {
            Task { await self.wake() }
        }
    }

    /// Ends the sleep under way (only sleep `sleep`'s, when given).
    private func wake(sleep: Int? = nil) {
        if let sleep, sleep != sleeps { return }
        timer?.cancel()
        timer = nil
        sleeper?.resume()
        sleeper = nil
    }
}

/// A run under way: what the status shows, and the restic to interrupt. Shared with the run's thread.
final class BackupRunning: Sendable {
    let progress: Mutex<BackupProgress>
    let run = Mutex<(any ResticInterruptible)?>(nil)
    /// When the last progress event went out.
    let lastEvent = Mutex<ContinuousClock.Instant?>(nil)
    init(startedAt: Date) { progress = Mutex(BackupProgress(startedAt: startedAt)) }
}

/// A thread for each run: restic is its child, and is sent SIGINT if the thread ends first (it
/// does not: it waits for restic).
enum BackupThread {
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in
            let t = Thread { c.resume(returning: body()) }
            t.name = "backup"
            t.start()
        }
    }
}
