// Limits: concurrent connections and header size, each with a clear error, while a client already
// connected keeps being served.
import Foundation
import RecdAPI
import XCTest

final class LimitsTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--max-connections", "4"] }

    func testAFloodOfConnectionsGetsClearErrorsWhileAConnectedClientIsServed() throws {
        // One python process: a keep-alive client, then a flood of 12 connections held open, each
        // sending a request; the client asks again during the flood and after it.
        let script = """
            import http.client, json, socket, sys
            path = sys.argv[1]
            class UnixHTTP(http.client.HTTPConnection):
                def connect(self):
                    self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(path)
            def get(conn):
                conn.request("GET", "/v1/status", headers={"Host": "recd"})
                r = conn.getresponse(); body = r.read()
                return r.status, body.decode()
            client = UnixHTTP("recd"); out = {"before": get(client)[0]}
            flood = []
            for i in range(12):
                c = UnixHTTP("recd"); c.connect(); flood.append(c)
            answers = []
            for c in flood:
                try: answers.append(get(c))
                except Exception as e: answers.append((0, str(e)))
            out["flood"] = [a[0] for a in answers]
            out["refusal"] = next((a[1] for a in answers if a[0] == 503), "")
            out["during"] = get(client)[0]
            for c in flood: c.close()
            import time; time.sleep(0.3)
            out["after"] = get(UnixHTTP("recd"))[0]
            print(json.dumps(out))
            """
        let r = try Tools.run("python3", ["-c", script, daemon.socket])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(out["before"] as? Int, 200)
        let flood = try XCTUnwrap(out["flood"] as? [Int])
        // 4 slots: the client holds one, three flood connections are served, the other nine refused.
        XCTAssertEqual(flood.filter { $0 == 200 }.count, 3, "\(flood)")
        XCTAssertEqual(flood.filter { $0 == 503 }.count, 9, "\(flood)")
        let refusal = try XCTUnwrap(out["refusal"] as? String)
        XCTAssertTrue(refusal.contains("too_many_connections") && refusal.contains("limit of 4 connections"), refusal)
        XCTAssertEqual(out["during"] as? Int, 200, "the connected client is still served")
        XCTAssertEqual(out["after"] as? Int, 200, "slots come back when connections close")
    }

    func testOversizedHeadersAreRefusedAndTheDaemonGoesOn() throws {
        let big = String(repeating: "x", count: 100_000)
        let r = try Tools.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", daemon.socket,
                                       "-H", "X-Big: \(big)", "http://recd/v1/status"])
        XCTAssertEqual(r.stdout, "400")
        XCTAssertEqual(try daemon.recctl("status").status, 0)
        // An oversized body: 413 with the limit (as before), and nothing changed.
        let body = "{\"title\": \"\(String(repeating: "y", count: 70_000))\"}"
        let (code, text) = try daemon.curl("POST", "/v1/record/start", body: body)
        XCTAssertEqual(code, 413)
        XCTAssertTrue(text.contains("payload_too_large"), text)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
    }

    /// Broken framing and an ambiguous Host are the client's fault: 400, not 500, and not served.
    func testABrokenChunkSizeAndTwoHostsAre400() throws {
        // A route that reads its body (an edit, an import) meets a chunk size that is no hexadecimal
        // number: 400 malformed_request (it was 500 internal_error), and the connection closes, with
        // no second answer, since nothing after it can be read as a request.
        for path in ["/v1/recordings/ABCD", "/v1/recordings/import?name=a.wav"] {
            let method = path.hasSuffix("ABCD") ? "PATCH" : "POST"
            let (answers, closed) = try exchange("\(method) \(path) HTTP/1.1\r\nHost: recd\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                 + "zz\r\nabc\r\n0\r\n\r\nGET /v1/status HTTP/1.1\r\nHost: recd\r\n\r\n")
            XCTAssertEqual(answers.map(\.status), [400], "\(method) \(path): \(answers)")
            XCTAssertTrue(answers.first?.body.contains("\"malformed_request\"") == true, "\(answers)")
            XCTAssertTrue(answers.first?.head.lowercased().contains("connection: close") == true, "\(answers)")
            XCTAssertTrue(closed, "the connection stays open after a broken chunk")
        }
        // Two Host headers: which one was meant is not recd's to guess (it served the first).
        let (twice, _) = try exchange("GET /v1/status HTTP/1.1\r\nHost: recd\r\nHost: elsewhere\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(twice.map(\.status), [400], "\(twice)")
        XCTAssertTrue(twice.first?.body.contains("more than one Host header") == true, "\(twice)")
        let (once, _) = try exchange("GET /v1/status HTTP/1.1\r\nHost: recd\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(once.map(\.status), [200], "\(once)")
        XCTAssertNotNil(daemon.process, "recd is still running")
    }

    /// While the owner's own clients fill every slot, recctl says recd is busy (exit 4), not that it
    /// is not reachable and should be started (exit 3): for its 503, for the 503 a connection past
    /// the waiting refusals now gets at once (it was closed unanswered: "connection reset"), and for a
    /// socket whose queue of connections is full (connect says EAGAIN; recctl's blocking connect
    /// waited for ever under a stopped recd).
    func testRecctlSaysRecdIsBusyWhenItTakesNoMoreConnections() throws {
        // 4 slots (--max-connections 4), held by the owner's connections that say nothing.
        var held = try (0..<4).map { _ in try UnixConnection(daemon.socket) }
        Thread.sleep(forTimeInterval: 0.3)
        var r = try daemon.recctl("status")
        XCTAssertEqual(r.status, 4, "\(r.stdout) \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("recd is busy: serving its limit of 4 connections"), r.stderr)
        XCTAssertFalse(r.stderr.contains("not reachable"), r.stderr)
        r = try daemon.recctl("--json", "status")
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertTrue(r.stdout.contains("\"too_many_connections\""), r.stdout)

        // 16 more waiting for their 503: the next one is answered at once, and recctl says busy.
        held += try (0..<16).map { _ in try UnixConnection(daemon.socket) }
        Thread.sleep(forTimeInterval: 0.3)
        r = try daemon.recctl("status")
        XCTAssertEqual(r.status, 4, "\(r.stdout) \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("recd is busy"), r.stderr)
        held.removeAll()
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(try daemon.recctl("status").status, 0, "slots come back when connections close")

        // recd stopped: nothing is accepted, and the socket's queue fills up.
        let pid = try XCTUnwrap(daemon.process).processIdentifier
        // Every thread stopped before the queue is filled: one still running could accept a
        // connection after the fill, and recctl would then connect and wait for an answer.
        defer { kill(pid, SIGCONT) }
        XCTAssertTrue(Tools.stop(pid), "recd's threads did not all stop")
        var queued: [UnixConnection] = []
        while let c = try UnixConnection(daemon.socket, blocking: false) { queued.append(c) }
        XCTAssertGreaterThan(queued.count, 0)
        for args in [["status"], ["events"]] {
            let started = Date()
            r = try daemon.recctl(args)
            XCTAssertEqual(r.status, 4, "recctl \(args): \(r.stdout) \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("recd is busy at \(daemon.socket): its queue of connections waiting to be accepted is full"),
                          r.stderr)
            XCTAssertLessThan(Date().timeIntervalSince(started), 5, "recctl \(args) waited on a full queue")
        }
        kill(pid, SIGCONT)
        queued.removeAll()
        // recd now accepts the queued connections (closed by now) and lets them go: served again after.
        var served = false
        for _ in 0..<50 where !served {
            served = try daemon.recctl("status").status == 0
            if !served { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(served, "served again once recd accepts")
    }

    /// Sends `request` on a connection of its own and reads every response until the connection
    /// closes or is quiet for a second: (status, head, body) each, and whether it was closed.
    private func exchange(_ request: String) throws -> ([(status: Int, head: String, body: String)], closed: Bool) {
        let c = try XCTUnwrap(try UnixConnection(daemon.socket))
        c.send(request)
        let (bytes, closed) = c.readAll(quiet: 1)
        var answers: [(Int, String, String)] = []
        var rest = Substring(String(decoding: bytes, as: UTF8.self))
        while let end = rest.range(of: "\r\n\r\n") {
            let head = String(rest[..<end.lowerBound])
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let body = rest[end.upperBound...].utf8.prefix(length)
            answers.append((Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0, head, String(decoding: body, as: UTF8.self)))
            rest = Substring(String(decoding: rest[end.upperBound...].utf8.dropFirst(length), as: UTF8.self))
        }
        return (answers, closed)
    }
}

/// A connection to a Unix socket, closed when dropped.
final class UnixConnection {
    let fd: Int32

    /// Connected (blocking); with `blocking: false`, nil when connect(2) says EAGAIN (the listener's
    /// queue is full).
    init?(_ path: String, blocking: Bool = true) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | (blocking ? 0 : Int32(SOCK_NONBLOCK.rawValue)), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else {
            let e = errno
            close(fd)
            if !blocking && e == EAGAIN { return nil }
            throw NSError(domain: "recd-tests", code: Int(e), userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(e))])
        }
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            done += n
        }
    }

    /// Everything the peer sends until it closes (true) or says nothing for `quiet` seconds (false).
    func readAll(quiet: TimeInterval) -> (Data, closed: Bool) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(quiet * 1000)) == 1 else { return (data, false) }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return (data, true) }
            data.append(contentsOf: buffer[0..<n])
        }
    }
}
