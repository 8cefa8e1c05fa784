// A recording's markers (issue 47): list, add (now or at a time), change, delete; and its enhanced copy.
import Engine
import Foundation
import Hummingbird
import RecdAPI

enum MarkerRoutes {
    static func add(to v1: APIGroup, engine: Engine) {
        v1.get("recordings/:id/markers") { _, context in
            JSONResponse.make(try await engine.markers(try context.recordingID()))
        }
        v1.post("recordings/:id/markers") { request, context in
            let id = try context.recordingID()
            let body = try await RecdRoutes.decode(MarkerRequest.self, request)
            return JSONResponse.make(try await engine.addMarker(id, body), status: .created)
        }
        v1.patch("recordings/:id/markers/:marker") { request, context in
            let id = try context.recordingID()
            let body = try await RecdRoutes.decode(MarkerPatch.self, request)
            return JSONResponse.make(try await engine.editMarker(id, marker: try context.parameters.require("marker"), body))
        }
        // The markers left: what a list on the screen redraws from.
        v1.delete("recordings/:id/markers/:marker") { _, context in
            let id = try context.recordingID()
            try await engine.deleteMarker(id, marker: try context.parameters.require("marker"))
            return JSONResponse.make(try await engine.markers(id))
        }
    }
}

/// A recording's enhanced copy (issue 47): made (or made again), read, removed; its sound is
/// `GET /v1/recordings/{id}/enhanced/media` (`MediaRoute`).
enum EnhanceRoutes {
    static func add(to v1: APIGroup, engine: Engine) {
        v1.get("recordings/:id/enhanced") { _, context in
            JSONResponse.make(try engine.library.enhancement(try context.recordingID()))
        }
        v1.post("recordings/:id/enhanced") { _, context in
            JSONResponse.make(try await engine.library.enhance(try context.recordingID()), status: .created)
        }
        v1.delete("recordings/:id/enhanced") { _, context in
            JSONResponse.make(try await engine.library.removeEnhancement(try context.recordingID()))
        }
    }
}
