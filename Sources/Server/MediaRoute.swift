// GET/HEAD /v1/recordings/{id}/media: the recording's file, with HTTP Range support (RFC 9110 §14),
// so a GUI, ffplay or mpv can read it through the socket, or a browser save it under its title
// (`download=true`). Not a play: nothing is counted.
import Engine
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import RecdAPI
import Storage

/// One byte range of a `Range: bytes=...` header, resolved against the file's size.
package enum ByteRangeRequest: Equatable {
    /// No usable Range header: send the whole file (200). Syntax recd does not serve (several
    /// ranges, another unit, garbage) also lands here, as RFC 9110 allows.
    case whole
    /// Send these bytes (206).
    case part(ClosedRange<Int>)
    /// The range starts past the end (416).
    case unsatisfiable

    package static func parse(_ header: String?, size: Int) -> ByteRangeRequest {
        guard let header = header?.trimmingCharacters(in: .whitespaces), header.lowercased().hasPrefix("bytes=") else {
            return .whole
        }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        let digits = { (s: String) in !s.isEmpty && s.allSatisfy(\.isASCII) && s.allSatisfy(\.isNumber) }
        if first.isEmpty {
            // bytes=-N: the last N bytes.
            guard digits(last), let n = Int(last) else { return .whole }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - n)...(size - 1))
        }
        guard digits(first), let start = Int(first) else { return .whole }
        var end = size - 1
        if !last.isEmpty {
            guard digits(last), let e = Int(last), e >= start else { return .whole }
            end = min(e, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .part(start...end)
    }
}

/// `download=true|false` of `GET /v1/recordings/{id}/media`.
enum DownloadChoice: String, CaseIterable { case `true`, `false` }

package enum MediaRoute {
    /// Content types by file extension (recd writes m4a and mov; adopted files may be anything libavformat reads).
    private static let contentTypes = [
        "m4a": "audio/mp4", "mov": "video/quicktime", "mp4": "video/mp4", "wav": "audio/wav", "mp3": "audio/mpeg",
        "flac": "audio/flac", "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/ogg", "aac": "audio/aac",
        "caf": "audio/x-caf", "webm": "video/webm", "mkv": "video/x-matroska", "mka": "video/x-matroska",
    ]

    package static func contentType(for file: String) -> String {
        contentTypes[(file as NSString).pathExtension.lowercased()] ?? "application/octet-stream"
    }

    static func add(to v1: APIGroup, engine: Engine) {
        v1.get("recordings/:id/media") { request, context in
            try await respond(request, context, engine: engine, withBody: true)
        }
        v1.head("recordings/:id/media") { request, context in
            try await respond(request, context, engine: engine, withBody: false)
        }
        // The enhanced copy (`POST /v1/recordings/{id}/enhanced` makes it): the same, for A/B.
        v1.get("recordings/:id/enhanced/media") { request, context in
            try await respond(request, context, engine: engine, withBody: true, enhanced: true)
        }
        v1.head("recordings/:id/enhanced/media") { request, context in
            try await respond(request, context, engine: engine, withBody: false, enhanced: true)
        }
    }

    static func respond(_ request: Request, _ context: RecdRequestContext, engine: Engine, withBody: Bool, enhanced: Bool = false) async throws -> Response {
        let r = try engine.library.resolve(try context.recordingID())
        try r.requireFile(to: "read the media of")
        if enhanced { _ = try engine.library.enhancedCopy(of: r) }
        // Opened once, beneath Recordings/ (or Enhanced/) and never through a link; served from that descriptor.
        let data = engine.config.dataDirectory
        let file = try await NIOThreadPool.singleton.runIfActive { () throws(StorageError) in
            try enhanced ? data.openEnhancedFile(of: r.id) : data.openFile(of: r)
        }
        let size = file.size
        let name = enhanced ? "enhanced.m4a" : r.file
        var headers: HTTPFields = [.contentType: contentType(for: name), .acceptRanges: "bytes"]
        // ?download=true: saved by a browser under its title, not played in the page.
        if let download = request.uri.queryParameters["download"],
           try RecdRoutes.enumValue(DownloadChoice.self, String(download), field: "download") == .true {
            headers[.contentDisposition] = ContentDisposition.attachment(
                name: r.title + (enhanced ? " (enhanced)" : "") + "." + (name as NSString).pathExtension)
        }
        // A recording's file changes (a trim in place, the chapter copy after a marker): size and mtime
        // identify this one, and a browser asks again each time rather than play a cached copy of the
        // old file (Chromium did, after a trim in place).
        headers[.eTag] = "\"\(enhanced ? "e" : "")\(r.id.uuidString.prefix(8))-\(size)-\(file.modified)\""
        headers[.cacheControl] = "no-cache"
        let range = ByteRangeRequest.parse(request.headers[.range], size: size)
        switch range {
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        case .whole:
            headers[.contentLength] = String(size)
            guard withBody, size > 0 else { return Response(status: .ok, headers: headers) }
            return Response(status: .ok, headers: headers, body: body(file, 0...(size - 1)))
        case .part(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)"
            headers[.contentLength] = String(bytes.count)
            guard withBody else { return Response(status: .partialContent, headers: headers) }
            return Response(status: .partialContent, headers: headers, body: body(file, bytes))
        }
    }

    /// `bytes` of the opened file, read in 128 KiB chunks on NIO's blocking pool as the client takes them.
    static func body(_ file: OpenedFile, _ bytes: ClosedRange<Int>) -> ResponseBody {
        ResponseBody(contentLength: bytes.count) { writer in
            var offset = bytes.lowerBound
            while offset <= bytes.upperBound {
                let count = min(128 * 1024, bytes.upperBound + 1 - offset)
                let at = offset
                let chunk = try await NIOThreadPool.singleton.runIfActive { () throws(StorageError) in try file.read(at: at, count: count) }
                // Shorter than it was when opened: a response cannot be made shorter than its length.
                guard !chunk.isEmpty else { throw EngineError.storage(file: file.path, operation: "read", underlying: "the file ended early") }
                try await writer.write(ByteBuffer(bytes: chunk))
                offset += chunk.count
            }
            try await writer.finish(nil)
        }
    }
}

/// GET /v1/recordings/{id}/waveform: the stored waveform in the BBC audiowaveform v2 formats.
enum WaveformRoute {
    /// Bounds the document declares: beyond them the zoom's arithmetic would overflow (a trap, not
    /// an error), and no screen is a million pixels wide.
    static let maxPixels = 1_000_000
    static let maxSamplesPerPixel = Int(Int32.max)

    static func add(to v1: APIGroup, engine: Engine) {
        v1.get("recordings/:id/waveform") { request, context in
            let q = request.uri.queryParameters
            // Both are read (and refused when malformed) even when samples_per_pixel wins: a bad
            // value is never passed over in silence (the fuzzer's `pixels=` beside samples_per_pixel).
            let pixels = try q["pixels"].map { px in
                let n = try RecdRoutes.intValue(String(px), field: "pixels", range: Int.min...WaveformRoute.maxPixels)
                guard n > 0 else { throw EngineError.invalidValue(field: "pixels", detail: "must be at least 1") }
                return n
            }
            let zoom = try q["samples_per_pixel"].map {
                try RecdRoutes.intValue(String($0), field: "samples_per_pixel", range: Int.min...WaveformRoute.maxSamplesPerPixel)
            }
            let bitsText = q["bits"].map(String.init) ?? "8"
            guard bitsText == "8" || bitsText == "16" else {
                throw EngineError.invalidValue(field: "bits", detail: "\(bitsText) is not 8 or 16")
            }
            let waveform = try await engine.library.waveform(try context.recordingID(),
                                                             .init(samplesPerPixel: zoom, pixels: pixels, eightBit: bitsText == "8"))
            switch q["format"].map(String.init) ?? "json" {
            case "json": return JSONResponse.raw(waveform.json(), contentType: "application/json")
            case "dat": return JSONResponse.raw(waveform.dat(), contentType: "application/octet-stream")
            case let other:
                throw RequestError(status: .badRequest, code: .malformedRequest, message: "format=\(other) is not one of json, dat")
            }
        }
    }
}
