// The title of a trim kept as a new recording (issue 37): the original's with " (trimmed)", within the
// 40-character limit however long the original's.
import Engine
import XCTest

final class TrimTitleTests: XCTestCase {
    func testTheCopyIsNamedAsSuchAndCutWithAnEllipsisToFitForty() {
        XCTAssertEqual(RecordingTrim.copyTitle("Tone"), "Tone (trimmed)")
        let thirty = String(repeating: "a", count: 30)
        XCTAssertEqual(RecordingTrim.copyTitle(thirty), thirty + " (trimmed)")   // exactly 40
        // An auto title at a two-digit hour: 31 characters, 41 with the suffix.
        let auto = "Recording Nov 27, 2026 11:36 AM"
        XCTAssertEqual(RecordingTrim.copyTitle(auto), "Recording Nov 27, 2026 11:36… (trimmed)")
        let emoji = String(repeating: "🎙️", count: 40)   // characters, not bytes or scalars
        XCTAssertEqual(RecordingTrim.copyTitle(emoji).count, 40)
        XCTAssertTrue(RecordingTrim.copyTitle(emoji).hasSuffix("… (trimmed)"))
    }
}
