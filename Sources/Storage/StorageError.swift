import Catalog
import Foundation
import RecdAPI

/// What Storage (the crash protocol, the catalog calls it makes) refuses or fails at. The engine
/// turns it into `EngineError` (`EngineError.init(_:)`), case for case: the cases mean what that
/// one's of the same name do, and the words are these.
public enum StorageError: Error, CustomStringConvertible, Sendable {
    case notFound(id: String)
    case markerNotFound(recording: String, marker: String)
    case ambiguousID(prefix: String, matches: [String])
    case invalidID(id: String, detail: String)
    case invalidState(id: UUID, state: RecordingState, action: String, allowed: [RecordingState])
    case fieldTooLong(field: String, limit: Int, count: Int)
    case invalidValue(field: String, detail: String)
    /// The recording has no stream of that kind (here: an enhanced copy whose file is gone).
    case noMedia(id: UUID, detail: String)
    case storage(file: String, operation: String, underlying: String)
    case catalog(CatalogError)
    case unexpected(String)
    case insufficientStorage(path: String, freeBytes: Int64, requiredBytes: Int64)
    case fileMissing(id: UUID, file: String)
    case duplicate(name: String, existing: Recording)
    /// Staging a backup failed (`message` says why).
    case backup(reason: BackupFailure, message: String)

    public var description: String {
        switch self {
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
        case .noMedia(let id, let detail):
            return "recording \(id.uuidString) \(detail)"
        case .storage(let file, let op, let e):
            return "cannot \(op) \(file): \(e)"
        case .catalog(let e):
            return e.description
        case .unexpected(let e):
            return e
        case .insufficientStorage(let path, let free, let required):
            return "not enough free space in \(path): \(free / 1_000_000) MB free, at least"
                + " \(required / 1_000_000) MB required (--min-free-mb)"
        case .fileMissing(let id, let file):
            return "the file of recording \(id.uuidString) (\(file)) is missing; `recctl check` shows what else is"
        case .duplicate(let name, let existing):
            return "'\(name)' is already in the library: it was imported as '\(existing.title)' (\(existing.id.uuidString)); nothing was added"
        case .backup(_, let message):
            return message
        }
    }

    public static func from(_ error: CatalogError) -> StorageError {
        switch error {
        case .notFound(let id): return .notFound(id: id)
        case .ambiguous(let p, let m): return .ambiguousID(prefix: p, matches: m)
        case .prefixTooShort(let p, let n): return .invalidID(id: p, detail: "give at least \(n) characters of the id")
        case .markerNotFound(let r, let m): return .markerNotFound(recording: r, marker: m)
        case .tooManyMarkers: return .invalidValue(field: "markers", detail: error.description)
        default: return .catalog(error)
        }
    }

    /// What a catalog call threw, as a storage error: a catalog error as `from` maps it, a storage
    /// error as it is, anything else `unexpected`.
    public static func from(_ error: any Error) -> StorageError {
        switch error {
        case let e as CatalogError: from(e)
        case let e as StorageError: e
        default: .unexpected("\(error)")
        }
    }
}

/// An error type that takes Storage's in, case for case (the engine's): what Storage throws when a
/// caller's own steps run inside its protocol (`FileReplacement.replace`).
public protocol StorageErrorConvertible: Error {
    init(_ error: StorageError)
}

extension StorageError: StorageErrorConvertible {
    public init(_ error: StorageError) { self = error }
}

/// Runs a catalog call, turning its errors into storage errors.
@discardableResult
func catalogCall<T>(_ body: () throws -> T) throws(StorageError) -> T {
    do { return try body() } catch { throw .from(error) }
}
