// "Delete All Data" (seed Screen 7.3): every recording, files and rows, all or nothing — also
// across a crash.
import Catalog
import Foundation
import Logging
import RecdAPI

/// The protocol, with its commit point in one SQLite transaction:
/// 1. a journal row says "delete-all <id> started";
/// 2. every file of `Recordings/` is renamed into `Recordings/.trash-<id>/` (same filesystem);
///    both directories are fsynced;
/// 3. commit: all rows and the journal row are deleted in one transaction;
/// 4. the trash folder is emptied and removed — after the reply, on `BackgroundPool`: from the
///    commit on, the library is empty and the files are out of `Recordings/` for good; unlinking them
///    is half of the work and nobody needs to wait for it (a crash meanwhile: recovery finishes it).
/// A failure before 3 moves the files back and ends the journal: nothing changed. After a crash,
/// `recover` finds either an open journal row (before 3: files go back, everything is still there)
/// or a trash folder without one (after 3: it is emptied, everything is gone).
enum DeleteAll {
    static let kind = "delete-all"
    static let trashPrefix = ".trash-"

    /// Runs steps 1–4. Blocking; the caller makes sure nothing records meanwhile.
    static func run(catalog: Catalog, data: DataDirectory, logger: Logger) throws(EngineError) -> DeleteAllResponse {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        return try runLocked(catalog: catalog, data: data, logger: logger)
    }

    private static func runLocked(catalog: Catalog, data: DataDirectory, logger: Logger) throws(EngineError) -> DeleteAllResponse {
        let dir = data.recordings.path
        let journal = try catalogCall { try catalog.beginJournal(kind: kind) }
        let trash = dir + "/" + trashPrefix + journal
        var moved: [String] = []
        do {
            guard mkdir(trash, 0o700) == 0 else {
                throw EngineError.storage(file: trash, operation: "create", underlying: FileOps.errnoText())
            }
            for name in try data.listRecordings().files {
                guard Glibc.rename(dir + "/" + name, trash + "/" + name) == 0 else {
                    if errno == ENOENT { continue }   // removed meanwhile (a concurrent discard)
                    throw EngineError.storage(file: dir + "/" + name, operation: "move",
                                              underlying: "\(FileOps.errnoText()) (moving it into \(trash))")
                }
                moved.append(name)
            }
            try FileOps.sync(trash)
            try FileOps.sync(dir)
            let rows = try catalogCall { try catalog.commitDeleteAll(journalID: journal) }
            let files = moved
            BackgroundPool.shared.submit { _ in
                for name in files { try? FileOps.remove(trash + "/" + name) }
                rmdir(trash)
                logger.info("deleted all: the trash of \(files.count) files is emptied")
            }
            logger.info("deleted all: \(rows) recordings, \(moved.count) files")
            return DeleteAllResponse(deletedRecordings: rows, deletedFiles: moved.count)
        } catch {
            // Roll back. The journal is ended only if every file is back: otherwise it stays open,
            // and the next recovery (which treats an open journal as "not committed") moves the rest.
            var stuck = 0
            for name in moved.reversed() where Glibc.rename(trash + "/" + name, dir + "/" + name) != 0 {
                stuck += 1
                logger.error("delete all: cannot move \(name) back from \(trash): \(FileOps.errnoText())")
            }
            // The journal ends only once the files are back on the disk: an ended journal with the
            // files still in the trash would read as "committed" after a power cut.
            if stuck == 0 && (rmdir(trash) == 0 || errno == ENOENT) && (try? FileOps.sync(dir)) != nil {
                try? catalog.endJournal(id: journal)
                logger.error("delete all failed and was rolled back: \(error)")
            } else {
                logger.error("delete all failed; \(stuck) file(s) wait in \(trash) for the next recovery to put back: \(error)")
            }
            throw error as? EngineError ?? .unexpected("\(error)")
        }
    }

    /// Start-up half: settles a delete-all a crash interrupted.
    static func recover(catalog: Catalog, data: DataDirectory, report: inout RecoveryReport, logger: Logger) {
        let dir = data.recordings.path
        let open: [(id: String, kind: String)]
        do { open = try catalog.openJournal() }
        catch {
            report.problems.append("cannot read the journal: \(error)")
            return
        }
        var openIDs = Set<String>()
        for entry in open where entry.kind == kind {
            openIDs.insert(entry.id)
            let trash = dir + "/" + trashPrefix + entry.id
            // Not committed: put every file back. Everything is still there.
            var ok = true
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: trash)
            } catch {
                names = []
                if FileOps.exists(trash) {   // there, but unreadable: keep the journal, try next time
                    ok = false
                    report.problems.append("cannot list \(trash): \(error)")
                }
            }
            for name in names where Glibc.rename(trash + "/" + name, dir + "/" + name) != 0 {
                ok = false
                report.problems.append("cannot move \(trash)/\(name) back: \(FileOps.errnoText())")
            }
            // As above: the files are back on the disk before the journal says so.
            if ok, (try? FileOps.sync(dir)) == nil {
                ok = false
                report.problems.append("cannot fsync \(dir) after moving the files of \(trash) back")
            }
            if ok {
                rmdir(trash)
                try? catalog.endJournal(id: entry.id)
                report.deleteAllRolledBack = true
                logger.warning("recovery: an interrupted 'delete all' was rolled back (\(names.count) files put back)")
            }
        }
        // Committed (no journal row any more): finish emptying the trash.
        // Hidden entries only (readdir, not Foundation's listing of the whole library).
        let names = (try? data.listRecordings().hidden) ?? []
        for name in names where name.hasPrefix(trashPrefix) && !openIDs.contains(String(name.dropFirst(trashPrefix.count))) {
            let trash = dir + "/" + name
            let files = (try? FileManager.default.contentsOfDirectory(atPath: trash)) ?? []
            for f in files { try? FileOps.remove(trash + "/" + f) }
            rmdir(trash)
            report.deleteAllFinished = true
            logger.warning("recovery: an interrupted 'delete all' was finished (\(files.count) files deleted)")
        }
    }
}
