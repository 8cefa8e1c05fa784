// The text forms people type for listening (recctl listen start): durations and the time to stop.
import Foundation
import XCTest
import RecdAPI

final class ListenTextTests: XCTestCase {
    func testDurationsInEveryUnitTheHelpNames() {
        let cases: [(String, Double)] = [("2", 2), ("1.5", 1.5), ("2s", 2), ("500ms", 0.5), ("10m", 600), ("10min", 600),
                                         ("1h", 3600), ("1h30m", 5400), ("1m30s", 90), ("0.25S", 0.25)]
        for (text, seconds) in cases {
            XCTAssertEqual(ListenRequest.parseDuration(text) ?? -1, seconds, accuracy: 1e-9, text)
        }
    }

    func testWhatIsNotADurationIsRefused() {
        for text in ["", "s", "soon", "5x", "m5", "1h-2m", "1 s", "1..5s", "inf", "nan", "2d", "-3s", "1e400"] {
            XCTAssertNil(ListenRequest.parseDuration(text), text)
        }
    }

    func testUntilAClockTimeIsItsNextOccurrence() throws {
        var calendar = Calendar.current
        calendar.timeZone = .current
        let now = try XCTUnwrap(calendar.date(from: DateComponents(year: 2026, month: 11, day: 29, hour: 17, minute: 0)))
        let later = try XCTUnwrap(ListenRequest.parseUntil("18:30", now: now))
        XCTAssertEqual(later.timeIntervalSince(now), 5400, accuracy: 1)
        // A time already passed today is tomorrow's.
        let tomorrow = try XCTUnwrap(ListenRequest.parseUntil("09:15", now: now))
        XCTAssertEqual(calendar.component(.day, from: tomorrow), 30)
        XCTAssertEqual(calendar.component(.hour, from: tomorrow), 9)
        XCTAssertEqual(calendar.component(.minute, from: tomorrow), 15)
        // The minute it is now is not in the future: tomorrow's.
        XCTAssertEqual(try XCTUnwrap(ListenRequest.parseUntil("17:00", now: now)).timeIntervalSince(now), 86_400, accuracy: 3700)
    }

    func testUntilADelayOrADate() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertEqual(ListenRequest.parseUntil("2h", now: now), now.addingTimeInterval(7200))
        XCTAssertEqual(ListenRequest.parseUntil("1h30m", now: now), now.addingTimeInterval(5400))
        XCTAssertEqual(ListenRequest.parseUntil("2026-12-01T10:00:00Z", now: now), Date(timeIntervalSince1970: 1_796_119_200))
        XCTAssertEqual(ListenRequest.parseUntil("2026-12-01t10:00:00z", now: now), Date(timeIntervalSince1970: 1_796_119_200))
    }

    func testWhatIsNotATimeIsRefused() {
        let now = Date()
        // A bare number is not a delay ("until 30" says nothing of its unit), nor a clock time out of range.
        for text in ["", "30", "24:00", "12:60", "7:5:3", "-1:00", "soon", "tomorrow", "2026-13-01T10:00:00Z"] {
            XCTAssertNil(ListenRequest.parseUntil(text, now: now), text)
        }
    }
}
