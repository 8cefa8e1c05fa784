// An idle recd sleeps (issue 36): the executor that puts Swift concurrency on NIO's event loops
// (`ConcurrencyOnEventLoops`) is chosen through an SPI of the runtime, not a public API, and a
// toolchain upgrade could make it stop taking effect (Swift 6.3 did, for the hooks recd used before).
// Counted, not timed: context switches of all recd's threads.
import Foundation
import XCTest

final class IdleTests: DaemonTestCase {
    /// Voluntary and involuntary context switches so far of each thread of `pid`, by thread id, with
    /// its name.
    func contextSwitches(_ pid: Int32) throws -> [String: (name: String, switches: Int)] {
        var threads: [String: (name: String, switches: Int)] = [:]
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            // A thread that ended since the listing has no status: it switches no more.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            var name = "", switches = 0
            for line in status.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2 else { continue }
                if parts[0] == "Name" { name = parts[1] }
                if parts[0].hasSuffix("ctxt_switches") { switches += Int(parts[1]) ?? 0 }
            }
            threads[task] = (name, switches)
        }
        return threads
    }

    /// Over 10 s with no client, no recording and no worker, recd's threads switch at most a few
    /// times. Counted per thread: a thread that ended in the
    /// window must not take its earlier switches off the total (a sum over the process did, and
    /// hid Dispatch's monitor waking once a second: stop 56's CI saw 4 of its ~10).
    func testAnIdleRecdDoesNotWake() throws {
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        // Start-up's last work: the first status's connection, and the chapter pass's 1 s settle
        // (a `Task.sleep` at start-up, which is what started Dispatch's monitor on Swift 6.3).
        Thread.sleep(forTimeInterval: 2)
        let before = try contextSwitches(pid)
        Thread.sleep(forTimeInterval: 10)
        let after = try contextSwitches(pid)
        let woke = after.compactMap { id, thread -> String? in
            let switches = thread.switches - (before[id]?.switches ?? 0)
            return switches > 0 ? "\(thread.name) (\(id)): \(switches)" : nil
        }
        let total = after.reduce(0) { $0 + $1.value.switches - (before[$1.key]?.switches ?? 0) }
        XCTAssertLessThanOrEqual(total, 3, "an idle recd should not wake: \(total) context switches in 10 s: \(woke.sorted())")
    }
}
