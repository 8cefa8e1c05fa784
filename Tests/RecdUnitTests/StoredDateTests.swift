@testable import Catalog
import Foundation
import GRDB
import RecdAPI
import XCTest

/// The catalog's own reading of stored dates gives what GRDB's reading gives, for every form a
/// catalog holds, down to the API's milliseconds.
final class StoredDateTests: XCTestCase {
    func testItReadsWhatGRDBReads() throws {
        let db = try DatabaseQueue()
        try db.write { db in
            try db.execute(sql: "CREATE TABLE t (d)")
            var rng = SystemRandomNumberGenerator()
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
            var grdbOff = 0
            for row in rows {
                let theirs = Date.fromDatabaseValue(row[0] as DatabaseValue)
                let ours = StoredDate.read(row, 0)
                XCTAssertEqual(ours == nil, theirs == nil, "\(row)")
                guard let ours, let theirs else { continue }
                XCTAssertEqual(ours.timeIntervalSince1970, theirs.timeIntervalSince1970, accuracy: 1e-5, "\(row)")
                // The stored text's milliseconds, printed as they are stored.
                if let text = String.fromDatabaseValue(row[0] as DatabaseValue), text.count >= 23, text.dropFirst(19).first == "." {
                    let stored = String(text.prefix(23)).replacingOccurrences(of: " ", with: "T") + "Z"
                    XCTAssertEqual(APIJSON.formatDate(ours), stored.replacingOccurrences(of: "TT", with: "T"), "\(row)")
                    if APIJSON.formatDate(theirs) != APIJSON.formatDate(ours) { grdbOff += 1 }
                }
            }
            print("GRDB's reading printed \(grdbOff) of \(dates.count) stored milliseconds one off")
        }
    }
}
