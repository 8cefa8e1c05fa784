// Writing a recording's file anew (a trim) so that a crash at any instant leaves the old recording
// or the new one, whole.
import Catalog
import Foundation
import Logging
import RecdAPI

/// The protocol, in order:
/// 1. the new file is written under a hidden name beside the row's file
///    (`.audio_<UUID>.m4a.replacing`) and fsynced — a crash now leaves the old recording, and
///    recovery removes the temporary file (no journal entry names it);
/// 2. one catalog transaction writes the row (its new duration and size, or the new row), its
///    waveform and poster, and a journal entry naming the temporary file (`Catalog.commitReplacement`):
///    the commit point;
/// 3. the temporary file is renamed over the row's file (atomic) and the directory fsynced — a
///    crash between 2 and 3 leaves a committed row with its new file still under the temporary
///    name, and recovery finishes the rename;
/// 4. the journal entry is closed (recovery closes one whose temporary file is gone).
/// `replace` runs all four; its callers say only how the new file is made and what the commit writes.
public enum FileReplacement {
    /// Replaces (or first writes) `target`, a file of `Recordings/`: `write` makes the new file at the
    /// temporary path it is given (written there, or renamed there from `.uploads/`), which is then
    /// fsynced with its directory; `commit` writes the catalog's transaction, naming that temporary
    /// file (its data-directory relative name) in the journal (`Catalog.commitReplacement`); then
    /// the rename and the journal's close. Anything thrown before the commit removes the temporary
    /// file and changes nothing. Called under `data.mutations`, blocking.
    /// `write` and `commit` throw the caller's errors (`E`); replace's own become `E` too.
    public static func replace<T, E: StorageErrorConvertible>(target: String, catalog: Catalog, data: DataDirectory, logger: Logger,
                                                              write: (_ temporary: String) throws(E) -> Void,
                                                              commit: (_ journaled: String) throws(E) -> T) throws(E) -> T {
        let temporary = data.replacingPath(for: target)
        let committed: T
        do throws(E) {
            try write(temporary)
            do throws(StorageError) {
                try FileOps.sync(temporary)
                // Its name too, before the commit names it: a committed journal entry whose file's entry
                // did not reach the disk would be closed as "already renamed" after a power cut.
                try FileOps.sync(URL(fileURLWithPath: temporary).deletingLastPathComponent().path)
            } catch { throw E(error) }
            committed = try commit(data.relative(temporary))
        } catch {
            try? FileOps.remove(temporary)
            throw error
        }
        do throws(StorageError) {
            try finish(temporary: temporary, target: target, catalog: catalog, data: data, logger: logger)
        } catch { throw E(error) }
        return committed
    }

    /// A new recording `r` whose file `made` (on the data directory's file system) becomes `r.file`:
    /// the row, its waveform, poster and content hash committed with the file by `replace`, under
    /// `data.mutations`. Content already in the library (`contentHash`) is `duplicate`, named `name`
    /// (an import's, a restored recording's). Blocking.
    public static func insert(_ r: Recording, from made: String, name: String, waveform: Data?, poster: Data?, contentHash: String?,
                              catalog: Catalog, data: DataDirectory, logger: Logger) throws(StorageError) -> Recording {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        return try replace(target: data.absolute(r.file), catalog: catalog, data: data, logger: logger) { temporary throws(StorageError) in
            try FileOps.rename(made, temporary)
        } commit: { journaled throws(StorageError) in
            do {
                return try catalog.commitReplacement(r, insert: true, states: [], waveform: waveform, poster: poster,
                                                     temporary: journaled, contentHash: contentHash)
            } catch {
                if case CatalogError.duplicate(let existingID) = error, let uuid = UUID(uuidString: existingID),
                   let existing = try? catalog.recording(id: uuid) {
                    throw .duplicate(name: name, existing: existing)
                }
                throw .from(error)
            }
        }
    }

    /// Steps 3 and 4, after the commit.
    static func finish(temporary: String, target: String, catalog: Catalog, data: DataDirectory, logger: Logger) throws(StorageError) {
        try FileOps.rename(temporary, target)
        try FileOps.sync(URL(fileURLWithPath: target).deletingLastPathComponent().path)
        do {
            try catalog.endJournal(id: data.relative(temporary))
        } catch {
            // The replacement is done; the entry only asks recovery to look at a file that is gone.
            logger.warning("\(target) replaced, but its journal entry stays until the next recovery: \(error)")
        }
    }

    public enum Settlement { case finished, removed }

    /// Settles a hidden `.replacing` file found in `Recordings/` at start-up: renamed over its
    /// recording's file when its replacement was committed, else removed (it was never part of the
    /// library). Nil for other names.
    public static func settle(name: String, catalog: Catalog, data: DataDirectory) throws -> Settlement? {
        guard let original = DataDirectory.original(ofHidden: name, suffix: DataDirectory.replacingSuffix) else { return nil }
        let dir = data.recordings.path
        let temporary = "Recordings/" + name
        let committed = try catalog.openJournal().contains { $0.kind == Catalog.replacementKind && $0.id == temporary }
        if committed {
            try FileOps.rename(dir + "/" + name, dir + "/" + original)
            try FileOps.sync(dir)
            try catalog.endJournal(id: temporary)
            return .finished
        }
        try FileOps.remove(dir + "/" + name)
        return .removed
    }

    /// Closes journal entries whose temporary file is gone (renamed before a crash prevented the
    /// close). Returns how many.
    public static func closeSettledEntries(catalog: Catalog, data: DataDirectory) throws -> Int {
        var closed = 0
        for entry in try catalog.openJournal() where entry.kind == Catalog.replacementKind {
            if !FileOps.exists(data.absolute(entry.id)) {
                try catalog.endJournal(id: entry.id)
                closed += 1
            }
        }
        return closed
    }
}
