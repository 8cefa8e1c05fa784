// recctl ui: the web app recd serves, opened in the person's browser. A browser cannot open a Unix
// socket, so recctl listens on 127.0.0.1 only and forwards each request to recd's socket as the user
// who ran it (recd's peer check and its logs still name that user). It knows nothing of the screens:
// it gates (a per-instance secret path, one-time token → cookie scoped to that path, Host, Origin)
// and forwards, streaming responses as they come (the event stream, Range requests of media) but
// no faster than the browser takes them. A browser that lost the cookie (another site on 127.0.0.1
// can make it drop it) is let in again with a secret kept in this origin's storage, or by a new
// address the owner asks for (Enter on recctl ui's terminal, SIGUSR1). Why each gate:
// docs/webapp.md and docs/design.md.
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
        Prints the address to open (a secret path and a one-time token) as the first line, then serves \
        until Ctrl-C. Only 127.0.0.1 is listened on; the token is exchanged for a cookie that the browser \
        sends only under that path, and is then dropped from the address bar. Requests with another Host, \
        or changes from another Origin, are refused. A line typed on its terminal (Enter), or SIGUSR1, \
        prints a new address (and with --open opens it), for a browser that is no longer let in; the \
        address before it then lets no one in.
        """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "Port on 127.0.0.1 (default: a free one).") var port: Int = 0
    @Flag(help: "Open the address in the default browser (xdg-open), through a private file: the token is never on a command line.")
    var open = false

    func validate() throws {
        if !(0...65535).contains(port) { throw ValidationError("--port must be 0...65535") }
    }

    func run() async throws {
        // recd must be there (this also starts a socket-activated recd).
        _ = try await global.client.call(.GET, "/v1/status", as: DaemonStatus.self)
        let gate = BridgeGate()
        let connections = BridgeConnections()
        let socket = global.socket
        let group = MultiThreadedEventLoopGroup.singleton
        // A Cookie header as large as a browser sends: another site on 127.0.0.1 may fill the browser's
        // jar for the host (cookies ignore ports), and all of it comes with every request.
        let limits = BridgeGate.decoderLimits
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 128)
            .childChannelInitializer { channel in
                // At the cap, the oldest connection that never showed the credential makes room (or
                // this one goes): a flood of half-sent requests cannot take the owner's place.
                guard let id = connections.admit(channel) else { return channel.close() }
                channel.closeFuture.whenComplete { _ in connections.leave(id) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withErrorHandling: true, withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
                    try channel.pipeline.syncOperations.addHandler(
                        BridgeHandler(gate: gate, socket: socket, trust: { connections.trust(id) }))
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
        let invitations = Invitations(gate: gate, json: global.json, opens: open)
        invitations.issue(first: true)
        // Its terminal, while it is the terminal's foreground job (a background job that reads it is
        // stopped by SIGTTIN: with that ignored the read fails instead, and the terminal is let go).
        let terminal = isatty(STDIN_FILENO) == 1 && tcgetpgrp(STDIN_FILENO) == getpgrp()
        Console.err(Data(("recctl ui: serving recd's web app at http://127.0.0.1:\(bound)\(gate.prefix)/ (Ctrl-C stops; "
                          + (terminal ? "Enter here, or " : "") + "kill -USR1 \(getpid()) prints a new address)\n").utf8))
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGUSR1, SIG_IGN)
        signal(SIGTTIN, SIG_IGN)
        var sources = [SIGINT, SIGTERM].map { s in
            let source = DispatchSource.makeSignalSource(signal: s)
            source.setEventHandler { server.close(promise: nil) }
            source.resume()
            return source
        }
        // A new address for a browser that is no longer let in (and no other way back: another
        // browser, its storage cleared), asked by whoever is the owner: their terminal or a signal.
        let renew = DispatchSource.makeSignalSource(signal: SIGUSR1)
        renew.setEventHandler { invitations.issue(first: false) }
        renew.resume()
        sources.append(renew)
        var typed: (any DispatchSourceRead)?
        if terminal {
            let source = DispatchSource.makeReadSource(fileDescriptor: STDIN_FILENO)
            source.setEventHandler {
                var buffer = [UInt8](repeating: 0, count: 256)
                let n = tcgetpgrp(STDIN_FILENO) == getpgrp() ? read(STDIN_FILENO, &buffer, buffer.count) : -1
                if n <= 0 { source.cancel(); return }   // Ctrl-D, or sent to the background: SIGUSR1 still asks
                for byte in buffer[0..<n] where byte == UInt8(ascii: "\n") { invitations.issue(first: false) }
            }
            source.resume()
            typed = source
        }
        defer { sources.forEach { $0.cancel() }; typed?.cancel(); invitations.end() }
        try await server.closeFuture.get()
    }
}

/// The tokened address: printed on standard output (one line each: a script reads the first from a
/// pipe; with --json as {"url": …}) and with --open opened, at the start and each time the owner
/// asks for a new one. A new address revokes the token before it if it was not used, and its launch
/// page.
final class Invitations: Sendable {
    let gate: BridgeGate
    let json: Bool
    let opens: Bool
    private let launch = Mutex<LaunchPage?>(nil)

    init(gate: BridgeGate, json: Bool, opens: Bool) { self.gate = gate; self.json = json; self.opens = opens }

    func issue(first: Bool) {
        let token = first ? gate.token : gate.reissue()
        let url = "http://127.0.0.1:\(gate.port)\(gate.prefix)/?token=\(token)"
        let line = json ? (try? APIJSON.encoder().encode(["url": url])).map { String(decoding: $0, as: UTF8.self) } ?? url : url
        Console.out(Data((line + "\n").utf8))
        if !first {
            Console.err(Data("recctl ui: a new address (above); the one before it lets no one in now\n".utf8))
        }
        guard opens else { return }
        // xdg-open and the browser get a private file that redirects, not the address: a command
        // line is readable by every user (/proc/PID/cmdline), a 0600 file is not.
        do {
            let page = try LaunchPage(url: url)
            launch.withLock { current in current?.remove(); current = page }
            gate.onRedeem = { page.remove() }
            DispatchQueue.global().asyncAfter(deadline: .now() + LaunchPage.lifetime) { page.remove() }
            let status = spawn(["/usr/bin/env", "xdg-open", page.fileURL])
            if status != 0 {
                Console.err(Data("recctl ui: could not run xdg-open (\(errnoText(status))); open the address yourself\n".utf8))
            }
        } catch {
            Console.err(Data("recctl ui: \(error); open the address yourself\n".utf8))
        }
    }

    func end() { launch.withLock { $0?.remove() } }
}

/// The page `--open` hands to xdg-open: a file only its owner can read (0600, in the owner's 0700
/// runtime directory or a 0700 directory of its own), which sends the browser on to the tokened
/// address. Removed once the token is redeemed, after `lifetime`, or when recctl ui ends.
final class LaunchPage: Sendable {
    static let lifetime: DispatchTimeInterval = .seconds(120)
    let path: String
    /// A directory made for the page (removed with it), when the runtime directory would not do.
    let ownDirectory: String?
    private let removed = Atomic(false)

    var fileURL: String { "file://" + path.percentEncoded(keeping: "/-._~") }

    init(url: String) throws {
        var dir: String? = nil
        var own: String? = nil
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/") {
            var st = stat()
            if lstat(runtime, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0 {
                dir = runtime
            }
        }
        if dir == nil {
            let tmp = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
            var template = Array((tmp + "/recctl-ui-XXXXXX").utf8CString)
            guard mkdtemp(&template) != nil else { throw ClientFailure.local("cannot make a private directory in \(tmp): \(errnoText())") }
            own = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            dir = own
        }
        path = dir! + "/recctl-ui-\(BridgeGate.random(bytes: 8)).html"
        ownDirectory = own
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ClientFailure.local("cannot write \(path): \(errnoText())") }
        defer { close(fd) }
        _ = fchmod(fd, 0o600)
        let href = url.replacingScalar("&", with: "&amp;").replacingScalar("\"", with: "&quot;").replacingScalar("<", with: "&lt;")
        Console.write(Array((BridgeHandler.enterPage(href) + "\n").utf8), to: fd)
    }

    func remove() {
        guard !removed.exchange(true, ordering: .relaxed) else { return }
        unlink(path)
        if let ownDirectory { rmdir(ownDirectory) }
    }
}

/// The per-instance secrets and the port the Host must name: the path prefix the app is served
/// under, the one-time token, the cookie it is exchanged for (named after the port and scoped to
/// the prefix, so a second `recctl ui` sets its own beside it), and the secret that gets that cookie
/// again (kept in the origin's storage by the page the token opens).
final class BridgeGate: @unchecked Sendable {
    /// `/ui-` and 16 random bytes: a browser sends the cookie only under it, whatever the port.
    let prefix = "/ui-" + BridgeGate.random(bytes: 16)
    let cookie = BridgeGate.random()
    /// What `POST <prefix>/.relay/renew` takes (in `renewHeader`) for the cookie again.
    let renewal = BridgeGate.random()
    /// The one-time token and whether it was used; replaced by `reissue`.
    private let tokenState = Mutex((value: BridgeGate.random(), used: false))
    private let boundPort = Mutex(0)

    /// The largest request head read (one header or all): 1 MiB. A browser keeps at most 180
    /// cookies of 4 KiB (name and value) for a host, Chromium and Firefox alike, and sends every one
    /// that matches: 180 × (4096 + 2) bytes, about 720 KiB, whose path is `/` when another site on
    /// 127.0.0.1 set them. NIO's default (80 KiB) answered 400 to every request of the app after 20
    /// such cookies. A head past the bound is still 400; 64 connections hold at most 64 MiB of heads,
    /// each for at most the 10 s header timeout.
    static let maxHeadBytes = 1 << 20
    static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = maxHeadBytes
        limits.maxHeaderListSize = maxHeadBytes
        return limits
    }
    /// Where the page's secret is kept (localStorage, which is per origin: port included).
    static let storageKey = "recd-ui-renew"
    static let renewPath = "/.relay/renew"
    static let renewHeader = "X-Recd-UI-Renew"
    private let redeemed = Mutex<(@Sendable () -> Void)?>(nil)
    var port: Int {
        get { boundPort.withLock { $0 } }
        set { boundPort.withLock { $0 = newValue } }
    }
    /// Called once, when the token is redeemed (the launch page is then removed).
    var onRedeem: (@Sendable () -> Void)? {
        get { redeemed.withLock { $0 } }
        set { redeemed.withLock { $0 = newValue } }
    }
    var cookieName: String { "recd_ui_\(port)" }
    var token: String { tokenState.withLock { $0.value } }

    /// The cookie as set. `Priority=High` (Chromium's): when a host's jar overflows, low and medium
    /// cookies go first, so a flood of ordinary ones does not push this one out as readily.
    var setCookie: String { "\(cookieName)=\(cookie); HttpOnly; SameSite=Strict; Path=\(prefix)/; Priority=High" }

    /// True once, for the right token.
    func redeem(_ candidate: Substring) -> Bool {
        let valid = tokenState.withLock { t in
            guard BridgeGate.same(candidate.utf8, t.value.utf8), !t.used else { return false }
            t.used = true
            return true
        }
        if valid { onRedeem?() }
        return valid
    }

    /// A new one-time token in place of the last one (used or not).
    func reissue() -> String {
        tokenState.withLock { t in
            t = (BridgeGate.random(), false)
            return t.value
        }
    }

    /// Whether the Cookie headers carry this relay's cookie. Only its own name is looked at: the other
    /// cookies a browser sends for 127.0.0.1 (every port's: cookies ignore ports) are skipped unread.
    func carriesCookie(_ headers: HTTPHeaders) -> Bool {
        let name = Array((cookieName + "=").utf8), value = Array(cookie.utf8)
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        for field in headers["Cookie"] {
            for pair in field.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: true) {
                let trimmed = pair.drop(while: blank)
                guard trimmed.starts(with: name) else { continue }
                var candidate = trimmed.dropFirst(name.count)
                while let last = candidate.last, blank(last) { candidate = candidate.dropLast() }
                if BridgeGate.same(candidate, value) { return true }
            }
        }
        return false
    }

    static func random(bytes count: Int = 32) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }   // SystemRandomNumberGenerator: getrandom(2)
        return bytes.map { String(cFormat: "%02x", $0) }.joined()
    }

    /// Compared in a time that does not depend on where they differ (as Jupyter's hmac.compare_digest).
    static func same(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }

    /// Only what is listened on: `localhost` may also name [::1], where another user could listen.
    var host: String { "127.0.0.1:\(port)" }
    var origin: String { "http://" + host }
}

/// The browser connections: at most `cap`. When one more comes, the oldest that has not shown the
/// cookie or the token is closed; when all have, the new one is.
final class BridgeConnections: Sendable {
    let cap = 64
    private struct Entry { let channel: any Channel; var trusted: Bool }
    private struct State { var next = 0; var entries: [Int: Entry] = [:] }
    private let state = Mutex(State())

    /// The new connection's id, or nil when it is the one to go.
    func admit(_ channel: any Channel) -> Int? {
        let (id, evicted): (Int?, (any Channel)?) = state.withLock { s in
            let id = s.next
            s.next += 1
            guard s.entries.count >= cap else {
                s.entries[id] = Entry(channel: channel, trusted: false)
                return (id, nil)
            }
            guard let oldest = s.entries.filter({ !$0.value.trusted }).keys.min() else { return (nil, nil) }
            let victim = s.entries.removeValue(forKey: oldest)!.channel
            s.entries[id] = Entry(channel: channel, trusted: false)
            return (id, victim)
        }
        evicted?.close(promise: nil)
        return id
    }

    func trust(_ id: Int) { state.withLock { s in s.entries[id]?.trusted = true } }
    func leave(_ id: Int) { state.withLock { s in _ = s.entries.removeValue(forKey: id) } }
}

/// One browser connection: each request is checked, then forwarded to recd on a connection of its
/// own, on this channel's event loop (so both handlers run on one thread). A request's head must come
/// within `headerTimeout` of the connection or of the previous response's end, else the connection
/// is closed. Neither side is read faster than the other side takes what was read.
final class BridgeHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// As Apache's KeepAliveTimeout (5 s) and well under nginx's header timeout (60 s): a browser
    /// sends a head at once, and reopens an idle connection that was closed.
    static let headerTimeout: TimeAmount = .seconds(10)

    private let gate: BridgeGate
    private let socket: String
    private let trust: @Sendable () -> Void
    private var upstream: (any Channel)?
    /// Request parts that came before the connection to recd was up.
    private var pending: [HTTPClientRequestPart] = []
    private var forwarding = false
    /// The request is a page load (the browser's navigation), not the app's own API call.
    private var wantsPage = false
    private var headerDeadline: Scheduled<Void>?

    init(gate: BridgeGate, socket: String, trust: @escaping @Sendable () -> Void) {
        self.gate = gate; self.socket = socket; self.trust = trust
    }

    func handlerAdded(context: ChannelHandlerContext) { awaitHead(context.channel) }

    func handlerRemoved(context: ChannelHandlerContext) { headerDeadline?.cancel() }

    /// The next request's head must come within the timeout.
    private func awaitHead(_ channel: any Channel) {
        headerDeadline?.cancel()
        headerDeadline = channel.eventLoop.scheduleTask(in: Self.headerTimeout) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            headerDeadline?.cancel()
            headerDeadline = nil
            forwarding = false
            let path: String
            switch check(head) {
            case .forward(let p): path = p
            case .refuse(let status, let body, let headers):
                replyOn(context.channel, status, body, type: "text/plain; charset=utf-8", extra: headers)
                return
            case .enter(let cookie):
                let nonce = BridgeGate.random(bytes: 16)
                replyOn(context.channel, .ok, Self.enterPage(gate.prefix + "/", storing: gate.renewal, nonce: nonce),
                        type: "text/html; charset=utf-8",
                        extra: [("Set-Cookie", cookie), ("Content-Security-Policy", "default-src 'none'; script-src 'nonce-\(nonce)'")])
                return
            case .renewed(let cookie):
                replyOn(context.channel, .ok, "let in again", type: "text/plain; charset=utf-8", extra: [("Set-Cookie", cookie)])
                return
            case .renewPage:
                let nonce = BridgeGate.random(bytes: 16)
                replyOn(context.channel, .unauthorized, Self.renewPage(prefix: gate.prefix, nonce: nonce), type: "text/html; charset=utf-8",
                        extra: [("Content-Security-Policy", "default-src 'none'; script-src 'nonce-\(nonce)'; connect-src 'self'")])
                return
            }
            trust()
            forwarding = true
            wantsPage = head.method == .GET && head.headers["Accept"].contains { $0.contains("text/html") }
            var out = HTTPRequestHead(version: .http1_1, method: head.method, uri: path)
            for (name, value) in head.headers where !["host", "cookie", "connection", "keep-alive", "origin", "referer"].contains(name.lowercased()) {
                out.headers.add(name: name, value: value)
            }
            out.headers.add(name: "Host", value: "recd")
            out.headers.add(name: "Connection", value: "close")
            pending = [.head(out)]
            // Nothing more is read from the browser until recd's connection takes it.
            setAutoRead(context.channel, false)
            connect(context)
        case .body(let buffer):
            guard forwarding else { return }
            send(.body(.byteBuffer(buffer)), browser: context.channel)
        case .end:
            guard forwarding else { return }
            send(.end(nil), browser: context.channel)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The browser took what was queued for it: read recd's reply again.
        if context.channel.isWritable, let upstream { setAutoRead(upstream, true) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        headerDeadline?.cancel()
        upstream?.close(promise: nil)   // an event stream ends when the page goes
        upstream = nil
        context.fireChannelInactive()
    }

    enum Verdict {
        case forward(path: String)
        case refuse(HTTPResponseStatus, String, [(String, String)])
        /// The token redeemed: this cookie, and a page that keeps the renewal secret and goes on to the app.
        case enter(cookie: String)
        /// The renewal secret shown: the cookie again.
        case renewed(cookie: String)
        /// A page load without the cookie: a page that asks for it again with the stored secret.
        case renewPage
    }

    /// Sent with the cookie in place of a redirect: a browser that came from elsewhere (the
    /// launch file of --open is a file:// page, a link in another site's page) withholds a
    /// SameSite=Strict cookie from every request of that navigation, redirects included, so the
    /// app would answer 401; a navigation this page starts is the relay's own, and carries it.
    /// (The launch file is this page too, on to the tokened address.)
    /// With `secret`, the relay's own answer to the token: a script (allowed by its nonce alone) keeps
    /// the renewal secret in the origin's storage first.
    static func enterPage(_ location: String, storing secret: String? = nil, nonce: String = "") -> String {
        let keep = secret.map {
            #"<script nonce="\#(nonce)">try{localStorage.setItem("\#(BridgeGate.storageKey)","\#($0)")}catch(e){}</script>"#
        } ?? ""
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8">\(keep)<meta http-equiv="refresh" content="0;url=\(location)">
            <title>Opening recd's web app</title></head><body><p>Opening <a href="\(location)">recd's web app</a>…</p></body></html>
            """
    }

    /// The answer to a page load without the cookie (401): its script sends the secret the token's page
    /// kept, once in 10 s (a browser that drops the cookie again at once is told, not sent round in a
    /// loop), and loads the page again when that let it in; else the page says how to get a new address.
    static func renewPage(prefix: String, nonce: String) -> String {
        let script = #"""
            (async()=>{let s=null;try{s=localStorage.getItem("\#(BridgeGate.storageKey)")}catch(e){}
            const k="recd-ui-renewed",t=Number(sessionStorage.getItem(k)||0);if(!s||Date.now()-t<10000)return;
            try{const r=await fetch("\#(prefix)\#(BridgeGate.renewPath)",{method:"POST",headers:{"\#(BridgeGate.renewHeader)":s},credentials:"same-origin"});
            if(r.ok){sessionStorage.setItem(k,String(Date.now()));location.reload()}}catch(e){}})()
            """#
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>recd's web app: not let in</title></head><body>
            <h1>This browser is not let in</h1>
            <p>It has no cookie of this <code>recctl ui</code> (a browser drops cookies when another site on 127.0.0.1 sets
            many). Press Enter in the terminal where <code>recctl ui</code> runs, or send it SIGUSR1, for a new address;
            or run <code>recctl ui</code> again.</p>
            <script nonce="\(nonce)">\(script)</script></body></html>
            """
    }

    /// The gate: Host (DNS rebinding), the instance's path, the token or cookie, and Origin for
    /// changes (CSRF). What is forwarded is the path without the instance's prefix.
    private func check(_ head: HTTPRequestHead) -> Verdict {
        let hosts = head.headers["Host"]
        guard hosts.count <= 1 else { return .refuse(.badRequest, "One Host header, not \(hosts.count).", []) }
        guard let host = hosts.first, host.lowercased() == gate.host else {
            return .refuse(.forbidden, "recctl ui answers only requests for \(gate.host).", [])
        }
        let prefix = gate.prefix
        let uri = head.uri.utf8
        let path = String(head.uri.dropFirst(prefix.count))
        guard uri.count > prefix.utf8.count, BridgeGate.same(uri.prefix(prefix.utf8.count), prefix.utf8), path.hasPrefix("/") else {
            if uri.count == prefix.utf8.count, BridgeGate.same(uri, prefix.utf8) {
                return .refuse(.permanentRedirect, "", [("Location", prefix + "/")])
            }
            return .refuse(.notFound, "Nothing here. Open the address `recctl ui` printed, or run `recctl ui` again.", [])
        }
        let url = URLComponents(string: path)
        let hasCookie = gate.carriesCookie(head.headers)
        if path == BridgeGate.renewPath {
            // The page's own request (fetch, same origin), with the secret only its origin's storage holds.
            guard head.method == .POST, head.headers.first(name: "Origin")?.lowercased() == gate.origin,
                  let secret = head.headers.first(name: BridgeGate.renewHeader), BridgeGate.same(secret.utf8, gate.renewal.utf8) else {
                return .refuse(.forbidden, "Not let in again. Run `recctl ui` again, or ask the one running for a new address.", [])
            }
            return .renewed(cookie: gate.setCookie)
        }
        if url?.path == "/", let token = url?.queryItems?.first(where: { $0.name == "token" })?.value {
            // The printed link opened again in the browser that redeemed it: it is let in already.
            if hasCookie { return .refuse(.seeOther, "", [("Location", prefix + "/")]) }
            guard gate.redeem(Substring(token)) else {
                return .refuse(.unauthorized, "This link was used already or is not this recctl ui's. Run `recctl ui` again for a new one.", [])
            }
            // The token becomes a cookie and leaves the address bar (and the browser's history). The
            // cookie goes back only under this instance's prefix: not to another port's server, not
            // to another `recctl ui` (whose cookie, named after its port, sits beside this one).
            return .enter(cookie: gate.setCookie)
        }
        guard hasCookie else {
            if head.method == .GET && head.headers["Accept"].contains(where: { $0.contains("text/html") }) { return .renewPage }
            return .refuse(.unauthorized, "Open the address `recctl ui` printed (it carries a one-time token), or run `recctl ui` again.", [])
        }
        if head.method != .GET && head.method != .HEAD, let origin = head.headers.first(name: "Origin"),
           origin.lowercased() != gate.origin {
            return .refuse(.forbidden, "Changes are accepted only from the page recctl ui serves, not from \(origin).", [])
        }
        return .forward(path: path)
    }

    private func connect(_ context: ChannelHandlerContext) {
        let browser = context.channel
        let relay = ResponseRelay(browser: browser, onEnd: { [weak self] in self?.awaitHead(browser) })
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
                    guard browser.isActive else { channel.close(promise: nil); return }
                    upstream = channel
                    let parts = pending
                    pending = []
                    for part in parts { channel.write(part, promise: nil) }
                    channel.flush()
                    if channel.isWritable { setAutoRead(browser, true) }
                case .failure(let error):
                    pending = []
                    forwarding = false
                    setAutoRead(browser, true)
                    if wantsPage {
                        // A person loading the page gets a page that says what to do, not JSON, and
                        // that loads the app by itself once recd answers (its script, by its nonce).
                        let nonce = BridgeGate.random(bytes: 16)
                        replyOn(browser, .badGateway, Self.unreachablePage(socket: socket, error: Self.plainReason(error), prefix: gate.prefix, nonce: nonce),
                                type: "text/html; charset=utf-8",
                                extra: [("Content-Security-Policy", "default-src 'none'; script-src 'nonce-\(nonce)'; style-src 'nonce-\(nonce)'; connect-src 'self'")])
                    } else {
                        let body = #"{"error":{"code":"unreachable","message":"recd is not reachable at \#(socket): \#(Self.plainReason(error))"}}"#
                        replyOn(browser, .badGateway, body, type: "application/json")
                    }
                }
            }
    }

    /// Why the socket did not answer, in words: NIO's text is the system call and its errno
    /// ("connect(descriptor:addr:size:): Connection refused (errno: 111)"), which a page must not show.
    static func plainReason(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("errno: 111") || text.contains("Connection refused") { return "nothing is listening on it" }
        if text.contains("errno: 2)") || text.contains("No such file") { return "the socket does not exist" }
        if text.contains("errno: 13)") || text.contains("Permission denied") { return "permission denied" }
        return "it did not answer"
    }

    /// The answer to a page load while recd does not answer (502). Its script asks recd's status
    /// through the relay, 0.5 s after the load and then with a backoff doubling to 5 s, and loads the
    /// page again as soon as anything but the relay's 502/504 comes back: the page used to say
    /// "reload this page" and stay as it was when recd came back. A 401 (the cookie dropped) reloads
    /// too: the page load that follows lets the browser in again (`renewPage`).
    static func unreachablePage(socket: String, error: String, prefix: String, nonce: String) -> String {
        func escaped(_ s: String) -> String {
            s.replacingScalar("&", with: "&amp;").replacingScalar("<", with: "&lt;").replacingScalar(">", with: "&gt;")
        }
        let script = #"""
            (()=>{let d=500;const t=async()=>{try{const r=await fetch("\#(prefix)/v1/status",{credentials:"same-origin",cache:"no-store"});
            if(r.status!==502&&r.status!==504){location.reload();return}}catch(e){}d=Math.min(5000,d*2);setTimeout(t,d)};setTimeout(t,d)})()
            """#
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>recd is not reachable</title><style nonce="\(nonce)">body { font: 16px system-ui, sans-serif; margin: 2rem; max-width: 40rem }</style></head><body>
            <h1 class="banner" role="alert">recd is not reachable</h1>
            <p>Nothing answers on <code>\(escaped(socket))</code> (\(escaped(error))).</p>
            <p>Start it — <code>systemctl --user start recd</code>, or <code>recd</code> in a terminal. This page keeps trying,
            and opens the app by itself once recd answers. <code>recctl status</code> says whether it runs.</p>
            <script nonce="\(nonce)">\(script)</script></body></html>
            """
    }

    /// A part of the request body on to recd; the browser is not read while recd's side is full.
    private func send(_ part: HTTPClientRequestPart, browser: any Channel) {
        guard let upstream else { pending.append(part); return }
        upstream.writeAndFlush(part, promise: nil)
        if !upstream.isWritable { setAutoRead(browser, false) }
    }

    private func replyOn(_ channel: any Channel, _ status: HTTPResponseStatus, _ text: String, type: String,
                         extra: [(String, String)] = []) {
        var head = HTTPResponseHead(version: .http1_1, status: status)
        head.headers.add(name: "Content-Type", value: type)
        head.headers.add(name: "Content-Length", value: String(text.utf8.count))
        head.headers.add(name: "Cache-Control", value: "no-store")
        head.headers.add(name: "Referrer-Policy", value: "no-referrer")
        for (name, value) in extra { head.headers.add(name: name, value: value) }
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text))), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
        awaitHead(channel)
    }
}

/// Sets a channel's autoRead; called on its event loop (the browser's and recd's share one).
func setAutoRead(_ channel: any Channel, _ on: Bool) {
    try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: on)
}

/// recd's reply, part by part, to the browser as it comes: an event stream or a large file is never
/// held back, and recd's side is not read while the browser's is full (at most one read's worth
/// queued: a browser that does not read does not grow recctl).
final class ResponseRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private let browser: any Channel
    private let onEnd: () -> Void
    private var ended = false

    init(browser: any Channel, onEnd: @escaping () -> Void) {
        self.browser = browser; self.onEnd = onEnd
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            head.headers.remove(name: "Connection")   // recd's connection is per request; the browser's is kept
            head.version = .http1_1
            browser.writeAndFlush(HTTPServerResponsePart.head(head), promise: nil)
        case .body(let buffer):
            browser.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
            if !browser.isWritable { setAutoRead(context.channel, false) }
        case .end:
            ended = true
            browser.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
            onEnd()
            context.close(promise: nil)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // recd took the request body queued for it: read the browser again.
        if context.channel.isWritable { setAutoRead(browser, true) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // recd went away mid-response: the browser's response cannot be finished properly.
        if !ended { browser.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
