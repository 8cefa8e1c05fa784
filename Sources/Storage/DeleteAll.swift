// "Delete All Data" (seed Screen 7.3): every recording, files and rows, all or nothing — also
// across a crash.
import Catalog
import Foundation
import Logging
import MediaWorker
import RecdAPI

/// The protocol, with its commit point in one SQLite transaction:
/// 1. a journal row says "delete-all <id>" started;
/// 2. `Recordings/` is swapped whole with a new empty folder (`<data>/.trash-<id>`, made beside it
///    with its owner and mode) by one `renameat2(RENAME_EXCHANGE)`: afterwards `Recordings/` is the
///    empty folder and `.trash-<id>` holds every file. What is not a recording is moved back: recd's
///    own hidden entries (the quarantine) and anything visible that is not a regular file. The data directory and both folders are fsynced;
/// 3. commit: all rows and the journal row are deleted in one transaction;
/// 4. the trash folder is removed — after the reply, on `BackgroundPool`: from the commit on, the
///    library is empty and the files are out of `Recordings/` for good (a crash meanwhile: recovery
///    finishes it).
/// Where the swap cannot be done — `Recordings/` a symbolic link or another filesystem's mount
/// point, a filesystem without `RENAME_EXCHANGE` — step 2 renames every file into
/// `Recordings/.trash-<id>/` instead (as recd did before: one rename per file, 2.6× the cost of
/// deleting the rows and the files with the sqlite3 CLI at 10,000 recordings; the swap is one call).
/// A failure before 3 swaps back (or moves the files back) and ends the journal: nothing changed.
/// After a crash, `recover` finds either an open journal row (before 3: the trash's entries go
/// back into `Recordings/`, everything is still there) or a trash folder without one (after 3: it
/// is removed, everything is gone).
public enum DeleteAll {
    public static let kind = "delete-all"
    public static let trashPrefix = ".trash-"

    /// Runs steps 1–4. Blocking; the caller makes sure nothing records meanwhile.
    public static func run(catalog: Catalog, data: DataDirectory, logger: Logger) throws(StorageError) -> DeleteAllResponse {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        let journal = try catalogCall { try catalog.beginJournal(kind: kind) }
        if let done = try swappingTheFolder(journal: journal, catalog: catalog, data: data, logger: logger) {
            return done
        }
        return try fileByFile(journal: journal, catalog: catalog, data: data, logger: logger)
    }

    /// Where the new-style trash of a journal lives: beside `Recordings/`.
    public static func trash(of journal: String, in data: DataDirectory) -> String {
        data.root.path + "/" + trashPrefix + journal
    }

    /// Step 2 by swapping `Recordings/` whole. Nil (nothing changed) where it cannot be swapped.
    private static func swappingTheFolder(journal: String, catalog: Catalog, data: DataDirectory,
                                          logger: Logger) throws(StorageError) -> DeleteAllResponse? {
        let dir = data.recordings.path
        var folder = stat(), root = stat()
        guard lstat(dir, &folder) == 0, (folder.st_mode & S_IFMT) == S_IFDIR,
              stat(data.root.path, &root) == 0, root.st_dev == folder.st_dev else { return nil }
        let listing = try data.listRecordings()
        let trash = trash(of: journal, in: data)
        // The empty folder that becomes `Recordings/`: its owner, group and mode (a group that may
        // read the recordings, systemd's StateDirectory=) are the old one's.
        guard mkdir(trash, 0o700) == 0 else {
            throw .storage(file: trash, operation: "create", underlying: FileOps.errnoText())
        }
        guard chmod(trash, folder.st_mode & 0o7777) == 0,
              (folder.st_uid == geteuid() && folder.st_gid == getegid()) || chown(trash, folder.st_uid, folder.st_gid) == 0 else {
            logger.info("delete all: cannot give a new Recordings/ the old one's owner (\(FileOps.errnoText())); moving the files one by one")
            rmdir(trash)
            return nil
        }
        do {
            try FileOps.exchange(trash, dir)
        } catch {
            logger.info("delete all: \(error); moving the files one by one")
            rmdir(trash)
            return nil
        }
        // The workers' Landlock rules hold the old folder (now the trash): none may serve again.
        MediaWorkerPool.shared.sandboxFoldersReplaced()
        // From here `trash` holds everything and `Recordings/` is empty.
        var movedBack: [String] = []
        do {
            // Only the recordings go: recd's own hidden entries stay (the quarantine, for a person to
            // look at), and so does what is not a regular file (a folder or link someone put there),
            // as file by file; the trash folders of earlier deletions go with this one.
            for name in listing.hidden.filter({ !$0.hasPrefix(trashPrefix) }) + listing.other {
                try FileOps.rename(trash + "/" + name, dir + "/" + name)
                movedBack.append(name)
            }
            try FileOps.sync(data.root.path)   // both names of the swap
            try FileOps.sync(dir)
            try FileOps.sync(trash)
            let rows = try catalogCall { try catalog.commitDeleteAll(journalID: journal) }
            BackgroundPool.shared.submit { _ in
                let stuck = FileOps.removeTree(trash)
                if stuck == 0 {
                    logger.info("deleted all: the trash of \(listing.files.count) files is emptied")
                } else {
                    logger.error("deleted all: \(stuck) file(s) in \(trash) cannot be removed; the next start-up tries again")
                }
            }
            logger.info("deleted all: \(rows) recordings, \(listing.files.count) files")
            return DeleteAllResponse(deletedRecordings: rows, deletedFiles: listing.files.count)
        } catch {
            // Roll back: the hidden entries into the trash again, and the folders swapped back.
            // The journal ends only once that is on the disk; otherwise it stays open and the next
            // recovery moves everything back.
            var back = true
            for name in movedBack.reversed() where Glibc.rename(dir + "/" + name, trash + "/" + name) != 0 {
                back = false
                logger.error("delete all: cannot move \(name) back into \(trash): \(FileOps.errnoText())")
            }
            let swappedBack = back && (try? FileOps.exchange(trash, dir)) != nil
            if swappedBack { MediaWorkerPool.shared.sandboxFoldersReplaced() }
            if swappedBack, rmdir(trash) == 0, (try? FileOps.sync(data.root.path)) != nil {
                try? catalog.endJournal(id: journal)
                logger.error("delete all failed and was rolled back: \(error)")
            } else {
                logger.error("delete all failed; the files wait in \(trash) for the next recovery to put back: \(error)")
            }
            throw error
        }
    }

    /// Step 2 one file at a time, into `Recordings/.trash-<id>/`.
    private static func fileByFile(journal: String, catalog: Catalog, data: DataDirectory,
                                   logger: Logger) throws(StorageError) -> DeleteAllResponse {
        let dir = data.recordings.path
        let trash = dir + "/" + trashPrefix + journal
        var moved: [String] = []
        do {
            guard mkdir(trash, 0o700) == 0 else {
                throw StorageError.storage(file: trash, operation: "create", underlying: FileOps.errnoText())
            }
            for name in try data.listRecordings().files {
                guard Glibc.rename(dir + "/" + name, trash + "/" + name) == 0 else {
                    if errno == ENOENT { continue }   // removed meanwhile (a concurrent discard)
                    throw StorageError.storage(file: dir + "/" + name, operation: "move",
                                              underlying: "\(FileOps.errnoText()) (moving it into \(trash))")
                }
                moved.append(name)
            }
            try FileOps.sync(trash)
            try FileOps.sync(dir)
            let rows = try catalogCall { try catalog.commitDeleteAll(journalID: journal) }
            let files = moved
            BackgroundPool.shared.submit { _ in
                FileOps.removeTree(trash)
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
            throw error as? StorageError ?? .unexpected("\(error)")
        }
    }

    /// Start-up half: settles a delete-all a crash interrupted, of either kind of step 2.
    /// `hidden`: the hidden entries of `Recordings/` if just listed (else listed here).
    public static func recover(catalog: Catalog, data: DataDirectory, hidden: [String]? = nil, report: inout RecoveryReport, logger: Logger) {
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
            // Not committed: every entry of its trash goes back into `Recordings/` (after a swap,
            // the new `Recordings/` holds at most the hidden entries moved back: no name is in
            // both). Everything is still there.
            var ok = true
            var putBack = 0
            for trash in [Self.trash(of: entry.id, in: data), dir + "/" + trashPrefix + entry.id] {
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
                for name in names {
                    if FileOps.exists(dir + "/" + name) || Glibc.rename(trash + "/" + name, dir + "/" + name) != 0 {
                        ok = false
                        report.problems.append("cannot move \(trash)/\(name) back: \(FileOps.exists(dir + "/" + name) ? "Recordings/ has one of that name" : FileOps.errnoText())")
                    } else {
                        putBack += 1
                    }
                }
                if ok { rmdir(trash) }
            }
            // As above: the files are back on the disk before the journal says so.
            if ok, (try? FileOps.sync(dir)) == nil || (try? FileOps.sync(data.root.path)) == nil {
                ok = false
                report.problems.append("cannot fsync \(dir) after moving the files of delete-all \(entry.id) back")
            }
            if ok {
                try? catalog.endJournal(id: entry.id)
                report.deleteAllRolledBack = true
                logger.warning("recovery: an interrupted 'delete all' was rolled back (\(putBack) files put back)")
            }
        }
        // Committed (no journal row any more): finish emptying the trash, beside `Recordings/` or
        // (one by one, and before this version) inside it. Hidden entries only.
        let inside = ((try? hidden ?? data.listRecordings().hidden) ?? []).map { dir + "/" + $0 }
        let beside = ((try? FileManager.default.contentsOfDirectory(atPath: data.root.path)) ?? [])
            .filter { $0.hasPrefix(trashPrefix) }.map { data.root.path + "/" + $0 }
        for trash in inside + beside {
            let name = URL(fileURLWithPath: trash).lastPathComponent
            guard name.hasPrefix(trashPrefix), !openIDs.contains(String(name.dropFirst(trashPrefix.count))) else { continue }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: trash))?.count ?? 0
            let stuck = FileOps.removeTree(trash)
            report.deleteAllFinished = true
            if stuck == 0 {
                logger.warning("recovery: an interrupted 'delete all' was finished (\(files) entries deleted)")
            } else {
                report.problems.append("cannot remove \(stuck) file(s) of \(trash)")
            }
        }
    }
}
