// No client can hoard recd's connections (issue 35 §3): a flood of half-sent requests from a peer the
// access check refuses, or from one member, leaves the owner served; heads that do not arrive and
// idle keep-alive connections are closed.
import Foundation
import RecdAPI
import XCTest

/// A python process that opens connections to a socket and holds them, as `setpriv` makes it (a
/// user, groups): each sends half a request head (no blank line) and waits.
final class ConnectionFlood {
    let process = Process()
    private let input = Pipe(), output = Pipe()

    /// How many connections recd closed at once (answered 503 before they asked, as soon as it
    /// accepted them, and closed).
    private(set) var closedAtOnce = 0

    static let script = """
        import socket, sys, select, time
        path, count = sys.argv[1], int(sys.argv[2])
        held = []
        for i in range(count):
            s = socket.socket(socket.AF_UNIX); s.connect(path)
            try: s.sendall(b"GET /v1/status HTTP/1.1\\r\\nHost: recd\\r\\n")
            except OSError: pass   # closed by recd already
            held.append(s)
        def closed():
            # Closed: the end of the stream, after whatever recd said first (its 503 for the dropped).
            n = 0
            for s in held:
                s.setblocking(False)
                try:
                    while s.recv(65536) != b"": pass
                    n += 1
                except BlockingIOError: pass
                except OSError: n += 1
            return n
        # Until recd has accepted them all: the count of closed ones holds still for 0.3 s.
        now, before = closed(), -1
        for _ in range(20):
            if now == before: break
            time.sleep(0.3); before, now = now, closed()
        print("held", len(held), now, flush=True)
        select.select([sys.stdin], [], [], 120)   # until the test closes stdin
        print("closed", closed(), flush=True)
        """

    /// Starts the flood and returns once every connection is open and has sent its bytes.
    init(socket: String, count: Int, setpriv: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Tools.which("setpriv")!)
        process.arguments = setpriv + ["/usr/bin/python3", "-c", Self.script, socket, String(count)]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        let line = readLine().split(separator: " ")
        guard line.count == 3, line[0] == "held", line[1] == "\(count)", let closed = Int(line[2]) else {
            process.terminate()
            throw NSError(domain: "recd-tests", code: 1, userInfo: [NSLocalizedDescriptionKey: "the flood said \(line)"])
        }
        closedAtOnce = closed
    }

    private func readLine() -> String {
        var bytes = Data()
        while true {
            let chunk = output.fileHandleForReading.readData(ofLength: 1)
            if chunk.isEmpty || chunk == Data("\n".utf8) { break }
            bytes.append(chunk)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Ends the flood; how many of its connections recd had closed by then.
    @discardableResult
    func end() -> Int {
        try? input.fileHandleForWriting.close()
        let line = readLine()
        process.waitUntilExit()
        return Int(line.split(separator: " ").last ?? "") ?? -1
    }
}

final class HoardTests: XCTestCase {
    var pulse: PulseAudioServer!
    var daemon: Daemon!
    override func setUpWithError() throws {
        try Skip.if(geteuid() != 0, "needs root, to run clients as other users with setpriv")
        try Skip.if(Tools.which("setpriv") == nil, "setpriv (util-linux) is not installed")
        pulse = try PulseAudioServer()
    }
    override func tearDown() { daemon?.cleanUp(); pulse?.stop() }

    /// recd with a socket everyone may reach (mode 666 in a 755 directory): only the credential
    /// check tells members from others.
    func startDaemon(_ extra: [String] = []) throws {
        daemon = try Daemon(environment: pulse.environment, extraArgs: ["--socket-mode", "666", "--socket-group", "audio"] + extra)
        let run = URL(fileURLWithPath: daemon.socket).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try daemon.start()
    }

    static let outsider = ["--reuid=65534", "--regid=65534", "--clear-groups"]
    static var member: [String] { ["--reuid=65534", "--regid=65534", "--groups=\(AccessTests.audioGID)"] }

    func testARefusedPeersFloodTakesNoSlotAndTheOwnerIsServed() throws {
        try startDaemon()
        // More half-sent requests than the 64 slots, from a peer the access check refuses.
        let flood = try ConnectionFlood(socket: daemon.socket, count: 70, setpriv: Self.outsider)
        defer { flood.end() }
        let owner = try daemon.recctl("status")
        XCTAssertEqual(owner.status, 0, "the owner is served during the flood: \(owner.stderr)")
        // Its share (16) and as many waiting to hear why stay open; the rest are closed at once.
        XCTAssertEqual(flood.closedAtOnce, 70 - 32)
    }

    func testOneMemberHoldsAtMostItsShareOfTheSlots() throws {
        try startDaemon()
        let flood = try ConnectionFlood(socket: daemon.socket, count: 20, setpriv: Self.member)
        defer { flood.end() }
        XCTAssertEqual(flood.closedAtOnce, 0)
        let owner = try daemon.recctl("status")
        XCTAssertEqual(owner.status, 0, "the owner is served during the flood: \(owner.stderr)")
        // The member itself is over its share: a clear 503 saying so.
        let more = try Tools.run("setpriv", Self.member + ["curl", "-s", "-w", "\n%{http_code}", "--unix-socket", daemon.socket,
                                                           "http://recd/v1/status"])
        XCTAssertTrue(more.stdout.hasSuffix("\n503"), more.stdout)
        XCTAssertTrue(more.stdout.contains("too_many_connections") && more.stdout.contains("16 connections from uid 65534"), more.stdout)
        // Another member (another uid) still has slots.
        let other = try Tools.run("setpriv", ["--reuid=65533", "--regid=65534", "--groups=\(AccessTests.audioGID)",
                                              Tools.recctl, "--socket", daemon.socket, "status"], environment: pulse.environment)
        XCTAssertEqual(other.status, 0, other.stderr)
    }

    func testAFloodOfManyMoreConnectionsFromOneMemberIsClosedAtOnceAndTheOwnerIsServed() throws {
        try startDaemon()
        let flood = try ConnectionFlood(socket: daemon.socket, count: 200, setpriv: Self.member)
        defer { flood.end() }
        XCTAssertEqual(flood.closedAtOnce, 200 - 32, "16 held and 16 waiting for their 503; the rest closed at once")
        XCTAssertEqual(try daemon.recctl("status").status, 0, "the owner is served during the flood")
    }
}

/// The head and keep-alive timeouts, short here (1 s and 3 s) so that the test is quick.
final class ConnectionTimeoutTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--request-head-timeout", "1", "--keep-alive-timeout", "3"] }

    func testHeadsThatDoNotArriveAndIdleConnectionsAreClosedWhileRequestsInProgressAreNot() throws {
        // Each case reports how long recd took to close the connection (None: still open after 5 s).
        let script = """
            import http.client, json, socket, sys, time
            path = sys.argv[1]
            class UnixHTTP(http.client.HTTPConnection):
                def connect(self):
                    self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(path)
            def closed_after(s, limit=5.0):
                t0 = time.monotonic(); s.settimeout(limit)
                try:
                    while s.recv(65536) != b"": pass
                except socket.timeout: return None
                except OSError: pass
                return round(time.monotonic() - t0, 2)
            def served(conn):
                conn.request("GET", "/v1/status", headers={"Host": "recd"})
                r = conn.getresponse(); r.read(); return r.status
            out = {}
            s = socket.socket(socket.AF_UNIX); s.connect(path)
            out["silent"] = closed_after(s)
            s = socket.socket(socket.AF_UNIX); s.connect(path)
            s.sendall(b"GET /v1/status HTTP/1.1\\r\\nHost: recd\\r\\n")
            out["halfHead"] = closed_after(s)
            c = UnixHTTP("recd"); out["first"] = served(c)
            out["idle"] = closed_after(c.sock)
            # Idle longer than the head timeout: still served (idle time is the keep-alive's).
            c = UnixHTTP("recd"); served(c); time.sleep(1.5); out["afterIdle"] = served(c)
            # After an idle spell, a head that begins and stalls has the head timeout from its first byte
            # (1 s), not what was left of the keep-alive's (2.5 s).
            time.sleep(0.5); c.sock.sendall(b"GET /v1/status HTTP/1.1\\r\\n")
            out["halfHeadAfterIdle"] = closed_after(c.sock)
            # An event stream outlives both timeouts: a request in progress is never cut.
            e = socket.socket(socket.AF_UNIX); e.connect(path)
            e.sendall(b"GET /v1/events HTTP/1.1\\r\\nHost: recd\\r\\n\\r\\n")
            out["events"] = closed_after(e, 4.0)
            print(json.dumps(out))
            """
        let r = try Tools.run("/usr/bin/python3", ["-c", script, daemon.socket])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], r.stdout)
        // Not before the timeout; the slack after it is for a loaded machine, and below the other timeout.
        func closed(_ key: String, near seconds: Double) {
            guard let t = out[key] as? Double else { return XCTFail("\(key): not closed within 5 s (\(r.stdout))") }
            XCTAssertTrue((seconds - 0.2)...(seconds + 1.2) ~= t, "\(key): closed after \(t) s, expected about \(seconds)")
        }
        closed("silent", near: 1)
        closed("halfHead", near: 1)
        XCTAssertEqual(out["first"] as? Int, 200)
        closed("idle", near: 3)
        XCTAssertEqual(out["afterIdle"] as? Int, 200, "an idle spell longer than the head timeout keeps the connection")
        closed("halfHeadAfterIdle", near: 1)
        XCTAssertTrue(out["events"] is NSNull, "the event stream stays open: \(r.stdout)")
        XCTAssertEqual(try daemon.recctl("status").status, 0)
    }

    func testTimeoutsOutsideTheirRangeAreRefusedAtStart() throws {
        for (option, value) in [("--request-head-timeout", "0"), ("--keep-alive-timeout", "nan"), ("--keep-alive-timeout", "99999")] {
            let bad = try Tools.run(Tools.recd, [option, value, "--data-dir", daemon.dataDir.path, "--socket", daemon.socket + ".x"])
            XCTAssertEqual(bad.status, 64, bad.stderr)
            XCTAssertTrue(bad.stderr.contains("\(option) must be 0.1...3600 seconds"), bad.stderr)
        }
    }
}
