// GET /v1/recordings/{id}/transcript (JSON, WebVTT or text) and GET /v1/search (issue 38).
import Engine
import Foundation
import Hummingbird
import RecdAPI
import Storage

enum TranscriptRoutes {
    static func add(to v1: APIGroup, engine: Engine) {
        v1.get("recordings/:id/transcript") { request, context in
            let format = request.uri.queryParameters["format"].map(String.init) ?? "json"
            guard ["json", "vtt", "txt"].contains(format) else {
                throw RequestError(status: .badRequest, code: .malformedRequest, message: "format=\(format) is not one of json, vtt, txt")
            }
            let transcript = try await engine.transcript(try context.recordingID())
            switch format {
            case "vtt":
                let markers = try await engine.markers(transcript.recordingID.uuidString).markers
                return JSONResponse.raw(Data(transcript.webVTT(markers: markers).utf8), contentType: "text/vtt; charset=utf-8")
            case "txt": return JSONResponse.raw(Data((transcript.text + "\n").utf8), contentType: "text/plain; charset=utf-8")
            default: return JSONResponse.make(transcript)
            }
        }
        v1.get("search") { request, _ in
            let q = request.uri.queryParameters
            // A "+" is a space in a query, as HTML forms send it (Hummingbird has decoded %2B to "+" by
            // here too, but a plus sign is no letter or digit: no search needs one).
            guard let text = q["q"].map({ String($0).replacingOccurrences(of: "+", with: " ") }) else {
                throw RequestError(status: .badRequest, code: .malformedRequest, message: "q= is missing: the words to search for")
            }
            let limit = try q["limit"].map { try RecdRoutes.intValue(String($0), field: "limit") } ?? 20
            return JSONResponse.make(try await engine.search(text, limit: limit))
        }
    }
}
