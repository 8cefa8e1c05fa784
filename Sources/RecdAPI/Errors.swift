// The error body every failing request returns: {"error": {"code": "...", "message": "..."}}.
import Foundation

/// Machine-readable error codes. The HTTP status for each is decided in one place (Server).
public enum APIErrorCode: String, Codable, Sendable, CaseIterable {
    case malformedRequest = "malformed_request"
    case forbidden = "forbidden"
    case notFound = "not_found"
    case ambiguousID = "ambiguous_id"
    case alreadyRecording = "already_recording"
    case notRecording = "not_recording"
    case invalidState = "invalid_state"
    case notPlaying = "not_playing"
    case fileMissing = "file_missing"
    case fieldTooLong = "field_too_long"
    case invalidValue = "invalid_value"
    case deviceUnavailable = "device_unavailable"
    case tooManyConnections = "too_many_connections"
    case payloadTooLarge = "payload_too_large"
    case storageFailure = "storage_failure"
    case insufficientStorage = "insufficient_storage"
    case internalError = "internal_error"
}

public struct APIErrorBody: Codable, Sendable, Equatable, Error {
    public struct Detail: Codable, Sendable, Equatable {
        public var code: APIErrorCode
        public var message: String
        /// For `ambiguous_id`: the ids that match the prefix.
        public var matches: [String]?
        public init(code: APIErrorCode, message: String, matches: [String]? = nil) {
            self.code = code; self.message = message; self.matches = matches
        }
    }
    public var error: Detail
    public init(code: APIErrorCode, message: String, matches: [String]? = nil) {
        error = Detail(code: code, message: message, matches: matches)
    }
}
