// Dates as the catalog stores them, read without a Calendar.
import Foundation
import GRDB
import RecdAPI

/// Reads the `createdAt` / `lastPlayedAt` columns: GRDB writes a `Date` as UTC text
/// `YYYY-MM-DD HH:MM:SS.SSS` and reads it back through `DateComponents` and a Gregorian `Calendar`
/// (ICU), which was the largest part of decoding a row of a listing. The fixed form is parsed here
/// straight from SQLite's bytes (days from the civil date by Hinnant's algorithm); any other form
/// (a date written by hand, by an old version, an integer) goes to GRDB's own decoding. A unit test
/// holds the two to the same dates.
package enum StoredDate {
    /// The date at `index`, nil for NULL.
    package static func read(_ row: Row, _ index: Int) -> Date? {
        read({ try row.withUnsafeData(atIndex: index, $0) }, else: row[index])
    }

    /// The date in column `name`, nil for NULL (or no such column).
    package static func read(_ row: Row, _ name: String) -> Date? {
        read({ try row.withUnsafeData(named: name, $0) }, else: row[name])
    }

    private enum Read { case null, date(Date), other }
    /// The column's bytes parsed here; any other form by GRDB (`value`: nil, not a trap, for garbage).
    private static func read(_ bytes: ((Data?) -> Read) throws -> Read, else value: @autoclosure () -> DatabaseValue) -> Date? {
        let read = (try? bytes { data in
            guard let data else { return .null }
            return data.withUnsafeBytes { parse($0) }.map(Read.date) ?? .other
        }) ?? .other
        switch read {
        case .null: return nil
        case .date(let date): return date
        case .other: return Date.fromDatabaseValue(value())
        }
    }

    /// What a date is stored as: GRDB's text, `YYYY-MM-DD HH:MM:SS.SSS` UTC, written from `DateText`'s
    /// ISO form (GRDB's own writing goes through a DateFormatter: ICU, a few percent of a counted
    /// play's CPU). Outside DateText's own range (before 1600, after 9999) the date itself, for GRDB.
    package static func value(_ date: Date) -> any DatabaseValueConvertible & Sendable {
        let t = date.timeIntervalSince1970
        guard t.isFinite, t >= -11_676_096_000, t < 253_402_300_800 else { return date }
        var bytes = Array(DateText.format(date).utf8)
        guard bytes.count == 24, bytes[10] == UInt8(ascii: "T") else { return date }
        bytes[10] = UInt8(ascii: " ")
        return String(decoding: bytes.prefix(23), as: UTF8.self)
    }

    /// `YYYY-MM-DD HH:MM:SS.SSS` (also `T` for the space, 1–9 fraction digits read to the
    /// millisecond, or none); nil
    /// for anything else.
    package static func parse(_ b: UnsafeRawBufferPointer) -> Date? {
        guard b.count >= 19, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              b[10] == UInt8(ascii: " ") || b[10] == UInt8(ascii: "T"),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":") else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for i in from..<(from + count) {
                let d = Int(b[i]) - 48
                guard d >= 0 && d <= 9 else { return nil }
                v = v * 10 + d
            }
            return v
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        var nanoseconds = 0
        if b.count > 19 {
            guard b[19] == UInt8(ascii: "."), b.count > 20, b.count <= 29, let fraction = number(20, b.count - 20) else { return nil }
            // Milliseconds, the rest dropped: what GRDB reads of a longer fraction.
            let digits = b.count - 20
            var ms = fraction
            for _ in 0..<max(0, digits - 3) { ms /= 10 }
            for _ in 0..<max(0, 3 - digits) { ms *= 10 }
            nanoseconds = ms * 1_000_000
        }
        // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "days_from_civil").
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }
}
