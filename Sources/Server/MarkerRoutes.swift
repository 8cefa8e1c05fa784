// A recording's markers (issue 47): list, add (now or at a time), change, delete.
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
