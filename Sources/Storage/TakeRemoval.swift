// Removing a recording's file and row so that a crash at any point is finished or undone.
import Catalog
import Foundation
import Logging
import RecdAPI

/// The journaled removal of one recording, shared by `discard` and `record stop --discard`:
/// 1. rename the file aside (`.<name>.discarding`, same directory, atomic) and fsync the
///    directory — if either fails, the file is put back and nothing has changed;
/// 2. delete the row, in one transaction with the check that it is still in the expected state;
/// 3. unlink the aside file.
/// After a crash, `settleInterruptedRemoval` (start-up recovery) puts an aside file back if its row
/// still exists (the removal is undone) and unlinks it otherwise (the removal is finished).
public enum TakeRemoval {
    /// Removes `r`, its row allowed to be in any of `states` at the moment it is deleted.
    public static func remove(_ r: Recording, expecting states: Set<RecordingState>, action: String,
                              catalog: Catalog, data: DataDirectory) throws(StorageError) {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        let path = try data.recordingPath(r.file)
        let aside = data.discardingPath(for: path)
        let hadFile = FileOps.exists(path)
        if hadFile {
            try FileOps.rename(path, aside)
            // The rename must be on the disk before the row's deletion is: after a power cut, a row
            // gone with its file still under the old name would come back as an adopted orphan.
            do { try FileOps.sync((path as NSString).deletingLastPathComponent) } catch {
                try? FileOps.rename(aside, path)
                throw error
            }
        }
        do {
            try catalog.delete(id: r.id, ifStateIn: Set(states.map(\.rawValue)))
        } catch {
            // Undo only if the row is still there; if another request removed it meanwhile, finish.
            if hadFile {
                if (try? catalog.hasRow(file: r.file)) ?? true { try? FileOps.rename(aside, path) }
                else { try? FileOps.remove(aside) }
            }
            if case CatalogError.unexpectedState(_, let s) = error, let actual = RecordingState(rawValue: s) {
                throw .invalidState(id: r.id, state: actual, action: action,
                                    allowed: RecordingState.allCases.filter { states.contains($0) })
            }
            throw .from(error)
        }
        if hadFile { try? FileOps.remove(aside) }
    }

    public enum Settlement { case undone, finished }

    /// Settles the aside file `name` found in `Recordings/` at start-up. Leaves it alone (and says
    /// why) when the catalog cannot be read: never delete a file on a guess.
    public static func settleInterruptedRemoval(name: String, catalog: Catalog, data: DataDirectory) throws -> Settlement? {
        guard let original = DataDirectory.original(ofHidden: name, suffix: DataDirectory.discardingSuffix) else { return nil }
        let dir = data.recordings.path
        let relative = "Recordings/" + original
        if try catalog.hasRow(file: relative) {
            try FileOps.rename(dir + "/" + name, dir + "/" + original)
            return .undone
        }
        try FileOps.remove(dir + "/" + name)
        return .finished
    }
}
