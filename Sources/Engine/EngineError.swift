import Capture
import Catalog
import Foundation
import MediaWire
import Playback
import RecdAPI
import Storage

/// Everything the engine refuses or fails at, with what a person needs to act on it.
/// Server maps each case to an HTTP status and an `APIErrorCode` in one place. The cases Storage
/// throws too are `StorageError`'s, by the same names (`init(_:)`), and say what it says.
public enum EngineError: StorageErrorConvertible, CustomStringConvertible, Sendable {
    case alreadyRecording(active: UUID, title: String)
    case notRecording
    case notFound(id: String)
    /// The recording is there, the marker is not.
    case markerNotFound(recording: String, marker: String)
    case ambiguousID(prefix: String, matches: [String])
    case invalidID(id: String, detail: String)
    case invalidState(id: UUID, state: RecordingState, action: String, allowed: [RecordingState])
    case fieldTooLong(field: String, limit: Int, count: Int)
    case invalidValue(field: String, detail: String)
    /// A capture device failed; `hint` says what can be recorded instead.
    case device(CaptureError, hint: String?)
    /// The recording has no stream of that kind (a poster of an audio recording, the waveform of a silent video).
    case noMedia(id: UUID, detail: String)
    /// FFmpeg (or recd's media code) failed on `file`: the error as Media threw it (an `FFmpegError`
    /// keeps the call and its code), not a string of it.
    case media(file: String, underlying: any Error)
    /// Converting what the microphone delivers into the recording's format failed.
    case conversion(device: String, underlying: any Error)
    case storage(file: String, operation: String, underlying: String)
    /// The catalog failed (SQLite, a corrupt row): only catalog errors.
    case catalog(CatalogError)
    /// A failure of no known kind (a bug): kept with its text, answered 500 `internal_error`.
    case unexpected(String)
    case dataDirectoryInUse(path: String, holderPID: String?)
    case insufficientStorage(path: String, freeBytes: Int64, requiredBytes: Int64)
    case notPlaying
    /// The recording's row is there, its file is not.
    case fileMissing(id: UUID, file: String)
    /// An import recd cannot store: `name` is the file's name as sent.
    case unsupportedMedia(name: String, detail: String)
    /// An import whose content is already in the library as `existing`.
    case duplicate(name: String, existing: Recording)
    /// An import over `--max-import-mb`.
    case tooLarge(name: String, limitBytes: Int64)
    case playback(PlaybackError)
    /// A backup request while no repository is set (`--backup`).
    case backupsOff
    /// restic failed (`reason` says why, `message` in restic's words too).
    case backup(reason: BackupFailure, message: String)
    /// `POST /v1/listen` while listening is armed.
    case alreadyListening(since: Date)
    /// `DELETE /v1/listen` while it is off.
    case notListening

    public var description: String {
        switch self {
        case .alreadyListening(let since):
            return "already listening (since \(DateText.format(since))): stop it first (recctl listen stop) to change its settings"
        case .notListening:
            return "not listening: start it with recctl listen start"
        case .backupsOff:
            return "backups are off: start recd with --backup REPOSITORY and --backup-password-file FILE (docs/usage.md, \"Backups\")"
        case .alreadyRecording(let id, let title):
            return "already recording: '\(title)' (\(id.uuidString)) is in progress; stop it first"
        case .notRecording:
            return "nothing is being recorded"
        case .device(let e, let hint):
            return e.description + (hint.map { ". " + $0 } ?? "")
        case .media(let file, let e):
            return "media error on \(file): \(e)"
        case .conversion(let device, let e):
            return "converting the samples of capture device '\(device)' failed: \(e)"
        case .notPlaying:
            return "nothing is playing"
        case .unsupportedMedia(let name, let detail):
            return "cannot import '\(name)': \(detail)"
        case .tooLarge(let name, let limit):
            return "cannot import '\(name)': it is larger than \(limit / 1_000_000) MB (--max-import-mb)"
        case .playback(let e):
            return e.description
        case .dataDirectoryInUse(let path, let pid):
            return "another recd (pid \(pid ?? "?")) is using the data directory \(path); stop it first"
                + " or give this one another --data-dir"
        // Storage's cases: its words.
        case .backup(let reason, let message): return StorageError.backup(reason: reason, message: message).description
        case .notFound(let id): return StorageError.notFound(id: id).description
        case .markerNotFound(let r, let m): return StorageError.markerNotFound(recording: r, marker: m).description
        case .ambiguousID(let p, let m): return StorageError.ambiguousID(prefix: p, matches: m).description
        case .invalidID(let id, let detail): return StorageError.invalidID(id: id, detail: detail).description
        case .invalidState(let id, let s, let action, let allowed): return StorageError.invalidState(id: id, state: s, action: action, allowed: allowed).description
        case .fieldTooLong(let f, let limit, let count): return StorageError.fieldTooLong(field: f, limit: limit, count: count).description
        case .invalidValue(let f, let detail): return StorageError.invalidValue(field: f, detail: detail).description
        case .noMedia(let id, let detail): return StorageError.noMedia(id: id, detail: detail).description
        case .storage(let file, let op, let e): return StorageError.storage(file: file, operation: op, underlying: e).description
        case .catalog(let e): return StorageError.catalog(e).description
        case .unexpected(let e): return StorageError.unexpected(e).description
        case .insufficientStorage(let p, let free, let required): return StorageError.insufficientStorage(path: p, freeBytes: free, requiredBytes: required).description
        case .fileMissing(let id, let file): return StorageError.fileMissing(id: id, file: file).description
        case .duplicate(let name, let existing): return StorageError.duplicate(name: name, existing: existing).description
        }
    }

    /// Storage's error as the engine's: the case of the same name.
    public init(_ error: StorageError) {
        switch error {
        case .notFound(let id): self = .notFound(id: id)
        case .markerNotFound(let r, let m): self = .markerNotFound(recording: r, marker: m)
        case .ambiguousID(let p, let m): self = .ambiguousID(prefix: p, matches: m)
        case .invalidID(let id, let detail): self = .invalidID(id: id, detail: detail)
        case .invalidState(let id, let s, let action, let allowed): self = .invalidState(id: id, state: s, action: action, allowed: allowed)
        case .fieldTooLong(let f, let limit, let count): self = .fieldTooLong(field: f, limit: limit, count: count)
        case .invalidValue(let f, let detail): self = .invalidValue(field: f, detail: detail)
        case .noMedia(let id, let detail): self = .noMedia(id: id, detail: detail)
        case .storage(let file, let op, let e): self = .storage(file: file, operation: op, underlying: e)
        case .catalog(let e): self = .catalog(e)
        case .unexpected(let e): self = .unexpected(e)
        case .insufficientStorage(let p, let free, let required): self = .insufficientStorage(path: p, freeBytes: free, requiredBytes: required)
        case .fileMissing(let id, let file): self = .fileMissing(id: id, file: file)
        case .duplicate(let name, let existing): self = .duplicate(name: name, existing: existing)
        case .backup(let reason, let message): self = .backup(reason: reason, message: message)
        }
    }

    /// What a catalog or Storage call threw, as an engine error: an engine error as it is, anything
    /// else as `StorageError.from` makes it (a catalog error mapped, any other `unexpected`).
    public static func from(_ error: any Error) -> EngineError {
        error as? EngineError ?? EngineError(StorageError.from(error))
    }
}

/// Runs a catalog call, turning its errors into engine errors.
@discardableResult
public func catalogCall<T>(_ body: () throws -> T) throws(EngineError) -> T {
    do { return try body() } catch { throw .from(error) }
}

/// A catalog write (or a change of `Recordings/` with its rows, or a long read) on `BlockingPool`,
/// its errors as the engine's (`catalogCall` for the short reads done in place).
public func blockingCatalogCall<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws(EngineError) -> T {
    do { return try await runBlocking(body) } catch { throw .from(error) }
}

/// A call into Storage, its error as the engine's: `try storageCall(FileOps.sync(path))`.
@discardableResult
func storageCall<T>(_ body: @autoclosure () throws(StorageError) -> T) throws(EngineError) -> T {
    do { return try body() } catch { throw EngineError(error) }
}

extension EngineError {
    /// What a media job writing `written` threw, as the engine's error: an engine error as it is, a
    /// full disk as a failed write of `written`; the rest as `otherwise` says, which only the caller
    /// knows (a media error on a recording, an upload recd cannot import).
    static func fromMediaJob(_ error: any Error, writing written: String, otherwise: (any Error) -> EngineError) -> EngineError {
        if let e = error as? EngineError { return e }
        if let e = error as? FFmpegError, e.isDiskFull { return .storage(file: written, operation: "write", underlying: e.description) }
        return otherwise(error)
    }
}

extension Recording {
    /// Refuses to `action` a recording whose file is not there to read: a missing one, or one still
    /// being recorded (a fragmented file still being written, and renamed at the end).
    public func requireFile(to action: String) throws(EngineError) {
        switch state {
        case .ready, .pending: return
        case .missing: throw .fileMissing(id: id, file: file)
        case .recording: throw .invalidState(id: id, state: state, action: action, allowed: [.ready, .pending])
        }
    }
}
