// Who may talk to recd: the socket's mode and group, then the peer-credential check (SO_PEERCRED).
import Foundation
import RecdAPI
import XCTest

final class AccessTests: XCTestCase {
    var pulse: PulseAudioServer!
    override func setUpWithError() throws {
        try XCTSkipIf(geteuid() != 0, "needs root, to run clients as other users with setpriv")
        try XCTSkipIf(Tools.which("setpriv") == nil, "setpriv (util-linux) is not installed")
        pulse = try PulseAudioServer()
    }
    override func tearDown() { pulse?.stop() }

    static var audioGID: String {
        String(getgrnam("audio")?.pointee.gr_gid ?? 29)
    }

    /// Runs a program as uid/gid 65534 (nobody) with `groups` as its supplementary groups.
    func asNobody(groups: [String], _ program: String, _ args: [String]) throws -> ProcessResult {
        let setpriv = ["--reuid=65534", "--regid=65534"] + (groups.isEmpty ? ["--clear-groups"] : ["--groups=" + groups.joined(separator: ",")])
        return try Tools.run("setpriv", setpriv + [program] + args, environment: pulse.environment)
    }

    func testPeersOutsideTheAllowedGroupGet403AndAreLoggedMembersAreServed() throws {
        // The filesystem lets everyone reach this socket (mode 666 in a 755 directory): the
        // credential check alone decides.
        let daemon = try Daemon(environment: pulse.environment, extraArgs: ["--socket-mode", "666", "--socket-group", "audio"])
        defer { daemon.cleanUp() }
        let run = URL(fileURLWithPath: daemon.socket).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try daemon.start()

        let refused = try asNobody(groups: [], Tools.recctl, ["--socket", daemon.socket, "status"])
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("uid 65534 may not use this recd") && refused.stderr.contains("group audio"), refused.stderr)
        let raw = try asNobody(groups: [], "curl", ["-s", "-w", "\n%{http_code}", "--unix-socket", daemon.socket, "http://recd/v1/status"])
        XCTAssertTrue(raw.stdout.hasSuffix("\n403"), raw.stdout)
        XCTAssertTrue(raw.stdout.contains("\"code\":\"forbidden\""), raw.stdout)
        XCTAssertTrue(daemon.log.contains("refused GET /v1/status from uid 65534 pid"), daemon.log)
        // A refused request changes nothing.
        XCTAssertEqual(try asNobody(groups: [], Tools.recctl, ["--socket", daemon.socket, "record", "start"]).status, 1)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)

        // A member of the group (supplementary, as login sessions have it) is served.
        let member = try asNobody(groups: [Self.audioGID], Tools.recctl, ["--socket", daemon.socket, "status"])
        XCTAssertEqual(member.status, 0, member.stderr)

        // Every change is logged with who asked.
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        XCTAssertEqual(try daemon.recctl("record", "stop", "--discard").status, 0)
        XCTAssertTrue(daemon.log.contains("POST /v1/record/start by uid 0 pid"), daemon.log)
        XCTAssertTrue(daemon.log.contains("POST /v1/record/stop by uid 0 pid"), daemon.log)
    }

    func testSocketGroupOwnsTheSocketAndTheDirectoryItMade() throws {
        let daemon = try Daemon(environment: pulse.environment, extraArgs: ["--socket-group", "audio"])
        defer { daemon.cleanUp() }
        try daemon.start()
        var st = stat()
        let dir = URL(fileURLWithPath: daemon.socket).deletingLastPathComponent().path
        XCTAssertEqual(stat(dir, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o750, "only the owner and the group may enter")
        XCTAssertEqual(String(st.st_gid), Self.audioGID)
        XCTAssertEqual(stat(daemon.socket, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o660)
        XCTAssertEqual(String(st.st_gid), Self.audioGID)
        // Someone outside the group cannot even reach the socket.
        let outsider = try asNobody(groups: [], Tools.recctl, ["--socket", daemon.socket, "status"])
        XCTAssertEqual(outsider.status, 3, outsider.stderr)
        let bad = try Tools.run(Tools.recd, ["--socket-group", "no-such-group-here", "--data-dir", daemon.dataDir.path])
        XCTAssertEqual(bad.status, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("no such group"), bad.stderr)
    }
}
