import Catalog
import Foundation
import GRDB
import RecdAPI
import XCTest

/// The catalog's own reading of stored dates gives what GRDB's reading gives, for every form a
/// catalog holds, down to the API's milliseconds.
final class StoredDateTests: XCTestCase {
    /// The catalog's writing of a date stores GRDB's text for it (dates made of whole milliseconds,
    /// as GRDB keeps them), and any date within a millisecond below it (GRDB cuts, as DateText does).
    func testItWritesWhatGRDBWrites() throws {
        var rng = SeededGenerator(seed: 1592590340)
        var dates = (0..<5_000).map { _ in Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &rng)) / 1000) }
        dates += [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 951_782_400.999), Date(timeIntervalSince1970: -0.001),
                  Date(timeIntervalSince1970: 1_764_090_000.123)]
        for d in dates {
            XCTAssertEqual(StoredDate.value(d).databaseValue, d.databaseValue, "\(d.timeIntervalSince1970)")
        }
        for _ in 0..<5_000 {   // now-ish dates with microseconds, as Date() gives: the same millisecond, read back
            let d = Date(timeIntervalSince1970: Double.random(in: 1_700_000_000...1_900_000_000, using: &rng))
            let text = try XCTUnwrap(String.fromDatabaseValue(StoredDate.value(d).databaseValue))
            let back = try XCTUnwrap(text.utf8.withContiguousStorageIfAvailable { StoredDate.parse(UnsafeRawBufferPointer($0)) } ?? nil)
            XCTAssertEqual(back.timeIntervalSince1970, d.timeIntervalSince1970, accuracy: 0.001, text)
            // At most a microsecond above (DateText takes a date within one below a whole millisecond
            // as that millisecond), give or take the rounding of doubles near 1.8e9 s (0.24 µs each):
            // one CI run read a date back about 0.1 µs past the bound without them.
            XCTAssertLessThanOrEqual(back.timeIntervalSince1970, d.timeIntervalSince1970 + 1e-6 + 4 * d.timeIntervalSince1970.ulp, text)
        }
        // Outside DateText's range, GRDB's own value.
        let old = Date(timeIntervalSince1970: -20_000_000_000)
        XCTAssertEqual(StoredDate.value(old).databaseValue, old.databaseValue)
    }

    func testItReadsWhatGRDBReads() throws {
        let db = try DatabaseQueue()
        try db.write { db in
            try db.execute(sql: "CREATE TABLE t (d)")
            var rng = SeededGenerator(seed: 1592590341)
            // Dates as GRDB stores them: 1900 … 2200 with milliseconds, and edges.
            var dates = (0..<5_000).map { _ in Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &rng)) / 1000) }
            dates += [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 951_782_400.999),   // 2000-02-29
                      Date(timeIntervalSince1970: -0.001), Date(timeIntervalSince1970: 4_107_542_399.5)]
            for d in dates { try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [d]) }
            // Other forms a value may have: no fraction, a T, more digits, a timestamp, NULL, garbage.
            for text in ["2025-10-25 15:42:07", "2025-10-25T15:42:07.123", "2025-10-25 15:42:07.123456789", "2025-10-25 15:42:07.1"] {
                try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [text])
            }
            try db.execute(sql: "INSERT INTO t VALUES (1761406927.25), (NULL), ('yesterday'), ('2025-13-01 00:00:00')")
            let rows = try Row.fetchAll(db, sql: "SELECT d FROM t")
            XCTAssertEqual(rows.count, dates.count + 8)
            for row in rows {
                let theirs = Date.fromDatabaseValue(row[0] as DatabaseValue)
                let ours = StoredDate.read(row, 0)
                XCTAssertEqual(ours == nil, theirs == nil, "\(row)")
                XCTAssertEqual(StoredDate.read(row, "d"), ours, "\(row): read by the column's name as by its index")
                guard let ours, let theirs else { continue }
                XCTAssertEqual(ours.timeIntervalSince1970, theirs.timeIntervalSince1970, accuracy: 1e-5, "\(row)")
                // The stored text's milliseconds, printed as they are stored.
                if let text = String.fromDatabaseValue(row[0] as DatabaseValue), text.count >= 23, text.dropFirst(19).first == "." {
                    let stored = String(text.prefix(23)).replacingOccurrences(of: " ", with: "T") + "Z"
                    XCTAssertEqual(APIJSON.formatDate(ours), stored.replacingOccurrences(of: "TT", with: "T"), "\(row)")
                }
            }
        }
    }
}

/// The API's dates written by hand are what Foundation's ISO 8601 style writes.
final class DateTextTests: XCTestCase {
    let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The text of a whole number of milliseconds since 1970: the style's for the whole second (no
    /// fraction to misread), then the milliseconds.
    func text(ms: Int64) -> String {
        let whole = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        return String(Date(timeIntervalSince1970: Double(whole)).formatted(style).dropLast(4)) + String(format: "%03dZ", Int(ms - whole * 1000))
    }

    func testItWritesWhatTheISO8601StyleWrites() {
        var rng = SeededGenerator(seed: 1592590342)
        // Any double: the style's text, or (where the style lost the millisecond to the double's
        // fraction) the millisecond the double is in, or the next one when within a microsecond of it.
        var dates = (0..<20_000).map { _ in Date(timeIntervalSince1970: Double.random(in: -2_208_988_800...7_258_118_400, using: &rng)) }
        dates += [0, -0.001, -0.0005, 0.0009999, 951_782_400.999, 951_868_799.9999, -86_400, -62_135_596_800, 253_402_300_799.999]
            .map { Date(timeIntervalSince1970: $0) }
        var off: [String] = []
        for d in dates {
            let ours = DateText.format(d)
            if ours == d.formatted(style) { continue }
            let x = d.timeIntervalSince1970 * 1000
            let allowed = [text(ms: Int64(x.rounded(.down)))] + (abs(x - x.rounded()) < 0.001 ? [text(ms: Int64(x.rounded()))] : [])
            if !allowed.contains(ours) { off.append("\(d.timeIntervalSince1970): \(ours) vs \(d.formatted(style))") }
        }
        XCTAssertEqual(off, [], "\(off.count) of \(dates.count) differ")
        // A date made from whole milliseconds prints those milliseconds.
        for _ in 0..<20_000 {
            let ms = Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &rng)
            XCTAssertEqual(DateText.format(Date(timeIntervalSince1970: Double(ms) / 1000)), text(ms: ms))
        }
    }
}

/// Ids read from the catalog digit by digit are Foundation's reading of them.
final class StoredIDTests: XCTestCase {
    func testItReadsWhatFoundationReads() {
        for _ in 0..<5_000 {
            let id = UUID()
            XCTAssertEqual(Recording.uuid(id.uuidString), id)
            XCTAssertEqual(Recording.uuid(id.uuidString.lowercased()), id)
        }
        for bad in ["", "zz", "123E4567-E89B-12D3-A456-42661417400G", "123E4567E89B-12D3-A456-4266141740000",
                    "123E4567-E89B-12D3-A456-4266141740", "123E4567-E89B-12D3-A456-426614174000 "] {
            XCTAssertEqual(Recording.uuid(bad), UUID(uuidString: bad), bad)
        }
    }
}
