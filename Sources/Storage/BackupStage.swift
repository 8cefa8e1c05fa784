// What a backup's snapshot holds, gathered at one instant (issue 48).
import Catalog
import Foundation
import RecdAPI

/// The folder restic backs up: `<data>/.backup/stage/`, made anew for each run, holding
/// `catalog.sqlite` (a copy of the catalog: titles, notes, purposes, dates, play counts, loudness,
/// waveforms, posters, transcripts, content hashes) and `Recordings/` with a hard link to each
/// complete recording's file — the same layout as a data directory, so a restored snapshot is one
/// that recd starts on. The copy and the links are made under `data.mutations`, the lock every
/// change that touches both files and catalog takes (a trim, a delete, an import, a discard, a
/// repair), so no such change is half in a snapshot; a take being recorded is left out (its row
/// dropped from the copy). Links cost no space and no copy; a file replaced or deleted while restic
/// reads keeps its old inode for the stage, so the snapshot holds each recording whole or not at all.
public struct BackupStage: Sendable {
    public let data: DataDirectory
    public let catalog: Catalog

    public init(data: DataDirectory, catalog: Catalog) { self.data = data; self.catalog = catalog }

    public static func folder(of data: DataDirectory) -> URL { data.root.appendingPathComponent(".backup/stage", isDirectory: true) }
    public var folder: URL { Self.folder(of: data) }

    /// What was gathered.
    public struct Contents: Sendable {
        public var recordings: Int
        /// The recordings' bytes and the catalog copy's.
        public var bytes: Int64
    }

    /// Makes the stage (removing one left by an earlier run). Blocking.
    public func make() throws(StorageError) -> Contents {
        remove()
        let recordings = folder.appendingPathComponent("Recordings", isDirectory: true)
        let copy = folder.appendingPathComponent("catalog.sqlite").path
        do {
            try FileManager.default.createDirectory(at: recordings, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StorageError.backup(reason: .staging, message: "could not make the backup's folder \(recordings.path): \(error.localizedDescription)")
        }
        var contents = Contents(recordings: 0, bytes: 0)
        var failure: StorageError?
        data.mutations.lock()
        do {
            try catalog.backupCopy(to: copy)
            for file in try Catalog.prepareBackupCopy(at: copy) {
                guard let name = DataDirectory.recordingName(file) else { continue }
                let source = data.recordings.appendingPathComponent(String(name)).path
                var st = stat()
                // Only regular files of Recordings/ (lstat: a link is never followed), hard-linked
                // without following (linkat without AT_SYMLINK_FOLLOW).
                guard lstat(source, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
                guard linkat(AT_FDCWD, source, AT_FDCWD, recordings.appendingPathComponent(String(name)).path, 0) == 0 else {
                    throw StorageError.backup(reason: .staging, message: "could not link \(source) into the backup's folder: \(String(cString: strerror(errno)))")
                }
                contents.recordings += 1
                contents.bytes += Int64(st.st_size)
            }
        } catch let e as StorageError {
            failure = e
        } catch {
            failure = .backup(reason: .staging, message: "could not copy the catalog for the backup: \(error)")
        }
        data.mutations.unlock()
        if let failure {
            remove()
            throw failure
        }
        contents.bytes += FileOps.size(copy) ?? 0
        return contents
    }

    /// Removes the stage (its links only: the recordings stay). Blocking.
    public func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}
