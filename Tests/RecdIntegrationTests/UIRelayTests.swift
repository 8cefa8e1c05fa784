// `recctl ui`, the local relay between a browser and recd's socket (issue 35, section 2), over raw
// TCP against the real recd and the real recctl: the Host it answers, and the bounds that keep a
// flood of half-sent requests or a browser that does not read from taking it down; another site's
// cookie flood, and a browser let in again after losing its cookie (issue 45). The cookie's scope,
// --open and the flood in a browser are checked in Chromium (Tests/browser/relay_credential_test.py,
// WebAppTests).
import Foundation
import RecdAPI
import XCTest

final class UIRelayTests: XCTestCase {
    /// A running `recctl ui` and what its first line said.
    struct Relay {
        let process: Process
        let port: UInt16
        let prefix: String
        let token: String
        /// recctl ui's standard output, after its first line (the addresses it prints later).
        let out: FileHandle
        var pid: Int32 { process.processIdentifier }

        /// The next line recctl ui prints, waiting up to `timeout`.
        func nextLine(timeout: TimeInterval = 5) -> String? {
            var line = Data()
            let deadline = Date().addingTimeInterval(timeout)
            while !line.contains(UInt8(ascii: "\n")) {
                var p = pollfd(fd: out.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, Int32(max(0, deadline.timeIntervalSinceNow) * 1000)) == 1 else { return nil }
                var byte: UInt8 = 0
                guard read(out.fileDescriptor, &byte, 1) == 1 else { return nil }
                line.append(byte)
            }
            return String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    private var cleanups: [() -> Void] = []
    override func tearDown() {
        cleanups.reversed().forEach { $0() }
        cleanups = []
    }

    private func startDaemon() throws -> Daemon {
        let daemon = try Daemon(environment: ProcessInfo.processInfo.environment)
        cleanups.append { daemon.cleanUp() }
        try daemon.start()
        return daemon
    }

    private func startRelay(_ daemon: Daemon) throws -> Relay {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tools.recctl)
        p.arguments = ["--socket", daemon.socket, "ui"]
        p.environment = daemon.environment
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        cleanups.append { if p.isRunning { p.terminate(); p.waitUntilExit() } }
        let read = out.fileHandleForReading
        // The first line, byte by byte: what comes after it is read by `nextLine`.
        let url = Relay(process: p, port: 0, prefix: "", token: "", out: read).nextLine(timeout: 30) ?? ""
        guard let (port, prefix, token) = Self.address(url) else {
            throw NSError(domain: "recd-tests", code: 1, userInfo: [NSLocalizedDescriptionKey: "recctl ui printed \(url)"])
        }
        return Relay(process: p, port: port, prefix: prefix, token: token, out: read)
    }

    /// http://127.0.0.1:PORT/ui-SECRET/?token=TOKEN: the port, `/ui-SECRET` and the token.
    static func address(_ url: String) -> (UInt16, String, String)? {
        guard let c = URLComponents(string: url), c.host == "127.0.0.1", let port = c.port, c.path.hasSuffix("/"),
              let token = c.queryItems?.first(where: { $0.name == "token" })?.value else { return nil }
        return (UInt16(port), String(c.path.dropLast()), token)
    }

    /// The cookie the token is exchanged for ("name=value").
    private func redeem(_ relay: Relay) throws -> String {
        let c = try RawConnection(port: relay.port)
        try c.send("GET \(relay.prefix)/?token=\(relay.token) HTTP/1.1\r\nHost: 127.0.0.1:\(relay.port)\r\nConnection: close\r\n\r\n")
        let head = try c.readHead()
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200") || head.hasPrefix("HTTP/1.1 303"), head)
        guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("set-cookie:") }) else {
            throw NSError(domain: "recd-tests", code: 2, userInfo: [NSLocalizedDescriptionKey: "no cookie in \(head)"])
        }
        return String(line.dropFirst("set-cookie:".count).split(separator: ";")[0]).trimmingCharacters(in: .whitespaces)
    }

    /// One request on a connection of its own: the status code.
    private func status(_ relay: Relay, _ path: String, cookie: String?, host: String? = nil) throws -> Int {
        try exchange(relay, "GET", path, headers: cookie.map { ["Cookie: \($0)"] } ?? [], host: host).status
    }

    /// One request on a connection of its own: the status, the head and the body.
    private func exchange(_ relay: Relay, _ method: String, _ path: String, headers: [String] = [], host: String? = nil)
        throws -> (status: Int, head: String, body: String) {
        let c = try RawConnection(port: relay.port)
        try c.send("\(method) \(path) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(relay.port)")\r\n"
                   + headers.map { $0 + "\r\n" }.joined() + "Content-Length: 0\r\nConnection: close\r\n\r\n")
        let head = try c.readHead()
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        return (Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0, head, String(decoding: try c.body(length), as: UTF8.self))
    }

    /// A page on another port of 127.0.0.1 can set cookies for the host with `Path=/` (cookies ignore
    /// ports), and the browser sends them all to recctl ui: 40 of 4 KB made it answer 400 to every
    /// request of the app (NIO's 80 KiB head limit). Now a Cookie header as large as a browser sends
    /// (180 cookies of 4 KiB) is read, only recctl ui's own cookie is looked at, and a bound is kept.
    func testACookieFloodFromAnotherPortDoesNotBreakTheRelay() throws {
        let daemon = try startDaemon()
        let relay = try startRelay(daemon)
        let cookie = try redeem(relay)
        let status = "\(relay.prefix)/v1/status"
        // 200 small ones, the relay's in their midst.
        let small = (0..<200).map { "f\($0)=x" }
        XCTAssertEqual(try self.status(relay, status, cookie: (small[..<100] + [cookie] + small[100...]).joined(separator: "; ")), 200)
        // 180 of 4 KiB (name and value), the most a browser keeps for a host, the relay's last.
        let large = (0..<180).map { i -> String in
            let name = "big\(i)"
            return name + "=" + String(repeating: "v", count: 4096 - name.count)
        }
        let header = (large + [cookie]).joined(separator: "; ")
        XCTAssertGreaterThan(header.utf8.count, 700_000)
        XCTAssertEqual(try self.status(relay, status, cookie: header), 200, "a browser's largest Cookie header")
        XCTAssertEqual(try self.status(relay, status, cookie: large.joined(separator: "; ")), 401, "without the relay's own cookie")
        // A cookie of the same name and another value (set by that page for Path=/) does not hide the real one.
        let name = cookie.split(separator: "=")[0]
        XCTAssertEqual(try self.status(relay, status, cookie: "\(name)=forged; \(cookie)"), 200)
        XCTAssertEqual(try self.status(relay, status, cookie: "\(name)=forged"), 401)
        // Past the bound (1 MiB) the head is refused, and the relay goes on.
        XCTAssertEqual(try self.status(relay, status, cookie: String(repeating: "z", count: 1_200_000) + "; " + cookie), 400)
        XCTAssertEqual(try self.status(relay, status, cookie: cookie), 200)
        // Two Host headers: which one was meant is not the relay's to guess.
        XCTAssertEqual(try exchange(relay, "GET", status, headers: ["Host: 127.0.0.1:\(relay.port)", "Cookie: \(cookie)"]).status, 400)

        // The bound in memory: 64 connections (the cap) each stopped in a head of almost 1 MiB.
        Thread.sleep(forTimeInterval: 0.3)
        let before = try residentKB(relay.pid)
        var heads: [RawConnection] = []
        for _ in 0..<64 {
            let c = try RawConnection(port: relay.port)
            try c.send("GET \(status) HTTP/1.1\r\nHost: 127.0.0.1:\(relay.port)\r\nCookie: " + String(repeating: "h", count: 1_000_000))
            heads.append(c)
        }
        Thread.sleep(forTimeInterval: 1)
        let after = try residentKB(relay.pid)
        print("recctl ui resident: \(before) kB, then \(after) kB with 64 heads of 1 MB half-sent")
        XCTAssertLessThan(after - before, 100_000, "64 half-sent heads of 1 MB grew recctl ui from \(before) to \(after) kB")
        XCTAssertEqual(try self.status(relay, status, cookie: cookie), 200, "the owner is served meanwhile")
        heads.removeAll()
    }

    /// A browser that lost its cookie (Chromium drops the oldest when another port's page sets 200
    /// for 127.0.0.1) got 401 for good, and with the one-time token spent only a new `recctl ui` let
    /// it in. Now the page the token opened keeps a secret in the origin's storage that gets the
    /// cookie again (only with the relay's Origin), a page load without the cookie gets the page
    /// that does so, and the owner can ask the running recctl ui for a new address (SIGUSR1).
    func testABrowserThatLostItsCookieIsLetInAgain() throws {
        let daemon = try startDaemon()
        let relay = try startRelay(daemon)
        let entered = try exchange(relay, "GET", "\(relay.prefix)/?token=\(relay.token)")
        XCTAssertEqual(entered.status, 200, entered.head)
        let cookie = try XCTUnwrap(setCookie(entered.head), entered.head)
        let stored = try XCTUnwrap(entered.body.firstMatch(of: /localStorage\.setItem\("recd-ui-renew","([0-9a-f]{64})"\)/), entered.body)
        let secret = String(stored.1)
        let nonce = try XCTUnwrap(entered.body.firstMatch(of: /<script nonce="([0-9a-f]+)">/), entered.body).1
        XCTAssertTrue(entered.head.contains("script-src 'nonce-\(nonce)'"), "the page's script runs by its nonce alone: \(entered.head)")
        XCTAssertTrue(entered.head.contains("Priority=High"), entered.head)

        // The cookie is gone: a page load gets the page that asks again; the app's own calls a 401.
        let page = try exchange(relay, "GET", "\(relay.prefix)/", headers: ["Accept: text/html,application/xhtml+xml"])
        XCTAssertEqual(page.status, 401)
        XCTAssertTrue(page.body.contains(#"fetch("\#(relay.prefix)/.relay/renew""#), page.body)
        XCTAssertTrue(page.head.contains("connect-src 'self'"), page.head)
        XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: nil), 401)

        // Asking again: the relay's Origin and the secret, by POST; anything else is refused.
        let renew = "\(relay.prefix)/.relay/renew"
        let origin = "Origin: http://127.0.0.1:\(relay.port)"
        for (method, headers) in [("POST", [origin, "X-Recd-UI-Renew: " + String(repeating: "0", count: 64)]),
                                  ("POST", ["X-Recd-UI-Renew: " + secret]),
                                  ("POST", ["Origin: http://127.0.0.1:1", "X-Recd-UI-Renew: " + secret]),
                                  ("POST", [origin]),
                                  ("GET", [origin, "X-Recd-UI-Renew: " + secret])] {
            let r = try exchange(relay, method, renew, headers: headers)
            XCTAssertEqual(r.status, 403, "\(method) \(headers): \(r.head)")
            XCTAssertNil(setCookie(r.head))
        }
        let again = try exchange(relay, "POST", renew, headers: [origin, "X-Recd-UI-Renew: " + secret])
        XCTAssertEqual(again.status, 200, again.head)
        XCTAssertEqual(setCookie(again.head), cookie, "the same cookie: other tabs keep theirs")
        XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: cookie), 200)

        // The owner asks the running recctl ui for a new address: a new token, the same path.
        kill(relay.pid, SIGUSR1)
        let second = try XCTUnwrap(relay.nextLine(), "no new address after SIGUSR1")
        let (port, prefix, token) = try XCTUnwrap(Self.address(second), second)
        XCTAssertEqual(port, relay.port)
        XCTAssertEqual(prefix, relay.prefix)
        XCTAssertNotEqual(token, relay.token)
        // One more: the second, never used, is revoked by it.
        kill(relay.pid, SIGUSR1)
        let third = try XCTUnwrap(relay.nextLine().flatMap(Self.address), "no third address")
        XCTAssertEqual(try status(relay, "\(prefix)/?token=\(token)", cookie: nil), 401, "a token replaced before its use")
        XCTAssertEqual(try status(relay, "\(prefix)/?token=\(relay.token)", cookie: nil), 401, "the first, used")
        let fresh = try exchange(relay, "GET", "\(prefix)/?token=\(third.2)")
        XCTAssertEqual(fresh.status, 200, fresh.head)
        XCTAssertEqual(setCookie(fresh.head), cookie)
        XCTAssertTrue(relay.process.isRunning)
    }

    /// On its terminal, Enter asks the running recctl ui for a new address too (the owner's way, with
    /// SIGUSR1, for a browser that has no way back in by itself).
    func testEnterOnItsTerminalPrintsANewAddress() throws {
        let daemon = try startDaemon()
        let script = """
            import os, pty, select, sys, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], [sys.argv[1], "--socket", sys.argv[2], "ui"])
            out = b""
            def pump(seconds, until=None):
                global out
                end = time.time() + seconds
                while time.time() < end and not (until and until(out)):
                    if select.select([fd], [], [], 0.1)[0]:
                        try: out += os.read(fd, 4096)
                        except OSError: return
            pump(30, lambda o: b"prints a new address" in o)
            os.write(fd, b"\\n")
            pump(5, lambda o: o.count(b"token=") >= 2)
            os.kill(pid, 15)
            pump(1)
            sys.stdout.write(out.decode(errors="replace"))
            """
        let r = try Tools.run("/usr/bin/python3", ["-c", script, Tools.recctl, daemon.socket], environment: daemon.environment)
        let addresses = r.stdout.split(whereSeparator: \.isNewline).compactMap { Self.address(String($0).trimmingCharacters(in: .whitespaces)) }
        XCTAssertEqual(addresses.count, 2, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("Enter here, or kill -USR1"), r.stdout)
        if addresses.count == 2 {
            XCTAssertEqual(addresses[0].1, addresses[1].1, "the same path")
            XCTAssertNotEqual(addresses[0].2, addresses[1].2, "a new token")
        }
    }

    /// "name=value" of a head's Set-Cookie.
    private func setCookie(_ head: String) -> String? {
        head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") }
            .map { String($0.dropFirst("set-cookie:".count).split(separator: ";")[0]).trimmingCharacters(in: .whitespaces) }
    }

    /// `localhost` may resolve to [::1], which recctl ui does not listen on and another user may:
    /// only the address it listens on is a Host it answers, and that is the address it prints.
    func testOnlyTheAddressListenedOnIsAHostItAnswers() throws {
        let daemon = try startDaemon()
        let relay = try startRelay(daemon)
        let tokened = "\(relay.prefix)/?token=\(relay.token)"
        XCTAssertTrue(relay.prefix.hasPrefix("/ui-") && relay.prefix.count == 36, "no secret path of its own: \(relay.prefix)")
        XCTAssertEqual(try status(relay, tokened, cookie: nil, host: "localhost:\(relay.port)"), 403)
        XCTAssertEqual(try status(relay, tokened, cookie: nil, host: "[::1]:\(relay.port)"), 403)
        XCTAssertEqual(try status(relay, tokened, cookie: nil, host: "127.0.0.1:\(relay.port)"), 200)
        // Nothing is answered outside the secret path, with or without a cookie.
        XCTAssertEqual(try status(relay, "/", cookie: nil), 404)
        XCTAssertEqual(try status(relay, "/v1/status", cookie: nil), 404)
    }

    /// Hundreds of connections that never finish their request head: recctl ui keeps at most 64
    /// (the oldest that never showed the cookie make room), closes each after 10 s without a head,
    /// and serves the owner all along.
    func testHalfSentRequestsNeitherExhaustDescriptorsNorLockTheOwnerOut() throws {
        let daemon = try startDaemon()
        let relay = try startRelay(daemon)
        let cookie = try redeem(relay)
        XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: cookie), 200)
        Thread.sleep(forTimeInterval: 0.3)
        let idle = try openDescriptors(relay.pid)
        var flood: [RawConnection] = []
        for _ in 0..<400 {
            let c = try RawConnection(port: relay.port)
            try c.send("GET \(relay.prefix)/v1/status HTTP/1.1\r\nHost: 127.0.0.1:\(relay.port)\r\nX-Half: ")
            flood.append(c)
        }
        Thread.sleep(forTimeInterval: 0.5)
        let flooded = try openDescriptors(relay.pid)
        XCTAssertLessThanOrEqual(flooded, idle + 64 + 4, "recctl ui holds a descriptor for each half-sent request")
        // The owner is served while the flood holds its connections.
        for _ in 0..<5 { XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: cookie), 200) }
        // The newest half-sent request is closed by the header timeout, not before.
        let slow = try RawConnection(port: relay.port)
        try slow.send("GET \(relay.prefix)/v1/status HTTP/1.1\r\nHost: 127.0.0.1:\(relay.port)\r\n")
        let opened = Date()
        XCTAssertFalse(slow.closedByPeer(within: 8), "closed before its time")
        XCTAssertTrue(slow.closedByPeer(within: 5), "a half-sent request is kept open past 13 s")
        XCTAssertGreaterThan(Date().timeIntervalSince(opened), 9)
        let stillOpen = flood.filter { !$0.closedByPeer(within: 0.01) }.count
        XCTAssertEqual(stillOpen, 0, "half-sent requests are still open after the header timeout")
        XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: cookie), 200)
    }

    /// A browser that asks for large media and does not read it: recctl ui reads recd's reply only
    /// as fast as the browser takes it, so its memory does not grow with what is unread; a reader
    /// still gets every byte.
    func testUnreadMediaDoesNotGrowTheRelay() throws {
        let daemon = try startDaemon()
        // About 11 MB of noise (FLAC keeps most of it), imported as it is.
        let flac = daemon.dir.appendingPathComponent("noise.flac").path
        let made = try Tools.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "24", flac, "synth", "80", "whitenoise", "vol", "0.9"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let recording = try daemon.recctlJSON(Recording.self, "import", flac)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: daemon.path(of: recording))[.size] as? Int)
        XCTAssertGreaterThan(size, 8_000_000)
        let relay = try startRelay(daemon)
        let cookie = try redeem(relay)
        let media = "\(relay.prefix)/v1/recordings/\(recording.id)/media"
        XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: cookie), 200)
        Thread.sleep(forTimeInterval: 0.5)
        let before = try residentKB(relay.pid)
        var unread: [RawConnection] = []
        for _ in 0..<8 {
            let c = try RawConnection(port: relay.port)
            try c.send("GET \(media) HTTP/1.1\r\nHost: 127.0.0.1:\(relay.port)\r\nCookie: \(cookie)\r\n\r\n")
            unread.append(c)
        }
        Thread.sleep(forTimeInterval: 4)
        let after = try residentKB(relay.pid)
        print("recctl ui resident: \(before) kB, then \(after) kB with 8 unread responses of \(size) bytes")
        XCTAssertLessThan(after - before, 10_000, "recctl ui grew from \(before) to \(after) kB for 8 unread responses of \(size) bytes")
        // Read now, each gets the whole file.
        for c in unread.prefix(2) {
            let head = try c.readHead()
            XCTAssertTrue(head.hasPrefix("HTTP/1.1 200"), head)
            XCTAssertEqual(try c.drain(size, timeout: 60), size)
        }
    }

    /// The other way: a request body that recd does not take (recd stopped) is not read from the
    /// browser faster than recd's socket takes it, so recctl ui does not hold it.
    func testAnUntakenRequestBodyDoesNotGrowTheRelay() throws {
        let daemon = try startDaemon()
        let relay = try startRelay(daemon)
        let cookie = try redeem(relay)
        XCTAssertEqual(try status(relay, "\(relay.prefix)/v1/status", cookie: cookie), 200)
        Thread.sleep(forTimeInterval: 0.5)
        let before = try residentKB(relay.pid)
        let recd = try XCTUnwrap(daemon.process).processIdentifier
        defer { kill(recd, SIGCONT) }
        XCTAssertTrue(Tools.stop(recd), "recd's threads did not all stop")
        let total = 100 << 20
        let c = try RawConnection(port: relay.port)
        try c.send("POST \(relay.prefix)/v1/import HTTP/1.1\r\nHost: 127.0.0.1:\(relay.port)\r\nCookie: \(cookie)\r\n"
                   + "Origin: http://127.0.0.1:\(relay.port)\r\nContent-Type: application/octet-stream\r\nContent-Length: \(total)\r\n\r\n")
        let sent = c.sendUntilStalled(total, stall: 2)
        let after = try residentKB(relay.pid)
        print("recctl ui resident: \(before) kB, then \(after) kB with \(sent) bytes of a body recd does not read")
        XCTAssertLessThan(sent, 50 << 20, "recctl ui took the whole body although recd read none of it")
        XCTAssertLessThan(after - before, 10_000, "recctl ui grew from \(before) to \(after) kB holding a body for recd")
    }

    private func openDescriptors(_ pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    private func residentKB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
}

/// A plain TCP connection to 127.0.0.1 (blocking; reads wait with poll).
final class RawConnection {
    let fd: Int32
    /// Bytes read past the head.
    private var rest = Data()

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NSError(domain: "recd-tests", code: Int(errno)) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else {
            let e = errno
            close(fd)
            throw NSError(domain: "recd-tests", code: Int(e), userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(e))])
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw NSError(domain: "recd-tests", code: Int(errno)) }
            done += n
        }
    }

    /// Sends up to `total` bytes of zeros without blocking, until the peer has taken none for
    /// `stall` seconds: how many it took.
    func sendUntilStalled(_ total: Int, stall: TimeInterval) -> Int {
        let chunk = [UInt8](repeating: 0, count: 65536)
        var sent = 0
        while sent < total {
            let n = chunk.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, min($0.count, total - sent), Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 { sent += n; continue }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK else { break }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&p, 1, Int32(stall * 1000)) != 1 { break }
        }
        return sent
    }

    /// Up to `max` bytes, waiting up to `timeout` for the first; empty at the end of the stream.
    private func read(max: Int = 65536, timeout: TimeInterval) throws -> Data {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) == 1 else {
            throw NSError(domain: "recd-tests", code: 3, userInfo: [NSLocalizedDescriptionKey: "no answer in \(timeout) s"])
        }
        var buffer = [UInt8](repeating: 0, count: max)
        let n = recv(fd, &buffer, max, 0)
        return n > 0 ? Data(buffer[0..<n]) : Data()
    }

    /// The response head (up to the blank line).
    func readHead(timeout: TimeInterval = 10) throws -> String {
        var data = Data()
        while true {
            if let end = data.range(of: Data("\r\n\r\n".utf8)) {
                rest = data[end.upperBound...]
                return String(decoding: data[..<end.lowerBound], as: UTF8.self)
            }
            let more = try read(timeout: timeout)
            if more.isEmpty { return String(decoding: data, as: UTF8.self) }
            data += more
        }
    }

    /// `length` bytes of body after the head (fewer if the stream ends first).
    func body(_ length: Int, timeout: TimeInterval = 10) throws -> Data {
        var data = rest
        rest = Data()
        while data.count < length {
            let more = try read(timeout: timeout)
            if more.isEmpty { break }
            data += more
        }
        return data.prefix(length)
    }

    /// Reads `expected` body bytes (or to the end of the stream): how many came after the head.
    func drain(_ expected: Int, timeout: TimeInterval) throws -> Int {
        var count = rest.count
        rest = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && count < expected {
            let more = try read(timeout: max(0.1, deadline.timeIntervalSinceNow))
            if more.isEmpty { return count }
            count += more.count
        }
        return count
    }

    /// Whether the other side closed (end of stream or reset) within `seconds`. Reads (and drops)
    /// anything it sent first.
    func closedByPeer(within seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = max(0, deadline.timeIntervalSinceNow)
            if poll(&p, 1, Int32(left * 1000)) == 1 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n == 0 || (n < 0 && errno != EAGAIN) { return true }
            }
        } while Date() < deadline
        return false
    }
}
