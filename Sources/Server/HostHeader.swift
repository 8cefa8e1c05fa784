// One Host per request (RFC 9112 §3.2): a server must answer 400 to a request with more than one.
import HTTPTypes
import Hummingbird
import RecdAPI

/// Refuses a request that names more than one Host (400 `malformed_request`). Which one it meant is
/// not recd's to guess, and a proxy in front (`recctl ui`, socat) may have checked another one than
/// recd would read. The first Host becomes the request's authority (swift-http-types); a further one
/// stays among the header fields, which is how it is found here.
struct SingleHostMiddleware<Context: RequestContext>: RouterMiddleware {
    static var host: HTTPField.Name { HTTPField.Name("Host")! }

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.headers[values: Self.host].isEmpty else {
            throw RequestError(status: .badRequest, code: .malformedRequest, message: "the request has more than one Host header")
        }
        return try await next(request, context)
    }
}
