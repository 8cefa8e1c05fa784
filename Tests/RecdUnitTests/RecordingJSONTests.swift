import Foundation
import RecdAPI
import XCTest

/// The hand-written writer of recordings and lists is held to Foundation's encoder, byte for byte.
final class RecordingJSONTests: XCTestCase {
    func sample(_ i: Int) -> Recording {
        let titles = ["Morning walk", "Quote \" backslash \\ slash /", "Émoji 🎙️ and 日本語", "Tab\tand\u{1}control"]
        let notes = ["", "line one\nline two\r\n", "\u{7F} del, \u{2028} separator, \u{0C} feed, \u{08} back", String(repeating: "n", count: 200)]
        let doubles: [Double?] = [nil, 0.5, 72.149, 100.0, 1e-7, 123456789.125, -0.0, 3.0000000000000004]
        return Recording(id: UUID(), type: i % 3 == 0 ? .video : .audio, state: RecordingState.allCases[i % 4],
                         title: titles[i % titles.count], notes: notes[i % notes.count],
                         purpose: i % 5 == 0 ? nil : Purpose.allCases[i % 4],
                         createdAt: Date(timeIntervalSince1970: 1_764_000_000.123 + Double(i) * 3_600.5),
                         duration: doubles[i % doubles.count], sizeBytes: i % 2 == 0 ? nil : Int64(i) * 1_048_577,
                         file: "Recordings/audio_\(i).m4a", playCount: i * 7,
                         lastPlayedAt: i % 3 == 1 ? nil : Date(timeIntervalSince1970: 1_700_000_000.5 + Double(i)),
                         recovered: i % 2 == 1, droppedFrames: i * 13,
                         loudness: i % 4 == 0 ? nil : Loudness(integrated: doubles[(i + 1) % doubles.count], range: i % 2 == 0 ? nil : 6.1,
                                                               truePeak: -2.37),
                         format: i % 4 == 3 ? nil : RecordingFormat.allCases[i % 3], source: RecordingSource.allCases[i % 3])
    }

    func testItWritesWhatTheEncoderWrites() throws {
        let encoder = APIJSON.encoder()
        for i in 0..<64 {
            let r = sample(i)
            XCTAssertEqual(String(decoding: RecordingJSON.encode(r), as: UTF8.self),
                           String(decoding: try encoder.encode(r), as: UTF8.self), "sample \(i)")
        }
        let list = RecordingList(recordings: (0..<50).map(sample), total: 100_001, limit: 50, offset: 7)
        XCTAssertEqual(RecordingJSON.encode(list), try encoder.encode(list))
        let empty = RecordingList(recordings: [], total: 0, limit: 100, offset: 0)
        XCTAssertEqual(RecordingJSON.encode(empty), try encoder.encode(empty))
        // And it reads back as it was.
        XCTAssertEqual(try APIJSON.decoder().decode(RecordingList.self, from: RecordingJSON.encode(list)).recordings.count, 50)
    }
}
