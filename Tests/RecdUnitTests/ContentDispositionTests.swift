// A download's name (issue 47, "take it with you"): what the browser saves a recording as.
import Server
import XCTest

final class ContentDispositionTests: XCTestCase {
    func testTheTitleIsTheNameInUTF8AndInAnASCIIStandIn() {
        XCTAssertEqual(ContentDisposition.attachment(name: "Morning notes.m4a"),
                       "attachment; filename=\"Morning notes.m4a\"; filename*=UTF-8''Morning%20notes.m4a")
        XCTAssertEqual(ContentDisposition.attachment(name: "Café ☕ 日本.m4a"),
                       "attachment; filename=\"Caf_ _ __.m4a\"; filename*=UTF-8''Caf%C3%A9%20%E2%98%95%20%E6%97%A5%E6%9C%AC.m4a")
        // Quotes and backslashes cannot end or escape the quoted stand-in.
        XCTAssertEqual(ContentDisposition.attachment(name: "Say \"hi\".m4a"),
                       "attachment; filename=\"Say _hi_.m4a\"; filename*=UTF-8''Say%20%22hi%22.m4a")
    }

    func testNoFolderNoControlAndNoHiddenFile() {
        // A slash would name a folder (some clients keep only the last part): a dash.
        XCTAssertEqual(ContentDisposition.attachment(name: "a/b\\c.m4a"),
                       "attachment; filename=\"a-b-c.m4a\"; filename*=UTF-8''a-b-c.m4a")
        // Controls and bidirectional overrides (a name shown reversed) are left out.
        XCTAssertEqual(ContentDisposition.attachment(name: "x\u{202E}gpj.m4a"),
                       "attachment; filename=\"xgpj.m4a\"; filename*=UTF-8''xgpj.m4a")
        XCTAssertEqual(ContentDisposition.attachment(name: "a\r\nSet-Cookie: x.m4a"),
                       "attachment; filename=\"aSet-Cookie: x.m4a\"; filename*=UTF-8''aSet-Cookie%3A%20x.m4a")
        // Nothing left, or a name that would hide itself: it starts with "recording".
        XCTAssertEqual(ContentDisposition.attachment(name: ".m4a"),
                       "attachment; filename=\"recording.m4a\"; filename*=UTF-8''recording.m4a")
        XCTAssertEqual(ContentDisposition.attachment(name: " "),
                       "attachment; filename=\"recording\"; filename*=UTF-8''recording")
    }
}
