// Every end of a recording is told (issue 13): `recording.stopped` on the event stream and systemd's
// STATUS= back to idle, also when the stop's own steps fail.
import Foundation
import RecdAPI
import XCTest

final class EndsTests: XCTestCase {
    func testFailedDiscardAndAFinalizeThatGivesUpAreStillTold() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-ends-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let listener = try NotifyListener(directory: dir)
        defer { listener.close(); try? FileManager.default.removeItem(at: dir) }
        var env = pulse.environment
        env["NOTIFY_SOCKET"] = listener.path
        try pulse.play(try Tones.sine())
        let daemon = try Daemon(environment: env)
        defer { daemon.cleanUp() }
        try daemon.start()
        XCTAssertNotNil(listener.waitFor("READY=1"))
        let events = try EventListener(daemon, types: [.recordingStopped])
        defer { events.stop() }
        let recordings = daemon.dataDir.appendingPathComponent("Recordings").path
        func lock(_ on: Bool) throws {
            let r = try Tools.run("chattr", [on ? "+i" : "-i", recordings])
            if on && r.status != 0 { throw Skip.because("chattr +i is not supported here: \(r.stderr)") }
        }
        defer { try? lock(false) }

        // 1. A discard that cannot remove the take (Recordings/ immutable: the take cannot be renamed
        //    aside): the stop fails, the take is kept as pending — and the end is told.
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "Stuck").status, 0)
        XCTAssertNotNil(listener.waitFor("STATUS=recording 'Stuck'"))
        Thread.sleep(forTimeInterval: 1)
        try lock(true)
        let failed = try daemon.recctl("record", "stop", "--discard")
        XCTAssertEqual(failed.status, 1, failed.stdout)
        try lock(false)
        var told: [RecordingStoppedEvent] = []
        for _ in 0..<50 {
            told = try events.events().compactMap { if case .recordingStopped(let e) = $0.payload { e } else { nil } }
            if !told.isEmpty { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let first = try XCTUnwrap(told.first, "no recording.stopped after a failed discard")
        XCTAssertEqual(first.recording?.state, .pending, "kept rather than lost")
        XCTAssertFalse(first.discarded)
        XCTAssertTrue(first.error?.contains("did not complete") == true, "\(String(describing: first.error))")
        XCTAssertNotNil(listener.waitFor("STATUS=idle", timeout: 5).map { _ in () }, "STATUS= still says recording")
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)

        // 2. A finalize that gives up (no room for the remux's temporary file in an immutable
        //    Recordings/): the fragmented file is kept, the recording is pending, and the end is told.
        let before = listener.messages.count
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "Unfinished").status, 0)
        Thread.sleep(forTimeInterval: 1)
        try lock(true)
        let kept = try daemon.recctl("--json", "record", "stop")
        try lock(false)
        XCTAssertEqual(kept.status, 0, kept.stderr)
        for _ in 0..<50 where try events.events().count < 2 { Thread.sleep(forTimeInterval: 0.1) }
        let second = try XCTUnwrap(try events.events().dropFirst().first.flatMap { if case .recordingStopped(let e) = $0.payload { e } else { nil } })
        XCTAssertEqual(second.recording?.title, "Unfinished")
        XCTAssertEqual(second.recording?.state, .pending)
        XCTAssertTrue(listener.messages.dropFirst(before).contains { $0.message.contains("STATUS=idle") })
        let file = try XCTUnwrap(second.recording?.file)
        XCTAssertNotNil(try Probe.audio(daemon.dataDir.appendingPathComponent(file).path).duration, "the kept file plays")
    }
}
