// One recording brought back from a backup's snapshot into the running library (issue 48).
import Backup
import Catalog
import Foundation
import Logging
import RecdAPI
import Storage

/// Restores recording `idOrPrefix` of a snapshot as it was there — title, notes, purpose, dates,
/// play count, waveform, poster, transcript, content hash — under its own id when the library has
/// none by that id, else as a new recording (a new id, the same content). The file comes in by the
/// library's replacement protocol (`FileReplacement`: a crash at any instant leaves it in whole or
/// not at all), under `data.mutations`. Blocking: restic runs twice (the snapshot's catalog, then the
/// one file), on the caller's thread.
struct BackupRestore {
    let repository: ResticRepository
    let catalog: Catalog
    let data: DataDirectory
    let logger: Logger

    func run(_ idOrPrefix: String, snapshot: String?) throws(EngineError) -> Recording {
        let work = data.root.appendingPathComponent(".backup/restore-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: work) }
        func restic<T>(_ body: () throws(ResticError) -> T) throws(EngineError) -> T {
            do { return try body() } catch { throw .backup(reason: error.reason, message: error.message) }
        }
        try restic { () throws(ResticError) in try repository.restore(snapshot: snapshot, into: work.path, including: ["/catalog.sqlite"]) }
        let copyPath = work.appendingPathComponent("catalog.sqlite").path
        guard FileManager.default.fileExists(atPath: copyPath) else {
            throw .backup(reason: .failed, message: "the snapshot \(snapshot ?? "latest") holds no recd catalog (catalog.sqlite)")
        }
        // The snapshot's catalog, opened (and brought to this recd's schema) as any catalog is.
        let old: Catalog
        do { old = try Catalog(path: copyPath) } catch { throw .from(error) }
        let row: Recording
        do { row = try old.resolve(idOrPrefix) } catch { throw .from(error) }
        guard row.state == .ready || row.state == .pending, let name = DataDirectory.recordingName(row.file) else {
            throw .invalidState(id: row.id, state: row.state, action: "restore", allowed: [.ready, .pending])
        }
        let (waveform, poster, transcript, contentHash) = try catalogCall {
            (try old.waveform(id: row.id), try old.poster(id: row.id), try old.transcript(id: row.id), try old.contentHash(id: row.id))
        }
        try restic { () throws(ResticError) in
            try repository.restore(snapshot: snapshot, into: work.path, including: ["/Recordings/\(name)"])
        }
        let restoredFile = work.appendingPathComponent("Recordings").appendingPathComponent(String(name)).path
        guard FileOps.exists(restoredFile) else {
            throw .backup(reason: .failed, message: "the snapshot \(snapshot ?? "latest") holds recording \(row.id)'s row but not its file \(row.file)")
        }

        var r = row
        if try catalogCall({ try catalog.recording(id: row.id) }) != nil {
            r.id = UUID()   // that id is taken here: a new recording, the same content
        }
        r.file = DataDirectory.relativePath(id: r.id, type: r.type)
        let restored = try storageCall(FileReplacement.insert(r, from: restoredFile, name: row.title, waveform: waveform, poster: poster,
                                                              contentHash: contentHash, catalog: catalog, data: data, logger: logger))
        if let transcript {
            do { try catalog.storeTranscript(id: restored.id, transcript, transcribedFileSize: restored.sizeBytes) }
            catch { logger.warning("recording \(restored.id) restored without its transcript: \(error)") }
        }
        return restored
    }
}
