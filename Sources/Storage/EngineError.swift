import Capture
import Catalog
import Foundation
import MediaWire
import Playback
import RecdAPI

/// Everything the engine refuses or fails at, with what a person needs to act on it.
/// Server maps each case to an HTTP status and an `APIErrorCode` in one place.
public enum EngineError: Error, CustomStringConvertible, Sendable {
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
        case .backup(_, let message):
            return message
        case .alreadyRecording(let id, let title):
            return "already recording: '\(title)' (\(id.uuidString)) is in progress; stop it first"
        case .notRecording:
            return "nothing is being recorded"
        case .notFound(let id):
            return "no recording with id '\(id)'"
        case .markerNotFound(let recording, let marker):
            return "recording \(recording) has no marker '\(marker)' (`recctl markers \(recording.prefix(8))` lists them)"
        case .ambiguousID(let p, let m):
            return "id prefix '\(p)' is ambiguous: it matches \(m.count) recordings; give more of the id"
        case .invalidID(let id, let detail):
            return "'\(id)' is not a usable recording id: \(detail)"
        case .invalidState(let id, let state, let action, let allowed):
            return "cannot \(action) recording \(id.uuidString): it is \(state == .ready ? "already saved" : state.spoken)"
                + " (only \(allowed.map(\.spoken).joined(separator: " or ")) recordings can be)"
        case .fieldTooLong(let field, let limit, let count):
            return "the \(field) \(field.hasSuffix("s") ? "are" : "is") \(count) characters long; the limit is \(limit) characters"
        case .invalidValue(let field, let detail):
            return "invalid \(field): \(detail)"
        case .device(let e, let hint):
            return e.description + (hint.map { ". " + $0 } ?? "")
        case .noMedia(let id, let detail):
            return "recording \(id.uuidString) \(detail)"
        case .media(let file, let e):
            return "media error on \(file): \(e)"
        case .conversion(let device, let e):
            return "converting the samples of capture device '\(device)' failed: \(e)"
        case .storage(let file, let op, let e):
            return "cannot \(op) \(file): \(e)"
        case .catalog(let e):
            return e.description
        case .unexpected(let e):
            return e
        case .insufficientStorage(let path, let free, let required):
            return "not enough free space in \(path): \(free / 1_000_000) MB free, at least"
                + " \(required / 1_000_000) MB required (--min-free-mb)"
        case .notPlaying:
            return "nothing is playing"
        case .fileMissing(let id, let file):
            return "the file of recording \(id.uuidString) (\(file)) is missing; `recctl check` shows what else is"
        case .unsupportedMedia(let name, let detail):
            return "cannot import '\(name)': \(detail)"
        case .duplicate(let name, let existing):
            return "'\(name)' is already in the library: it was imported as '\(existing.title)' (\(existing.id.uuidString)); nothing was added"
        case .tooLarge(let name, let limit):
            return "cannot import '\(name)': it is larger than \(limit / 1_000_000) MB (--max-import-mb)"
        case .playback(let e):
            return e.description
        case .dataDirectoryInUse(let path, let pid):
            return "another recd (pid \(pid ?? "?")) is using the data directory \(path); stop it first"
                + " or give this one another --data-dir"
        }
    }

    public static func from(_ error: CatalogError) -> EngineError {
        switch error {
        case .notFound(let id): return .notFound(id: id)
        case .ambiguous(let p, let m): return .ambiguousID(prefix: p, matches: m)
        case .prefixTooShort(let p, let n): return .invalidID(id: p, detail: "give at least \(n) characters of the id")
        case .markerNotFound(let r, let m): return .markerNotFound(recording: r, marker: m)
        case .tooManyMarkers: return .invalidValue(field: "markers", detail: error.description)
        default: return .catalog(error)
        }
    }

    /// What a catalog call threw, as an engine error: a catalog error as `from` maps it, an engine
    /// error as it is, anything else `unexpected`.
    public static func from(_ error: any Error) -> EngineError {
        switch error {
        case let e as CatalogError: from(e)
        case let e as EngineError: e
        default: .unexpected("\(error)")
        }
    }
}

/// Runs a catalog call, turning its errors into engine errors.
@discardableResult
public func catalogCall<T>(_ body: () throws -> T) throws(EngineError) -> T {
    do { return try body() } catch { throw .from(error) }
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
