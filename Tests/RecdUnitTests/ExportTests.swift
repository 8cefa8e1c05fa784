import Engine
import Foundation
import RecdAPI
import XCTest

final class MetadataExportTests: XCTestCase {
    func row(_ title: String, purpose: Purpose? = nil, duration: Double? = 75.25, loudness: Loudness? = nil) -> ExportRow {
        ExportRow(id: UUID(uuidString: "6981E9C0-C777-4C15-B1C8-72BD5107E312")!, title: title,
                  timestamp: Date(timeIntervalSince1970: 1_761_406_920), duration: duration, type: .audio,
                  purpose: purpose, playCount: 12, loudness: loudness)
    }

    func testCSVFollowsRFC4180() {
        let csv = MetadataExport.csv([row("Plain", purpose: .motivational, loudness: Loudness(integrated: -18.25, range: 4.5, truePeak: -1.02)),
                                      row("Comma, \"quote\"\nnewline", duration: nil),
                                      row("Hush", loudness: Loudness(integrated: nil, range: nil, truePeak: nil))])
        XCTAssertEqual(csv, """
            id,title,timestamp,duration,type,purpose,playCount,loudnessLUFS,loudnessRangeLU,truePeakDBTP,transcript,notes,sizeBytes,lastPlayedAt,markers\r
            6981E9C0-C777-4C15-B1C8-72BD5107E312,Plain,2025-10-25T15:42:00.000Z,75.250,audio,motivational,12,-18.25,4.50,-1.02,,,,,\r
            6981E9C0-C777-4C15-B1C8-72BD5107E312,"Comma, ""quote""
            newline",2025-10-25T15:42:00.000Z,,audio,,12,,,,,,,,\r
            6981E9C0-C777-4C15-B1C8-72BD5107E312,Hush,2025-10-25T15:42:00.000Z,75.250,audio,,12,-inf,,,,,,,\r

            """)
        XCTAssertEqual(MetadataExport.csv([]), "id,title,timestamp,duration,type,purpose,playCount,loudnessLUFS,loudnessRangeLU,truePeakDBTP,transcript,notes,sizeBytes,lastPlayedAt,markers\r\n")
    }

    /// OWASP's CSV injection rule: a title a spreadsheet would run as a formula is written as text.
    func testCSVNeutralizesFormulas() {
        let titles = ["=1+2", "+1", "-1", "@SUM(A1)", "\tTab", "\rCR", "=HYPERLINK(\"http://x\",\"a,b\")"]
        let lines = MetadataExport.csv(titles.map { row($0) }).components(separatedBy: "\r\n").dropFirst()
        XCTAssertTrue(lines.contains { $0.contains(",'=1+2,") })
        XCTAssertTrue(lines.contains { $0.contains(",'+1,") })
        XCTAssertTrue(lines.contains { $0.contains(",'-1,") })
        XCTAssertTrue(lines.contains { $0.contains(",'@SUM(A1),") })
        XCTAssertTrue(lines.contains { $0.contains(",'\tTab,") })
        XCTAssertTrue(MetadataExport.csv([row("\rCR")]).contains(",\"'\rCR\","))
        XCTAssertTrue(MetadataExport.csv([row(titles[6])]).contains(",\"'=HYPERLINK(\"\"http://x\"\",\"\"a,b\"\")\","))
        // Text that only contains such characters later is left alone.
        XCTAssertTrue(MetadataExport.csv([row("Walk = calm")]).contains(",Walk = calm,"))
        XCTAssertTrue(MetadataExport.csv([row("Day 1 - morning")]).contains(",Day 1 - morning,"))
    }

    func testJSONHasTheSeedsFields() throws {
        let data = try MetadataExport.json([row("A")], exportedAt: Date(timeIntervalSince1970: 0))
        let object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        let first = (object["recordings"] as! [[String: Any]])[0]
        XCTAssertEqual(Set(first.keys), ["id", "title", "timestamp", "duration", "type", "purpose", "playCount", "loudness", "transcript",
                                         "notes", "sizeBytes", "lastPlayedAt", "markers"])
        XCTAssertTrue(first["transcript"] is NSNull, "null when there is no transcript")
        XCTAssertTrue(first["purpose"] is NSNull)
        XCTAssertEqual(object["exportedAt"] as? String, "1970-01-01T00:00:00.000Z")
    }

    /// The notes (neutralized as the title is), the size, the last play and the markers, each marker
    /// as its time in seconds and its label.
    func testCSVCarriesNotesSizeLastPlayAndMarkers() {
        var r = row("Walk")
        r.notes = "=not a formula, two"
        r.sizeBytes = 12345
        r.lastPlayedAt = Date(timeIntervalSince1970: 1_761_406_980)
        r.markers = [Marker(id: UUID(), time: 1.5, label: "start", createdAt: Date()),
                     Marker(id: UUID(), time: 65, label: "", createdAt: Date())]
        let line = MetadataExport.csv([r]).components(separatedBy: "\r\n")[1]
        XCTAssertTrue(line.hasSuffix(#","'=not a formula, two",12345,2025-10-25T15:43:00.000Z,1.500 start; 65.000"#), line)
    }

    func testFileNameCarriesTheDate() {
        let date = Date(timeIntervalSince1970: 1_761_406_920)
        XCTAssertEqual(MetadataExport.fileName(format: .csv, date: date, timeZone: TimeZone(identifier: "UTC")!),
                       "recd_export_2025-10-25.csv")
        XCTAssertEqual(MetadataExport.fileName(format: .json, date: date, timeZone: TimeZone(identifier: "Asia/Tokyo")!),
                       "recd_export_2025-10-26.json")
    }
}
