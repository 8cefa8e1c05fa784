import Foundation
import RecdAPI
import Server
import XCTest

final class PlaybackParsingTests: XCTestCase {
    func testSeekArguments() throws {
        XCTAssertEqual(try SeekArgument.parse(nil), SeekRequest(by: 15))
        XCTAssertEqual(try SeekArgument.parse("+"), SeekRequest(by: 15))
        XCTAssertEqual(try SeekArgument.parse("-"), SeekRequest(by: -15))
        XCTAssertEqual(try SeekArgument.parse("+15"), SeekRequest(by: 15))
        XCTAssertEqual(try SeekArgument.parse("-15"), SeekRequest(by: -15))
        XCTAssertEqual(try SeekArgument.parse("-1:00"), SeekRequest(by: -60))
        XCTAssertEqual(try SeekArgument.parse("1:30"), SeekRequest(to: 90))
        XCTAssertEqual(try SeekArgument.parse("90"), SeekRequest(to: 90))
        XCTAssertEqual(try SeekArgument.parse("2.5"), SeekRequest(to: 2.5))
        XCTAssertEqual(try SeekArgument.parse("1:02:03"), SeekRequest(to: 3723))
        for bad in ["1:75", "abc", "1::2", "1:2:3:4", "--5", "+x", "1.5:00", "inf", "nan", "٣"] {
            XCTAssertThrowsError(try SeekArgument.parse(bad), bad)
        }
    }

    func testByteRanges() {
        XCTAssertEqual(ByteRangeRequest.parse(nil, size: 1000), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=0-99", size: 1000), .part(0...99))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=900-", size: 1000), .part(900...999))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=900-5000", size: 1000), .part(900...999))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=-10", size: 1000), .part(990...999))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=-5000", size: 1000), .part(0...999))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=1000-", size: 1000), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=-0", size: 1000), .unsatisfiable)
        // Served whole, as RFC 9110 allows for what a server does not support or cannot parse.
        XCTAssertEqual(ByteRangeRequest.parse("bytes=0-1,5-6", size: 1000), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("items=0-1", size: 1000), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=5-1", size: 1000), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=x-", size: 1000), .whole)
    }

    func testMediaContentTypes() {
        XCTAssertEqual(MediaRoute.contentType(for: "Recordings/audio_X.m4a"), "audio/mp4")
        XCTAssertEqual(MediaRoute.contentType(for: "Recordings/video_X.mov"), "video/quicktime")
        XCTAssertEqual(MediaRoute.contentType(for: "Recordings/x.bin"), "application/octet-stream")
    }
}
