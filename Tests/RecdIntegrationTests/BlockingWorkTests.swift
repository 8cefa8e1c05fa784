// Blocking work off the actors (issue 13): a repair and a delete-all of 50,000 recordings run on recd's
// blocking pool while status keeps answering and the systemd watchdog keeps being fed. Before, both ran
// on the Recorder actor's executor (one of the cooperative pool's two threads here): status waited for
// the recorder, and the watchdog — which pings only when both actors answer — went quiet for as long.
import Foundation
import RecdAPI
import XCTest

final class BlockingWorkTests: XCTestCase {
    static let rows = 50_000

    /// A data directory whose catalog (made by recd) holds `rows` saved recordings, their files hard
    /// links of one short AAC file.
    static func library(in dir: URL, environment: [String: String]) throws -> Daemon {
        let daemon = try Daemon(environment: environment, dir: dir)
        try daemon.start()   // creates the schema
        daemon.stop()
        let template = dir.appendingPathComponent("template.m4a").path
        let made = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.3",
                                            "-c:a", "aac", "-y", template])
        XCTAssertEqual(made.status, 0, made.stderr)
        let size = try FileManager.default.attributesOfItem(atPath: template)[.size] as? Int ?? 0
        let id = "printf('%08X-0000-4000-8000-%012X', i, i)"
        let sql = """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO recording (id, type, state, title, notes, createdAt, duration, sizeBytes, file, playCount, recovered, droppedFrames)
            SELECT \(id), 'audio', 'ready', 'Recording ' || i, '', strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || i || ' seconds'),
                   0.3, \(size), 'Recordings/audio_' || \(id) || '.m4a', 0, 0, 0 FROM n;
            """
        let inserted = try Tools.run("sqlite3", [daemon.dataDir.appendingPathComponent("catalog.sqlite").path, sql])
        XCTAssertEqual(inserted.status, 0, inserted.stderr)
        let recordings = daemon.dataDir.appendingPathComponent("Recordings").path
        for i in 1...rows {
            let name = String(format: "%@/audio_%08X-0000-4000-8000-%012X.m4a", recordings, i, i)
            guard link(template, name) == 0 else { throw NSError(domain: "recd-tests", code: 20, userInfo: [NSLocalizedDescriptionKey: "link \(name): errno \(errno)"]) }
        }
        return daemon
    }

    func testStatusAndTheWatchdogGoOnDuringARepairAndADeleteAllOf50000() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-blocking-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let listener = try NotifyListener(directory: dir)
        defer { listener.close() }
        var env = pulse.environment
        env["NOTIFY_SOCKET"] = listener.path
        env["WATCHDOG_USEC"] = "1000000"   // systemd would kill recd after 1 s without a ping; it pings every 500 ms
        let daemon = try Self.library(in: dir, environment: env)
        defer { daemon.cleanUp() }
        try daemon.start()
        XCTAssertNotNil(listener.waitFor("READY=1"))
        // Half of the files gone behind recd's back: the repair has 25,000 recordings to mark missing.
        let recordings = daemon.dataDir.appendingPathComponent("Recordings").path
        for i in stride(from: 1, through: Self.rows, by: 2) {
            unlink(String(format: "%@/audio_%08X-0000-4000-8000-%012X.m4a", recordings, i, i))
        }

        for (method, path, what) in [("POST", "/v1/check/repair", "repair"), ("DELETE", "/v1/recordings?confirm=all", "delete-all")] {
            let began = Date()
            let (long, reply) = try background(["-s", "-o", dir.appendingPathComponent("\(what).json").path, "-w", "%{http_code}",
                                                "--unix-socket", daemon.socket, "-X", method, "http://recd" + path])
            var answered: [(at: Date, seconds: Double)] = []
            while long.isRunning {
                let r = try Tools.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "--unix-socket",
                                               daemon.socket, "http://recd/v1/status"])
                let parts = r.stdout.split(separator: " ")
                XCTAssertEqual(parts.first, "200", r.stdout)
                if long.isRunning, let t = parts.last.flatMap({ Double($0) }) { answered.append((Date(), t)) }
            }
            long.waitUntilExit()
            let ended = Date()
            XCTAssertEqual(try String(contentsOf: reply, encoding: .utf8), "200", "\(what) failed: \(daemon.log.suffix(2000))")
            let took = ended.timeIntervalSince(began)
            print("\(what) of \(Self.rows): \(String(format: "%.2f", took)) s; status answered \(answered.count) times meanwhile, the slowest in \(String(format: "%.0f", (answered.map(\.seconds).max() ?? 0) * 1000)) ms")
            // Status was answered while the work ran, not only after it (a delete-all, one folder
            // swap and one transaction, lasts a few status requests: at least one).
            XCTAssertGreaterThanOrEqual(answered.count, what == "repair" ? 3 : 1, "\(what) took \(took) s and status was answered \(answered.count) times meanwhile")
            // The watchdog was fed throughout: no gap in which systemd would have killed recd. The
            // pings of the 0.6 s after the end count too: waited for (a delete-all now takes a
            // third of a second, less than the window before it).
            Thread.sleep(forTimeInterval: 0.7)
            let pings = listener.messages.filter { $0.message == "WATCHDOG=1" && $0.at >= began.addingTimeInterval(-0.6) && $0.at <= ended.addingTimeInterval(0.6) }
                .map(\.at)
            XCTAssertGreaterThanOrEqual(pings.count, 2, "watchdog pings during the \(what)")
            let gaps = zip(pings.dropFirst(), pings).map { $0.timeIntervalSince($1) }
            XCTAssertLessThan(gaps.max() ?? 0, 1.0, "a watchdog gap during the \(what)")
        }
        let repaired = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("repair.json"))) as? [String: Any]
        let marked = ((repaired?["repaired"] as? [String: Any])?["markedMissing"] as? [Any])?.count
        XCTAssertEqual(marked, Self.rows / 2)
        let deleted = try APIJSON.decoder().decode(DeleteAllResponse.self, from: Data(contentsOf: dir.appendingPathComponent("delete-all.json")))
        XCTAssertEqual(deleted.deletedRecordings, Self.rows)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
    }

    /// A process run in the background (curl), its `-w` output in a file.
    private func background(_ curlArgs: [String]) throws -> (Process, URL) {
        let out = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-bg-\(UUID().uuidString.prefix(6))")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tools.which("curl") ?? "/usr/bin/curl")
        p.arguments = curlArgs
        p.standardOutput = try FileHandle(forWritingTo: out)
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, out)
    }
}
