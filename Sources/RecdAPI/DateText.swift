// The API's one date form, written without a formatter.
import FoundationEssentials

/// `2025-10-25T15:42:07.123Z` for a `Date`: UTC, milliseconds truncated, the form
/// `Date.ISO8601FormatStyle(includingFractionalSeconds: true)` writes. The style went through an ICU
/// calendar for every date (two per recording: the largest single cost of a listing's reply once
/// rows were read by position), and it takes the milliseconds from the double's fraction after the
/// whole seconds are subtracted, which prints many whole milliseconds one lower (`….080` as
/// `….079`: a catalog date read back printed its stored millisecond one off about half the time).
/// Here the milliseconds are `t × 1000` rounded down (see `format`), which lands on the millisecond a
/// date was made from. A unit test holds the two to the same text everywhere else.
public enum DateText {
    static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    public static func format(_ date: Date) -> String {
        let t = date.timeIntervalSince1970
        guard t.isFinite, abs(t) < 253_402_300_800 else { return style.format(date) }   // beyond year 9999
        // A double within a microsecond below a whole millisecond is that millisecond (a date made
        // from milliseconds, such as one read from the catalog, lies within a rounding error of it,
        // on either side).
        let x = t * 1000, nearest = x.rounded()
        var ms = Int64(abs(x - nearest) < 0.001 ? nearest : x.rounded(.down))
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        ms -= seconds * 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        // Civil date of a day count since 1970-01-01 (H. Hinnant, "civil_from_days").
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0))
        // Before 1600 Foundation's calendar is Julian (the Gregorian reform of 1582): left to it.
        guard year >= 1600 else { return DateText.style.format(date) }
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, at: Int, digits: Int) {
            var v = value
            for i in stride(from: at + digits - 1, through: at, by: -1) {
                bytes[i] = UInt8(48 + v % 10)
                v /= 10
            }
        }
        put(year, at: 0, digits: 4); bytes[4] = 45   // -
        put(month, at: 5, digits: 2); bytes[7] = 45
        put(day, at: 8, digits: 2); bytes[10] = 84   // T
        put(secondOfDay / 3600, at: 11, digits: 2); bytes[13] = 58   // :
        put(secondOfDay / 60 % 60, at: 14, digits: 2); bytes[16] = 58
        put(secondOfDay % 60, at: 17, digits: 2); bytes[19] = 46   // .
        put(Int(ms), at: 20, digits: 3); bytes[23] = 90   // Z
        return String(decoding: bytes, as: UTF8.self)
    }
}
