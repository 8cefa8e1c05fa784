// Skips that CI does not allow: a green CI run means every test ran.
import Foundation
import XCTest

/// A test that cannot run here for a missing tool, privilege or script: skipped on a developer's
/// machine, but a failure under CI (`CI=true`, set by .ci/run), where `scripts/install-deps.sh
/// --test` has installed everything the suite needs.
enum Skip {
    struct MissingUnderCI: Error, CustomStringConvertible {
        var reason: String
        var description: String { "CI=true and this test would be skipped: \(reason)" }
    }

    static var underCI: Bool { ["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "") }

    /// The error to throw: XCTSkip, or under CI a failure.
    static func because(_ reason: String) -> any Error {
        underCI ? MissingUnderCI(reason: reason) : XCTSkip(reason)
    }

    /// `XCTSkipIf`, failing instead under CI.
    static func `if`(_ condition: Bool, _ reason: @autoclosure () -> String) throws {
        if condition { throw because(reason()) }
    }
}
