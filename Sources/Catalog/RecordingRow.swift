// The one table of the catalog: `Recording` itself, read and written by column name.
import Foundation
import GRDB
import RecdAPI

/// A row of the `recording` table is a `Recording`. Its columns are read by name in `init(row:)` and
/// written by name in `encode(to:)`: a field is added there (one line each), in `Recording`, its
/// migration, `RecordingJSON` and the API document, and a test fails for any of them forgotten
/// (CatalogTests reads every field back; the API tests compare the JSON and the document).
/// Not GRDB's Codable coding: measured twice (decision 0024), its keyed decoding made a library page
/// 2–3.5× slower and counted plays fall below one raw SQLite writer. Ids are stored as upper-case
/// UUID text (as `UUID.uuidString` prints them) so that id prefixes are matched with an index range
/// scan; dates as `StoredDate` writes them; the loudness as JSON text.
extension Recording: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "recording"

    /// What every read selects: the table's columns, and the loudness's numbers taken apart by SQLite
    /// (`json_extract`), so that a page decodes no JSON per row. `selection` is the same as SQL, for
    /// statements written out (and compiled once: `cachedStatement`).
    public static var databaseSelection: [any SQLSelectable] { [AllColumns(), SQL(sql: loudnessParts)] }
    static let selection = "*, " + loudnessParts
    private static let loudnessParts = ["integrated", "range", "truePeak"]
        .map { "json_extract(loudness, '$.\($0)') AS \"loudness.\($0)\"" }.joined(separator: ", ")

    public init(row: Row) throws {
        let id: String = row["id"]
        /// A text column as one of an enum's cases: nil for NULL, `corruptRow` for anything else.
        func value<T: RawRepresentable>(_ column: String) throws -> T? where T.RawValue == String {
            guard let text: String = row[column] else { return nil }
            guard let v = T(rawValue: text) else { throw CatalogError.corruptRow(id: id, detail: "\(column) '\(text)'") }
            return v
        }
        func required<T: RawRepresentable>(_ column: String) throws -> T where T.RawValue == String {
            guard let v: T = try value(column) else { throw CatalogError.corruptRow(id: id, detail: "\(column) is NULL") }
            return v
        }
        guard let uuid = Self.uuid(id) else { throw CatalogError.corruptRow(id: id, detail: "the id is no UUID") }
        guard let createdAt = StoredDate.read(row, "createdAt") else { throw CatalogError.corruptRow(id: id, detail: "createdAt does not read") }
        var loudness: Loudness?
        if let json: String = row["loudness"] {
            loudness = row.hasColumn("loudness.truePeak")
                ? Loudness(integrated: row["loudness.integrated"], range: row["loudness.range"], truePeak: row["loudness.truePeak"])
                : try? JSONDecoder().decode(Loudness.self, from: Data(json.utf8))
        }
        self.init(id: uuid, type: try required("type"), state: try required("state"), title: row["title"], notes: row["notes"],
                  purpose: try value("purpose"), createdAt: createdAt, duration: row["duration"], sizeBytes: row["sizeBytes"],
                  file: row["file"], playCount: row["playCount"], lastPlayedAt: StoredDate.read(row, "lastPlayedAt"),
                  recovered: row["recovered"], droppedFrames: row["droppedFrames"], loudness: loudness,
                  format: try value("format"), source: try required("source"))
    }

    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id.uuidString
        container["type"] = type.rawValue
        container["state"] = state.rawValue
        container["title"] = title
        container["notes"] = notes
        container["purpose"] = purpose?.rawValue
        container["createdAt"] = StoredDate.value(createdAt)
        container["duration"] = duration
        container["sizeBytes"] = sizeBytes
        container["file"] = file
        container["playCount"] = playCount
        container["lastPlayedAt"] = lastPlayedAt.map(StoredDate.value)
        container["recovered"] = recovered
        container["droppedFrames"] = droppedFrames
        container["loudness"] = loudness.map(Self.loudnessColumn)
        container["format"] = format?.rawValue
        container["source"] = source.rawValue
    }

    /// One row by id through a statement compiled once per connection (GRDB's `fetchOne(key:)` builds
    /// and compiles its SQL anew each time: a sixth of a play count's CPU).
    static func fetch(_ db: Database, id: String) throws -> Recording? {
        try fetchOne(db.cachedStatement(sql: "SELECT \(selection) FROM recording WHERE id = ?"), arguments: [id])
    }

    /// The row `id`, in one of `states` when they are given; else `notFound` or `unexpectedState`.
    static func existing(_ db: Database, id: String, in states: Set<String>? = nil) throws -> Recording {
        guard let r = try fetch(db, id: id) else { throw CatalogError.notFound(id: id) }
        if let states, !states.contains(r.state.rawValue) { throw CatalogError.unexpectedState(id: id, state: r.state.rawValue) }
        return r
    }

    /// How a `Loudness` is stored in its column.
    static func loudnessColumn(_ l: Loudness) -> String {
        // Three optional doubles: encoding cannot fail.
        String(decoding: (try? JSONEncoder().encode(l)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The id as a UUID: the stored upper-case form read digit by digit (`UUID(uuidString:)` went
    /// through sscanf, a tenth of a listing's reply), anything else by Foundation.
    package static func uuid(_ text: String) -> UUID? {
        var text = text
        let fast = text.withUTF8 { b -> UUID? in
            guard b.count == 36, b[8] == 45, b[13] == 45, b[18] == 45, b[23] == 45 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var at = 0
                for i in 0..<16 {
                    if at == 8 || at == 13 || at == 18 || at == 23 { at += 1 }
                    func digit(_ c: UInt8) -> UInt8? {
                        switch c {
                        case 48...57: c - 48
                        case 65...70: c - 55
                        case 97...102: c - 87
                        default: nil
                        }
                    }
                    guard let high = digit(b[at]), let low = digit(b[at + 1]) else { return false }
                    out[i] = high << 4 | low
                    at += 2
                }
                return true
            }
            return ok ? UUID(uuid: bytes) : nil
        }
        return fast ?? UUID(uuidString: text)
    }
}
