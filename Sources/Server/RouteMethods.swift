// 405 Method Not Allowed for a known path asked with another method (Hummingbird's router says 404).
import Foundation
import HTTPTypes
import Hummingbird
import RecdAPI
import Synchronization

/// The methods each path of the API answers, recorded as the routes are registered (one source of
/// truth: the registrations themselves).
final class RouteMethods: Sendable {
    private let table = Mutex<[(segments: [Substring], methods: [HTTPRequest.Method])]>([])

    func add(_ path: String, _ method: HTTPRequest.Method) {
        let segments = path.split(separator: "/")
        table.withLock { t in
            if let i = t.firstIndex(where: { $0.segments == segments }) {
                if !t[i].methods.contains(method) { t[i].methods.append(method) }
            } else {
                t.append((segments, [method]))
            }
        }
    }

    /// The methods `path` answers, in registration order; nil when no route has that path. A
    /// `:name` segment of a route matches any one segment.
    func methods(for path: String) -> [HTTPRequest.Method]? {
        let asked = path.split(separator: "/")
        let found = table.withLock { t in
            let matching = t.filter { route in
                route.segments.count == asked.count
                    && zip(route.segments, asked).allSatisfy { $0.hasPrefix(":") || $0 == $1 }
            }
            // As Hummingbird's trie routes: a constant segment wins over a parameter at the same
            // place, with no going back (`/v1/recordings/import` is only the import, never
            // `/v1/recordings/:id` with the id "import").
            let specificity = { (route: (segments: [Substring], methods: [HTTPRequest.Method])) in
                route.segments.map { !$0.hasPrefix(":") }
            }
            let best = matching.map(specificity).max { a, b in
                zip(a, b).first { $0 != $1 }.map { !$0.0 && $0.1 } ?? false
            }
            return matching.filter { specificity($0) == best }.flatMap(\.methods)
        }
        return found.isEmpty ? nil : found
    }
}

/// A router group that records what it registers in a `RouteMethods`.
struct APIGroup {
    typealias Handler<Response> = @Sendable (Request, RecdRequestContext) async throws -> Response
    let group: RouterGroup<RecdRequestContext>
    let prefix: String
    let index: RouteMethods

    private func on(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping Handler<some ResponseGenerator>) {
        index.add(prefix + "/" + path, method)
        group.on(RouterPath(path), method: method, use: handler)
    }

    func get(_ path: String, use handler: @escaping Handler<some ResponseGenerator>) { on(.get, path, handler) }
    func head(_ path: String, use handler: @escaping Handler<some ResponseGenerator>) { on(.head, path, handler) }
    func post(_ path: String, use handler: @escaping Handler<some ResponseGenerator>) { on(.post, path, handler) }
    func patch(_ path: String, use handler: @escaping Handler<some ResponseGenerator>) { on(.patch, path, handler) }
    func delete(_ path: String, use handler: @escaping Handler<some ResponseGenerator>) { on(.delete, path, handler) }
}

/// Turns the router's 404 for a path that exists under other methods into 405 with `Allow`
/// (RFC 9110 §15.5.6), in the API's JSON error form. Innermost middleware: it sees the router's
/// own "no route" error before the JSON error middleware maps it.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    let index: RouteMethods

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let allowed = index.methods(for: request.uri.path), !allowed.contains(request.method) else { throw error }
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            let body = APIErrorBody(code: .methodNotAllowed,
                                    message: "\(request.uri.path) does not take \(request.method.rawValue); it takes \(names)")
            var response = JSONResponse.make(body, status: .methodNotAllowed)
            response.headers[.allow] = names
            return response
        }
    }
}
