// How recovery tells a row's file in `Recordings/` from a path elsewhere (by UTF-8 bytes).
@testable import Storage
import XCTest

final class RecoveryNameTests: XCTestCase {
    func testANameDirectlyInRecordingsIsItsOwnAndAnythingElseIsNot() {
        XCTAssertEqual(Recovery.name(inRecordings: "Recordings/audio_X.m4a"), "audio_X.m4a")
        XCTAssertEqual(Recovery.name(inRecordings: "Recordings/copied in.m4a"), "copied in.m4a")
        XCTAssertEqual(Recovery.name(inRecordings: "Recordings/été à Zürich 🎙️.m4a"), "été à Zürich 🎙️.m4a")
        XCTAssertNil(Recovery.name(inRecordings: "Recordings/sub/a.m4a"), "a folder inside is not a listing's name")
        XCTAssertNil(Recovery.name(inRecordings: "Recordings/"))
        XCTAssertNil(Recovery.name(inRecordings: "Recording/a.m4a"))
        XCTAssertNil(Recovery.name(inRecordings: "/abs/Recordings/a.m4a"))
        XCTAssertNil(Recovery.name(inRecordings: ""))
        // A composed "é" after the prefix's slash: the byte split does not cut a character.
        let name = Recovery.name(inRecordings: "Recordings/e\u{301}.m4a")
        XCTAssertEqual(name.map(String.init), "e\u{301}.m4a")
    }
}
