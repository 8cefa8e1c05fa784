// The one place where errors become HTTP statuses and API error codes.
import Engine
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import RecdAPI
import Storage

/// An error raised by the server itself (bad query string, bad body).
struct RequestError: Error {
    var status: HTTPResponse.Status
    var code: APIErrorCode
    var message: String
}

package enum ErrorMapping {
    static let tooLarge = APIErrorBody(code: .payloadTooLarge,
                                       message: "request body is larger than \(RecdRoutes.maxBodyBytes) bytes")

    package static func map(_ error: any Error) -> (HTTPResponse.Status, APIErrorBody) {
        switch error {
        case let e as RequestError:
            return (e.status, APIErrorBody(code: e.code, message: e.message))
        case let e as EngineError:
            return map(e)
        case let e as StorageError:
            return map(EngineError(e))
        case is NIOTooManyBytesError:
            return (.contentTooLarge, tooLarge)
        case let e as HTTPParserError:
            // A body that breaks HTTP's framing (a chunk size that is no hexadecimal number, …): the
            // client's fault, and the connection cannot go on (JSONErrorMiddleware closes it).
            return (.badRequest, APIErrorBody(code: .malformedRequest, message: "malformed request body: \(e)"))
        case let e as DecodingError:
            return (.badRequest, APIErrorBody(code: .malformedRequest, message: "malformed JSON body: \(describe(e))"))
        case let e as HTTPError:
            switch e.status {
            case .contentTooLarge:
                return (e.status, tooLarge)
            case .notFound:
                return (e.status, APIErrorBody(code: .notFound, message: e.body ?? "no such endpoint"))
            case .methodNotAllowed:
                return (e.status, APIErrorBody(code: .malformedRequest, message: "method not allowed on this endpoint"))
            default:
                let code: APIErrorCode = e.status.code < 500 ? .malformedRequest : .internalError
                return (e.status, APIErrorBody(code: code, message: e.body ?? e.status.reasonPhrase))
            }
        default:
            return (.internalServerError, APIErrorBody(code: .internalError, message: "\(error)"))
        }
    }

    package static func map(_ e: EngineError) -> (HTTPResponse.Status, APIErrorBody) {
        let message = e.description
        switch e {
        case .alreadyRecording: return (.conflict, .init(code: .alreadyRecording, message: message))
        case .notRecording: return (.conflict, .init(code: .notRecording, message: message))
        case .notFound, .markerNotFound: return (.notFound, .init(code: .notFound, message: message))
        case .ambiguousID(_, let matches): return (.conflict, .init(code: .ambiguousID, message: message, matches: matches))
        case .invalidID: return (.badRequest, .init(code: .malformedRequest, message: message))
        case .invalidState: return (.conflict, .init(code: .invalidState, message: message))
        case .fieldTooLong: return (.unprocessableContent, .init(code: .fieldTooLong, message: message))
        case .invalidValue: return (.unprocessableContent, .init(code: .invalidValue, message: message))
        case .device(let capture, let hint):
            // What a GUI can offer instead (the seed's Screen 5.2 buttons).
            let offer: APIErrorBody.Offer? = hint == nil ? nil : capture.isVideo ? .audioOnly : .videoOnly
            return (.serviceUnavailable, .init(code: .deviceUnavailable, message: message, offer: offer))
        case .noMedia: return (.conflict, .init(code: .noMedia, message: message))
        case .media, .conversion: return (.internalServerError, .init(code: .internalError, message: message))
        case .storage: return (.internalServerError, .init(code: .storageFailure, message: message))
        case .insufficientStorage: return (HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage"), .init(code: .insufficientStorage, message: message))
        case .notPlaying: return (.conflict, .init(code: .notPlaying, message: message))
        case .fileMissing: return (.gone, .init(code: .fileMissing, message: message))
        case .unsupportedMedia: return (.unsupportedMediaType, .init(code: .unsupportedMedia, message: message))
        case .duplicate: return (.conflict, .init(code: .duplicate, message: message))
        case .tooLarge: return (.contentTooLarge, .init(code: .payloadTooLarge, message: message))
        case .backupsOff: return (.conflict, .init(code: .backupsOff, message: message))
        case .alreadyListening: return (.conflict, .init(code: .alreadyListening, message: message))
        case .notListening: return (.conflict, .init(code: .notListening, message: message))
        case .backup: return (.badGateway, .init(code: .backupFailed, message: message))
        case .playback(let p):
            switch p {
            case .fileMissing: return (.gone, .init(code: .fileMissing, message: message))
            case .noSound: return (.conflict, .init(code: .noMedia, message: message))
            case .media: return (.internalServerError, .init(code: .internalError, message: message))
            case .unavailable, .unsupported, .failed, .stalled:
                return (.serviceUnavailable, .init(code: .deviceUnavailable, message: message))
            }
        case .catalog, .unexpected, .dataDirectoryInUse: return (.internalServerError, .init(code: .internalError, message: message))
        }
    }

    static func describe(_ e: DecodingError) -> String {
        switch e {
        case .dataCorrupted(let c):
            if let underlying = c.underlyingError { return "\(c.debugDescription) (\(underlying.localizedDescription))" }
            return c.debugDescription
        case .keyNotFound(let k, _): return "missing field '\(k.stringValue)'"
        case .typeMismatch(let t, let c): return "field '\(path(c))' should be \(t)"
        case .valueNotFound(let t, let c): return "field '\(path(c))' should be \(t), not null"
        @unknown default: return "\(e)"
        }
    }

    static func path(_ c: DecodingError.Context) -> String { c.codingPath.map(\.stringValue).joined(separator: ".") }
}

/// Turns every error thrown below it into the API's JSON error body, and logs server errors.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let (status, body) = ErrorMapping.map(error)
            context.logger.log(level: status.code >= 500 ? .error : .debug,
                               "\(request.method) \(request.uri.path) → \(status.code): \(body.error.message)")
            var response = JSONResponse.make(body, status: status)
            // The parser stopped at the broken framing: nothing after it can be read as a request.
            if error is HTTPParserError { response.headers[.connection] = "close" }
            return response
        }
    }
}

enum JSONResponse {
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? APIJSON.encoder().encode(value)) ?? Data("{}".utf8)
        return raw(data + Data("\n".utf8), contentType: "application/json", status: status)
    }

    /// A recording, the most frequent reply, by the hand-written writer (the same bytes as the
    /// encoder's; see `RecordingJSON`). Lists come as bytes already (`json`).
    static func make(_ recording: Recording, status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(640)
        buffer.writeBytes(RecordingJSON.encode(recording))
        buffer.writeInteger(UInt8(ascii: "\n"))
        return json(buffer, status: status)
    }

    /// JSON already written out, its newline included (listings: `RecordingJSON`): one copy, into the body.
    static func json(_ bytes: [UInt8]) -> Response {
        json(ByteBuffer(bytes: bytes), status: .ok)
    }

    private static func json(_ body: ByteBuffer, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: body))
    }

    static func raw(_ data: Data, contentType: String, status: HTTPResponse.Status = .ok,
                    extraHeaders: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: contentType]
        headers.append(contentsOf: extraHeaders)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Adds `Server-Timing: app;dur=<ms>` to every response: the time recd spent on the request
/// (routing, engine, catalog, encoding), without the socket round trip. Benchmarks read it.
struct ServerTimingMiddleware<Context: RequestContext>: RouterMiddleware {
    private static var serverTiming: HTTPField.Name { HTTPField.Name("Server-Timing")! }
    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var response = try await next(request, context)
        let d = ContinuousClock.now - start
        // Whole microseconds, written as milliseconds with three decimals (Foundation's
        // String(format:) was a noticeable part of the shortest requests).
        let us = d.components.seconds * 1_000_000 + (d.components.attoseconds + 500_000_000_000) / 1_000_000_000_000
        let fraction = String(us % 1000)
        response.headers[Self.serverTiming] = "app;dur=\(us / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
        return response
    }
}
