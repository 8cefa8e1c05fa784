// An idle recd sleeps (issue 36): the hooks that put Swift concurrency on NIO's event loops
// (`ConcurrencyOnEventLoops`) are the runtime's, not a public API, and a toolchain upgrade could
// make them stop taking effect. Counted, not timed: context switches of all recd's threads.
import Foundation
import XCTest

final class IdleTests: DaemonTestCase {
    /// Voluntary and involuntary context switches of every thread of `pid` so far.
    func contextSwitches(_ pid: Int32) throws -> Int {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var total = 0
        for task in tasks {
            let status = try Tools.run("cat", ["/proc/\(pid)/task/\(task)/status"]).stdout
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }

    /// Over 10 s with no client, no recording and no worker, recd's threads switch at most a few
    /// times (a Swift program that only awaits, with Dispatch's monitor running, shows ~10: one a
    /// second), and recd logged that the hooks took.
    func testAnIdleRecdDoesNotWake() throws {
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        XCTAssertTrue(daemon.log.contains("Swift concurrency runs on NIO's event loops (jobs and timers)"), daemon.log)
        Thread.sleep(forTimeInterval: 2)   // start-up's last work (the first status's connection) ends
        let before = try contextSwitches(pid)
        Thread.sleep(forTimeInterval: 10)
        let after = try contextSwitches(pid)
        XCTAssertLessThanOrEqual(after - before, 3, "an idle recd should not wake: \(after - before) context switches in 10 s")
    }
}
