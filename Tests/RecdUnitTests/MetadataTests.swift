import Foundation
import RecdAPI
import Storage
import XCTest

final class MetadataRulesTests: XCTestCase {
    let utc = TimeZone(identifier: "UTC")!

    func testAutoTitleHasTheSeedsForm() {
        // 2025-10-25 15:42 UTC
        let date = Date(timeIntervalSince1970: 1_761_406_920)
        XCTAssertEqual(MetadataRules.autoTitle(for: date, timeZone: utc), "Recording Oct 25, 2025 3:42 PM")
        XCTAssertEqual(MetadataRules.autoTitle(for: date, timeZone: TimeZone(identifier: "America/New_York")!),
                       "Recording Oct 25, 2025 11:42 AM")
        XCTAssertLessThanOrEqual(MetadataRules.autoTitle(for: Date(timeIntervalSince1970: 1_758_000_000), timeZone: utc).count,
                                 MetadataLimits.titleMaxCharacters)
    }

    /// Auto titles are written from libc's civil time (no Calendar, which loads ICU's zone data): the
    /// same text as a Gregorian Calendar in that zone gives, for dates across centuries and zones,
    /// the millisecond rounding included; without a zone, the system's (TZ) as Foundation reads it.
    func testAutoTitlesMatchAGregorianCalendar() throws {
        let zones = ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Chatham", "America/St_Johns"]
        var generator = SeededGenerator(seed: 1592590343)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        for i in 0..<3000 {
            let zone = TimeZone(identifier: zones[i % zones.count])!
            let date = Date(timeIntervalSince1970: i == 0 ? 1_761_406_919.9996 : Double.random(in: -2_000_000_000...4_000_000_000, using: &generator))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let rounded = Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: rounded)
            let hour = c.hour!, minute = c.minute!
            let expected = "Recording \(months[c.month! - 1]) \(c.day!), \(c.year!) \(hour % 12 == 0 ? 12 : hour % 12):"
                + "\(minute < 10 ? "0" : "")\(minute) \(hour < 12 ? "AM" : "PM")"
            XCTAssertEqual(MetadataRules.autoTitle(for: date, timeZone: zone), expected, "\(date) in \(zone.identifier)")
        }
        // No zone: libc's local time, which is the zone TimeZone.current names.
        let date = Date(timeIntervalSince1970: 1_761_406_920)
        XCTAssertEqual(MetadataRules.autoTitle(for: date), MetadataRules.autoTitle(for: date, timeZone: .current))
    }

    func testTitleLimitCountsWhatAPersonSees() throws {
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(title: .value(String(repeating: "x", count: 40)))).title,
                       .some(String(repeating: "x", count: 40)))
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(title: .value(String(repeating: "x", count: 41))))) {
            guard case StorageError.fieldTooLong(let field, let limit, let count) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(field, "title"); XCTAssertEqual(limit, 40); XCTAssertEqual(count, 41)
        }
        // Family emoji: 7 scalars, 11 UTF-16 units, 1 character.
        let family = "👨‍👩‍👧‍👦"
        XCTAssertNoThrow(try MetadataRules.validate(MetadataPatch(title: .value(String(repeating: family, count: 40)))))
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(title: .value(String(repeating: family, count: 41)))))
        // Combining accents: "e\u{301}" is one character.
        XCTAssertNoThrow(try MetadataRules.validate(MetadataPatch(notes: .value(String(repeating: "e\u{301}", count: 200)))))
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(notes: .value(String(repeating: "e", count: 201)))))
    }

    /// C0/C1 controls and DEL would reach the terminal of whoever lists the library.
    func testControlCharactersAreRefused() throws {
        for bad in ["\u{1B}[31mred", "bell\u{07}", "del\u{7F}", "c1\u{9B}31m", "tab\tin title", "nul\u{0}"] {
            XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(title: .value(bad))), bad) { error in
                XCTAssertTrue("\(error)".contains("control character U+"), "\(error)")
            }
            XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(notes: .value(bad))), bad)
        }
        // Notes keep their line breaks; titles stay one line; other Unicode is fine.
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(notes: .value("line 1\nline 2"))).notes, "line 1\nline 2")
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(notes: .value("a\r\nb"))).notes, "a\nb")
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(notes: .value("P\r\n\u{C4D}\n"))).notes, "P\n\u{C4D}\n")
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(notes: .value("a\rb"))))
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(title: .value("Café 🎙️ 日本"))).title, .some("Café 🎙️ 日本"))
    }

    /// Bidirectional overrides and isolates show text other than what is stored ("Trojan Source"):
    /// refused as controls are, in titles and notes; the implicit marks (LRM, RLM, ALM) stay allowed.
    func testBidirectionalOverridesAndIsolatesAreRefused() throws {
        for scalar in Array(0x202A...0x202E) + Array(0x2066...0x2069) {
            let c = String(Character(Unicode.Scalar(UInt32(scalar))!))
            XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(title: .value("memo" + c + "vaw.exe"))), c) { error in
                XCTAssertTrue("\(error)".contains("bidirectional formatting character U+\(String(scalar, radix: 16, uppercase: true))"), "\(error)")
            }
            XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(notes: .value("a\n" + c))), c)
            XCTAssertNotNil(MetadataRules.firstControl(in: "name" + c + ".wav", allowingNewlines: false))
        }
        for mark in ["\u{200E}", "\u{200F}", "\u{061C}"] {
            XCTAssertNoThrow(try MetadataRules.validate(MetadataPatch(title: .value("שלום" + mark + " 1"), notes: .value(mark))), mark)
        }
    }

    func testBlankAndNullTitlesMeanAuto() throws {
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(title: .value("    "))).title, .some(nil))
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(title: .null)).title, .some(nil))
        XCTAssertTrue(try MetadataRules.validate(MetadataPatch()).title == nil)
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(title: .value("  Trim me "))).title, .some("Trim me"))
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(title: .value("two\nlines"))))
        // Refused wherever they are, as the document's pattern says: not trimmed away at the ends.
        for bad in ["Title\n", "\nTitle", "\t", "Title\u{2028}", "\r\n"] {
            XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(title: .value(bad))), bad.debugDescription)
        }
    }

    func testPurposeIsOneOfTheChipsOrNone() throws {
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(purpose: .value("milestone"))).purpose, .some(.milestone))
        // As the document's enum spells them (recctl lower-cases what people type).
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(purpose: .value("Craving"))))
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(purpose: .value(""))).purpose, .some(nil))
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(purpose: .value("none"))).purpose, .some(nil))
        XCTAssertEqual(try MetadataRules.validate(MetadataPatch(purpose: .null)).purpose, .some(nil))
        XCTAssertThrowsError(try MetadataRules.validate(MetadataPatch(purpose: .value("bored")))) {
            XCTAssertTrue("\($0)".contains("motivational, craving, reflection, milestone"), "\($0)")
        }
    }

    func testApplyUsesTheCreationTimeForTheAutoTitle() {
        let created = Date(timeIntervalSince1970: 1_761_406_920)
        var r = Recording(id: UUID(), type: .audio, state: .ready, title: "Custom", notes: "n", purpose: .craving,
                          createdAt: created, duration: 1, sizeBytes: 1, file: "f", playCount: 3, lastPlayedAt: nil,
                          recovered: false, droppedFrames: 0)
        MetadataRules.apply(MetadataChange(title: .some(nil), purpose: .some(nil)), to: &r, timeZone: utc)
        XCTAssertEqual(r.title, "Recording Oct 25, 2025 3:42 PM")
        XCTAssertEqual(r.notes, "n")
        XCTAssertNil(r.purpose)
        XCTAssertEqual(r.playCount, 3)
    }
}

final class MetadataPatchCodingTests: XCTestCase {
    func decode(_ json: String) throws -> MetadataPatch {
        try APIJSON.decoder().decode(MetadataPatch.self, from: Data(json.utf8))
    }

    func testAbsentNullAndValueAreToldApart() throws {
        XCTAssertEqual(try decode("{}"), MetadataPatch())
        XCTAssertEqual(try decode(#"{"title": null}"#), MetadataPatch(title: .null))
        XCTAssertEqual(try decode(#"{"title": "x", "notes": "", "purpose": "craving"}"#),
                       MetadataPatch(title: .value("x"), notes: .value(""), purpose: .value("craving")))
        XCTAssertThrowsError(try decode(#"{"title": 5}"#))
        let stop = try APIJSON.decoder().decode(StopRecordingRequest.self, from: Data(#"{"then": "save", "title": "t"}"#.utf8))
        XCTAssertEqual(stop, StopRecordingRequest(then: .save, metadata: MetadataPatch(title: .value("t"))))
        let roundTrip = try APIJSON.decoder().decode(StopRecordingRequest.self, from: APIJSON.encoder().encode(stop))
        XCTAssertEqual(roundTrip, stop)
    }

    /// `@Nullable` writes a key whose value is absent as null (the document's `required` lists rely
    /// on it) and still reads JSON that leaves it out.
    func testNullableKeysAreAlwaysWrittenAndMayBeAbsentWhenRead() throws {
        let stats = CaptureStats(framesCaptured: 1)
        let json = String(decoding: try APIJSON.encoder().encode(stats), as: UTF8.self)
        XCTAssertEqual(json, #"{"droppedFrames":0,"framesCaptured":1,"overruns":0,"videoDroppedFrames":null,"videoFrames":null}"#)
        let read = try APIJSON.decoder().decode(CaptureStats.self, from: Data(#"{"droppedFrames":0,"framesCaptured":1,"overruns":0,"videoFrames":7}"#.utf8))
        XCTAssertEqual(read.videoFrames, 7)
        XCTAssertNil(read.videoDroppedFrames)
        XCTAssertEqual(try APIJSON.decoder().decode(CaptureStats.self, from: Data(json.utf8)), stats)
    }
}
