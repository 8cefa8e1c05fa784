// The web app (Sources/Server/webapp): GET / and its assets under /app/<version>/, served by recd
// itself on its socket (a browser reaches it through `recctl ui`).
import Foundation
import HTTPTypes
import Hummingbird
import RecdAPI

enum WebApp {
    /// The files, read once: beside the binary (`swift build`), else from share/recd (`make install`).
    static let files: [String: Data] = {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let dirs = [exe.appendingPathComponent("recd_Server.resources/webapp"),
                    exe.deletingLastPathComponent().appendingPathComponent("share/recd/webapp")]
        for dir in dirs {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path), !names.isEmpty else { continue }
            var files: [String: Data] = [:]
            for name in names { files[name] = try? Data(contentsOf: dir.appendingPathComponent(name)) }
            return files
        }
        return [:]
    }()

    /// Assets live under the daemon's version, so a browser may keep them for good: a new recd is a
    /// new address.
    static let prefix = "app/\(RecdVersion.current)"

    /// Scripts only from recd itself; media and posters from recd; no inline script.
    static let policy = "default-src 'self'; img-src 'self' data:; media-src 'self'; style-src 'self'; "
        + "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

    static func add(to router: Router<RecdRequestContext>) {
        router.get("/") { _, _ in
            guard let page = files["index.html"] else {
                throw HTTPError(.notFound, message: "the web app is not installed beside recd")
            }
            let html = String(decoding: page, as: UTF8.self).replacingOccurrences(of: "{{VERSION}}", with: RecdVersion.current)
            return respond(Data(html.utf8), type: "text/html; charset=utf-8", cache: "no-cache")
        }
        router.get("app/:version/:file") { _, context in
            let version = try context.parameters.require("version"), name = try context.parameters.require("file")
            guard version == RecdVersion.current, name != "index.html", let data = files[name] else {
                throw HTTPError(.notFound, message: "no such file of the web app")
            }
            let type = name.hasSuffix(".js") ? "text/javascript; charset=utf-8"
                : name.hasSuffix(".css") ? "text/css; charset=utf-8" : "application/octet-stream"
            return respond(data, type: type, cache: "public, max-age=31536000, immutable")
        }
    }

    static func respond(_ data: Data, type: String, cache: String) -> Response {
        var headers: HTTPFields = [.contentType: type, .cacheControl: cache]
        headers[HTTPField.Name("Content-Security-Policy")!] = policy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
