// The error body every failing request returns: {"error": {"code": "...", "message": "..."}}.
import FoundationEssentials

/// Machine-readable error codes. The HTTP status for each is decided in one place (Server).
public enum APIErrorCode: String, Codable, Sendable, CaseIterable {
    case malformedRequest = "malformed_request"
    case forbidden = "forbidden"
    case notFound = "not_found"
    /// The path exists, but not with this method (405; `Allow` lists the methods it takes).
    case methodNotAllowed = "method_not_allowed"
    case ambiguousID = "ambiguous_id"
    case alreadyRecording = "already_recording"
    case notRecording = "not_recording"
    case invalidState = "invalid_state"
    case notPlaying = "not_playing"
    case fileMissing = "file_missing"
    /// The recording has no stream of that kind: the poster of an audio recording, the sound of a silent video.
    case noMedia = "no_media"
    case fieldTooLong = "field_too_long"
    case invalidValue = "invalid_value"
    case deviceUnavailable = "device_unavailable"
    case tooManyConnections = "too_many_connections"
    case payloadTooLarge = "payload_too_large"
    /// An import that is not media recd can store: not media at all, no audio stream, a video codec it does not keep.
    case unsupportedMedia = "unsupported_media"
    /// An import whose bytes are those of a recording already in the library.
    case duplicate = "duplicate"
    case storageFailure = "storage_failure"
    case insufficientStorage = "insufficient_storage"
    case internalError = "internal_error"
    /// A backup asked for while recd has no repository (`--backup`).
    case backupsOff = "backups_off"
    case alreadyListening = "already_listening"
    case notListening = "not_listening"
    /// The backup repository refused or could not be reached (the message says which).
    case backupFailed = "backup_failed"
}

public struct APIErrorBody: Codable, Sendable, Equatable, Error {
    /// What can be recorded instead when a device of a video recording is missing (the seed's
    /// Screen 5.2): no camera → `audio_only`; no microphone → `video_only` (a silent video).
    public enum Offer: String, Codable, Sendable {
        case audioOnly = "audio_only"
        case videoOnly = "video_only"
    }
    public struct Detail: Codable, Sendable, Equatable {
        public var code: APIErrorCode
        public var message: String
        /// For `ambiguous_id`: the ids that match the prefix.
        public var matches: [String]?
        /// For `device_unavailable` of a video recording: what can be recorded instead.
        public var offer: Offer?
    }
    public var error: Detail
    public init(code: APIErrorCode, message: String, matches: [String]? = nil, offer: Offer? = nil) {
        error = Detail(code: code, message: message, matches: matches, offer: offer)
    }
}
