// kill -9 at random moments of every state change, then a restart: nothing may be lost or left
// half-done. RECD_CRASH_ITERATIONS (default 20: about a minute of the suite) and RECD_CRASH_SEED pick the run;
// scripts/crash-test.sh runs 500.
import Foundation
import RecdAPI
import XCTest

/// SplitMix64: a small seeded generator, so a failing run can be replayed with its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

final class CrashTests: DaemonTestCase {
    enum Operation: CaseIterable { case record, pause, stop, save, discard, delete, deleteAll, edit, play, deletePlaying, trim, trimAsNew, importFile }

    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    func testKill9AtRandomMomentsLosesNothing() throws {
        let env = ProcessInfo.processInfo.environment
        let iterations = Int(env["RECD_CRASH_ITERATIONS"] ?? "") ?? 20
        let seed = UInt64(env["RECD_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max / 2)
        var rng = SeededGenerator(state: seed)
        print("crash test: \(iterations) iterations, RECD_CRASH_SEED=\(seed)")
        try pulse.play(try Tones.sine(seconds: 600))
        var counts: [String: Int] = [:]

        for iteration in 1...iterations {
            // Keep the library small and give every operation something to work on.
            var before = try daemon.recctlJSON(RecordingList.self, "list", "--limit", "1000").recordings
            if before.count > 8 {
                XCTAssertEqual(try daemon.recctl("delete", "--all", "--yes").status, 0)
                before = []
            }
            // Each format is written, killed, salvaged, trimmed and deleted alike.
            let format = RecordingFormat.allCases.randomElement(using: &rng)!
            let formatArgs = ["--format", format.rawValue]
            for _ in 0..<max(0, 2 - before.filter({ $0.state == .ready }).count) {
                try record(seconds: 0.3, startArgs: formatArgs, stopArgs: ["--save"])
            }
            if !before.contains(where: { $0.state == .pending }) { try record(seconds: 0.3, startArgs: formatArgs) }
            before = try daemon.recctlJSON(RecordingList.self, "list", "--limit", "1000").recordings
            let op = Operation.allCases.randomElement(using: &rng)!
            counts["\(op)", default: 0] += 1
            counts[format.rawValue, default: 0] += 1
            let ready = before.filter { $0.state == .ready }
            let pending = before.filter { $0.state == .pending }
            var mayVanish = Set<UUID>()     // saved recordings this operation is allowed to remove
            var recordedSince: Date?        // for salvage: when capture began
            var beforePause: Double?        // for salvage: seconds recorded before a pause
            var trimmed: (Recording, Double)?   // a trim in flight: the recording and the cut's length
            var played: UUID?               // the one recording whose play count may rise (by one)
            let delayMs = Int.random(in: 0...400, using: &rng)
            let args: [String]
            switch op {
            case .record:
                XCTAssertEqual(try daemon.recctl(["record", "start"] + formatArgs).status, 0)
                recordedSince = Date()
                Thread.sleep(forTimeInterval: Double(Int.random(in: 1200...2500, using: &rng)) / 1000)
                args = []
            case .pause:
                // Killed while paused, or while the resume is in flight: what came before the pause
                // is kept (the sound after a resume may be too).
                XCTAssertEqual(try daemon.recctl(["record", "start"] + formatArgs).status, 0)
                let since = Date()
                Thread.sleep(forTimeInterval: Double(Int.random(in: 1200...2500, using: &rng)) / 1000)
                XCTAssertEqual(try daemon.recctl("record", "pause").status, 0)
                beforePause = Date().timeIntervalSince(since)
                recordedSince = since
                args = rng.next() % 2 == 0 ? [] : ["record", "resume"]
            case .stop:
                XCTAssertEqual(try daemon.recctl(["record", "start"] + formatArgs).status, 0)
                recordedSince = Date()
                Thread.sleep(forTimeInterval: 1.2)
                args = ["record", "stop", rng.next() % 2 == 0 ? "--save" : "--discard"]
            case .save:
                args = ["save", pending[0].id.uuidString, "--title", "Saved in iteration \(iteration)"]
            case .discard:
                args = ["discard", pending[0].id.uuidString, "--yes"]
            case .delete:
                let victim = ready.randomElement(using: &rng)!
                mayVanish.insert(victim.id)
                args = ["delete", "--yes", victim.id.uuidString]
            case .deleteAll:
                mayVanish.formUnion(ready.map(\.id))
                args = ["delete", "--all", "--yes"]
            case .edit:
                args = ["edit", ready[0].id.uuidString, "--notes", "edited in iteration \(iteration)"]
            case .trim, .trimAsNew:
                // Killed while the cut is written, committed or renamed: afterwards the recording is
                // the old one or the cut one, whole (checked below), and an added copy has its file.
                let victim = ready.randomElement(using: &rng)!
                trimmed = (victim, (victim.duration ?? 0) / 2)
                args = ["trim", victim.id.uuidString, "--end", String(format: "%.3f", (victim.duration ?? 0) / 2)]
                    + (op == .trimAsNew ? ["--as-new"] : [])
            case .importFile:
                // Killed while the file arrives, is encoded, committed or renamed: afterwards it is
                // in the library whole (a ready recording with its file) or not at all.
                let wav = daemon.dir.appendingPathComponent("import-\(iteration).wav").path
                let made = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                                    "sine=frequency=\(300 + iteration):duration=8", wav])
                XCTAssertEqual(made.status, 0, made.stderr)
                args = ["import", wav] + formatArgs
            case .play:
                // Killed while playing, or while the play (or its stop, which counts) is in flight.
                played = ready[0].id
                if rng.next() % 2 == 0 {
                    XCTAssertEqual(try daemon.recctl("play", ready[0].id.uuidString).status, 0)
                    args = ["playback", "stop"]
                } else {
                    args = ["play", ready[0].id.uuidString]
                }
            case .deletePlaying:
                // Deleting what plays: the playback ends uncounted, then the file and row go.
                let victim = ready.randomElement(using: &rng)!
                mayVanish.insert(victim.id)
                played = victim.id   // a short take may play to the end (and count) before the delete
                XCTAssertEqual(try daemon.recctl("play", victim.id.uuidString).status, 0)
                args = ["delete", "--yes", victim.id.uuidString]
            }
            // The request is in flight when the daemon is killed.
            let client = Process()
            client.executableURL = URL(fileURLWithPath: Tools.recctl)
            client.arguments = ["--socket", daemon.socket] + args
            client.environment = daemon.environment
            client.standardOutput = FileHandle.nullDevice
            client.standardError = FileHandle.nullDevice
            if !args.isEmpty { try client.run() }
            Thread.sleep(forTimeInterval: Double(delayMs) / 1000)
            let killedAt = Date()
            daemon.kill9()
            if !args.isEmpty { client.waitUntilExit() }
            try daemon.start()

            // Invariants after recovery.
            let check = try daemon.recctlJSON(ConsistencyReport.self, "check")
            XCTAssertTrue(check.isConsistent, "iteration \(iteration) (\(op), \(delayMs) ms, seed \(seed)): \(check)")
            XCTAssertEqual(check.missing, [], "iteration \(iteration): a file went missing")
            let after = try daemon.recctlJSON(RecordingList.self, "list", "--limit", "1000").recordings
            let afterByID = Dictionary(uniqueKeysWithValues: after.map { ($0.id, $0) })
            for r in ready where !mayVanish.contains(r.id) {
                XCTAssertEqual(afterByID[r.id]?.state, .ready, "iteration \(iteration) (\(op)): saved recording \(r.id) lost")
            }
            for r in ready {
                guard let now = afterByID[r.id] else { continue }
                // A play counts once or (killed before it ended) not at all; nothing else moves a count.
                let allowed = r.id == played ? r.playCount...(r.playCount + 1) : r.playCount...r.playCount
                XCTAssertTrue(allowed.contains(now.playCount),
                              "iteration \(iteration) (\(op)): play count of \(r.id) went \(r.playCount) → \(now.playCount)")
            }
            if let (victim, cut) = trimmed, let now = afterByID[victim.id] {
                // Either the old recording or the trimmed one, whole: the row and the file agree.
                let path = daemon.path(of: now)
                let fileDuration = try XCTUnwrap(try Probe.audio(path).duration, "iteration \(iteration): \(path) unreadable")
                XCTAssertEqual(now.duration ?? -1, fileDuration, accuracy: 0.03, "iteration \(iteration) (\(op)): row and file disagree")
                let old = victim.duration ?? 0
                XCTAssertTrue(abs(fileDuration - old) < 0.03 || abs(fileDuration - cut) < 0.03,
                              "iteration \(iteration) (\(op)): \(fileDuration) s is neither the old \(old) s nor the cut \(cut) s")
                let decodes = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
                XCTAssertEqual(decodes.status, 0, "iteration \(iteration): \(decodes.stderr)")
            }
            if op == .importFile {
                // Nothing half-imported: the new rows (besides a salvage) are ready with their files,
                // and nothing is left in .uploads/.
                for r in after where !before.contains(where: { $0.id == r.id }) && !r.recovered {
                    XCTAssertEqual(r.state, .ready, "iteration \(iteration): an import left \(r.state)")
                }
                let uploads = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent(".uploads").path)
                XCTAssertEqual(uploads, [], "iteration \(iteration)")
            }
            if op == .deleteAll {
                // All or nothing.
                let survivors = ready.filter { afterByID[$0.id] != nil }.count
                XCTAssertTrue(survivors == 0 || survivors == ready.count,
                              "iteration \(iteration): delete-all left \(survivors) of \(ready.count)")
            }
            if let since = recordedSince, let salvaged = daemon.recoveredSince(before: before, after: after) {
                let recorded = killedAt.timeIntervalSince(since)
                let path = daemon.path(of: salvaged)
                let decoded = try AudioAnalysis.of(path)
                if let beforePause {
                    // Written at the pause: all of it but the encoder's delay (and the request's own time).
                    XCTAssertGreaterThan(decoded.duration, beforePause - 0.3,
                                         "iteration \(iteration): salvaged \(decoded.duration) s of the \(beforePause) s before the pause")
                } else {
                    // Lost at most: the fragment the muxer held (1 s), the block in recd's ring (0.34 s),
                    // the request's own time and the encoder's delay.
                    XCTAssertGreaterThan(decoded.duration, recorded - 1.8,
                                         "iteration \(iteration): salvaged \(decoded.duration) s of \(recorded) s")
                }
                XCTAssertEqual(salvaged.format, format, "iteration \(iteration)")
                XCTAssertEqual(try Probe.audio(path).codec, format.rawValue, "iteration \(iteration)")
                let playable = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
                XCTAssertEqual(playable.status, 0, "iteration \(iteration): salvaged file does not play: \(playable.stderr)")
            }
            for r in after {
                XCTAssertTrue(FileManager.default.fileExists(atPath: daemon.path(of: r)),
                              "iteration \(iteration): \(r.id) has no file")
            }
        }
        print("crash test: operations \(counts.sorted { $0.key < $1.key })")
    }
}

extension Daemon {
    /// The recording salvaged by the last recovery, if it is new since `before`.
    func recoveredSince(before: [Recording], after: [Recording]) -> Recording? {
        let old = Set(before.map(\.id))
        return after.first { !old.contains($0.id) && $0.recovered }
    }
}
