// recctl ui: the web app recd serves, opened in the person's browser. A browser cannot open a Unix
// socket, so recctl listens on 127.0.0.1 only and forwards each request to recd's socket as the user
// who ran it (recd's peer check and its logs still name that user). It knows nothing of the screens:
// it gates (one-time token → cookie, Host, Origin) and forwards, streaming responses unbuffered
// (the event stream, Range requests of media).
import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import RecdAPI
import Synchronization

struct UI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Open recd's web app: serve it on 127.0.0.1 for your browser, forwarding to recd's socket.",
        discussion: """
        Prints the address to open (with a one-time token) as the first line, then serves until Ctrl-C.
        Only 127.0.0.1 is listened on; the token is exchanged for a cookie on first use and then dropped
        from the address bar. Requests with another Host, or changes from another Origin, are refused.
        """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "Port on 127.0.0.1 (default: a free one).") var port: Int = 0
    @Flag(help: "Open the address in the default browser (xdg-open).") var open = false

    func validate() throws {
        if !(0...65535).contains(port) { throw ValidationError("--port must be 0...65535") }
    }

    func run() async throws {
        // recd must be there (this also starts a socket-activated recd).
        _ = try await global.client.call(.GET, "/v1/status", as: DaemonStatus.self)
        let gate = BridgeGate()
        let socket = global.socket
        let group = MultiThreadedEventLoopGroup.singleton
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(BridgeHandler(gate: gate, socket: socket))
                }
            }
        let server: any Channel
        do {
            server = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        } catch let e as IOError {
            throw ClientFailure.local("cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(e.errnoCode)))"
                                      + (e.errnoCode == EADDRINUSE ? " (another program has it: give another --port, or 0 for any)" : ""))
        }
        let bound = server.localAddress?.port ?? port
        gate.port = bound
        let url = "http://127.0.0.1:\(bound)/?token=\(gate.token)"
        // First line, flushed at once: a script reads it from a pipe (with --json, as {"url": …}).
        let first = global.json ? (try? APIJSON.encoder().encode(["url": url])).map { String(decoding: $0, as: UTF8.self) } ?? url : url
        Console.out(Data((first + "\n").utf8))
        Console.err(Data("recctl ui: serving recd's web app at http://127.0.0.1:\(bound)/ (Ctrl-C stops)\n".utf8))
        if open {
            let status = spawn(["/usr/bin/env", "xdg-open", url])
            if status != 0 {
                Console.err(Data("recctl ui: could not run xdg-open (\(errnoText(status))); open the address yourself\n".utf8))
            }
        }
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stop = Mutex(false)
        let sources = [SIGINT, SIGTERM].map { s in
            let source = DispatchSource.makeSignalSource(signal: s)
            source.setEventHandler { stop.withLock { $0 = true }; server.close(promise: nil) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        try await server.closeFuture.get()
    }
}

/// The one-time token, the cookie it is exchanged for, and the port the Host must name.
final class BridgeGate: @unchecked Sendable {
    let token = BridgeGate.random()
    let cookie = BridgeGate.random()
    private let used = Mutex(false)
    private let boundPort = Mutex(0)
    var port: Int {
        get { boundPort.withLock { $0 } }
        set { boundPort.withLock { $0 = newValue } }
    }

    /// True once, for the right token.
    func redeem(_ candidate: Substring) -> Bool {
        used.withLock { used in
            guard !used, candidate == token else { return false }
            used = true
            return true
        }
    }

    static func random() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }   // SystemRandomNumberGenerator: getrandom(2)
        return bytes.map { String(cFormat: "%02x", $0) }.joined()
    }

    var hosts: Set<String> { ["127.0.0.1:\(port)", "localhost:\(port)"] }
    var origins: Set<String> { Set(hosts.map { "http://" + $0 }) }
}

/// One browser connection: each request is checked, then forwarded to recd on a connection of its
/// own, on this channel's event loop (so both handlers run on one thread).
final class BridgeHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let gate: BridgeGate
    private let socket: String
    private var upstream: (any Channel)?
    /// Request parts that came before the connection to recd was up.
    private var pending: [HTTPClientRequestPart] = []
    private var forwarding = false
    private var respondedHead = false
    /// The request is a page load (the browser's navigation), not the app's own API call.
    private var wantsPage = false

    init(gate: BridgeGate, socket: String) { self.gate = gate; self.socket = socket }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            forwarding = false
            respondedHead = false
            if let refusal = check(head) {
                reply(context, refusal.status, refusal.body, extra: refusal.headers)
                return
            }
            forwarding = true
            wantsPage = head.method == .GET && head.headers["Accept"].contains { $0.contains("text/html") }
            var out = HTTPRequestHead(version: .http1_1, method: head.method, uri: head.uri)
            for (name, value) in head.headers where !["host", "cookie", "connection", "keep-alive", "origin", "referer"].contains(name.lowercased()) {
                out.headers.add(name: name, value: value)
            }
            out.headers.add(name: "Host", value: "recd")
            out.headers.add(name: "Connection", value: "close")
            pending = [.head(out)]
            connect(context)
        case .body(let buffer):
            guard forwarding else { return }
            send(.body(.byteBuffer(buffer)))
        case .end:
            guard forwarding else { return }
            send(.end(nil))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        upstream?.close(promise: nil)   // an event stream ends when the page goes
        upstream = nil
        context.fireChannelInactive()
    }

    /// The gate: Host (DNS rebinding), the token or cookie, and Origin for changes (CSRF).
    private func check(_ head: HTTPRequestHead) -> (status: HTTPResponseStatus, body: String, headers: [(String, String)])? {
        guard let host = head.headers.first(name: "Host"), gate.hosts.contains(host.lowercased()) else {
            return (.forbidden, "recctl ui answers only requests for 127.0.0.1:\(gate.port) or localhost:\(gate.port).", [])
        }
        let url = URLComponents(string: head.uri)
        let cookies = head.headers["Cookie"].flatMap { $0.split(separator: ";") }.map { $0.trimmingWhitespace() }
        let hasCookie = cookies.contains("recd_ui=\(gate.cookie)")
        if url?.path == "/", let token = url?.queryItems?.first(where: { $0.name == "token" })?.value {
            // The printed link opened again in the browser that redeemed it: it is let in already.
            if hasCookie { return (.seeOther, "", [("Location", "/")]) }
            guard gate.redeem(Substring(token)) else {
                return (.unauthorized, "This link was used already or is not this recctl ui's. Run `recctl ui` again for a new one.", [])
            }
            // The token becomes a cookie and leaves the address bar (and the browser's history).
            return (.seeOther, "", [("Location", "/"),
                                    ("Set-Cookie", "recd_ui=\(gate.cookie); HttpOnly; SameSite=Strict; Path=/")])
        }
        guard hasCookie else {
            return (.unauthorized, "Open the address `recctl ui` printed (it carries a one-time token), or run `recctl ui` again.", [])
        }
        if head.method != .GET && head.method != .HEAD, let origin = head.headers.first(name: "Origin"),
           !gate.origins.contains(origin.lowercased()) {
            return (.forbidden, "Changes are accepted only from the page recctl ui serves, not from \(origin).", [])
        }
        return nil
    }

    private func connect(_ context: ChannelHandlerContext) {
        let browser = context.channel
        let relay = ResponseRelay(browser: browser, onHead: { [weak self] in self?.respondedHead = true })
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(relay)
                }
            }
            .connect(unixDomainSocketPath: socket)
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    upstream = channel
                    let parts = pending
                    pending = []
                    for part in parts { channel.write(part, promise: nil) }
                    channel.flush()
                case .failure(let error):
                    pending = []
                    forwarding = false
                    if wantsPage {
                        // A person loading the page gets a page that says what to do, not JSON.
                        replyOn(browser, .badGateway, Self.unreachablePage(socket: socket, error: "\(error)"), type: "text/html; charset=utf-8")
                    } else {
                        let body = #"{"error":{"code":"unreachable","message":"recd is not reachable at \#(socket): \#(error)"}}"#
                        replyOn(browser, .badGateway, body, type: "application/json")
                    }
                }
            }
    }

    static func unreachablePage(socket: String, error: String) -> String {
        func escaped(_ s: String) -> String {
            s.replacingScalar("&", with: "&amp;").replacingScalar("<", with: "&lt;").replacingScalar(">", with: "&gt;")
        }
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>recd is not reachable</title></head><body style="font: 16px system-ui, sans-serif; margin: 2rem; max-width: 40rem">
            <h1 class="banner" role="alert">recd is not reachable</h1>
            <p>Nothing answers on <code>\(escaped(socket))</code> (\(escaped(error))).</p>
            <p>Start it — <code>systemctl --user start recd</code>, or <code>recd</code> in a terminal — and reload this page.
            <code>recctl status</code> says whether it runs.</p></body></html>
            """
    }

    private func send(_ part: HTTPClientRequestPart) {
        if let upstream { upstream.writeAndFlush(part, promise: nil) } else { pending.append(part) }
    }

    private func reply(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ text: String, extra: [(String, String)] = []) {
        replyOn(context.channel, status, text, type: "text/plain; charset=utf-8", extra: extra)
    }

    private func replyOn(_ channel: any Channel, _ status: HTTPResponseStatus, _ text: String, type: String,
                         extra: [(String, String)] = []) {
        var head = HTTPResponseHead(version: .http1_1, status: status)
        head.headers.add(name: "Content-Type", value: type)
        head.headers.add(name: "Content-Length", value: String(text.utf8.count))
        head.headers.add(name: "Cache-Control", value: "no-store")
        for (name, value) in extra { head.headers.add(name: name, value: value) }
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text))), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
    }
}

/// recd's reply, part by part, to the browser as it comes: an event stream or a large file is never
/// held back.
final class ResponseRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private let browser: any Channel
    private let onHead: () -> Void
    private var ended = false

    init(browser: any Channel, onHead: @escaping () -> Void) { self.browser = browser; self.onHead = onHead }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            head.headers.remove(name: "Connection")   // recd's connection is per request; the browser's is kept
            head.version = .http1_1
            onHead()
            browser.writeAndFlush(HTTPServerResponsePart.head(head), promise: nil)
        case .body(let buffer):
            browser.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
        case .end:
            ended = true
            browser.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // recd went away mid-response: the browser's response cannot be finished properly.
        if !ended { browser.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
