// The one table of the catalog, as a GRDB record.
import Foundation
import GRDB
import RecdAPI

/// A row of the `recording` table. Ids are stored as upper-case UUID text (as `UUID.uuidString`
/// prints them) so that id prefixes can be matched with an index range scan.
struct RecordingRecord: Encodable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "recording"

    /// Dates as GRDB writes them, without its DateFormatter (ICU: 3 MB of an idle daemon's memory,
    /// loaded by the first insert): `StoredDate.value`, which a unit test holds to GRDB's writing.
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        .custom { StoredDate.value($0) }
    }

    var id: String
    var type: String
    var state: String
    var title: String
    var notes: String
    var purpose: String?
    var createdAt: Date
    var duration: Double?
    var sizeBytes: Int64?
    var file: String
    var playCount: Int
    var lastPlayedAt: Date?
    var recovered: Bool
    var droppedFrames: Int
    /// `Loudness` as JSON (catalog v8); NULL until measured.
    var loudness: String?
    /// `RecordingFormat` (catalog v9); NULL for a silent video or a file kept in another codec.
    var format: String?
    /// `RecordingSource` (catalog v16).
    var source: String
    /// The loudness column as read back: taken apart by SQLite (`json_extract`) in the query, so a
    /// list of recordings decodes no JSON per row. Not a column of its own.
    private var readLoudness: Loudness?

    enum CodingKeys: String, CodingKey {
        case id, type, state, title, notes, purpose, createdAt, duration, sizeBytes, file, playCount, lastPlayedAt,
             recovered, droppedFrames, loudness, format, source
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let state = Column(CodingKeys.state)
        static let createdAt = Column(CodingKeys.createdAt)
    }

    /// What every read selects, in this order: `init(row:)` reads the columns by position (GRDB's
    /// Codable decoding looks each one up by name through a keyed container: most of a listing's
    /// time went there and into a JSONDecoder per row for the loudness).
    static var databaseSelection: [any SQLSelectable] {
        selectedColumns.map { Column($0) as any SQLSelectable } + selectedLoudness.map { SQL(sql: $0) as any SQLSelectable }
    }
    private static let selectedColumns = ["id", "type", "state", "title", "notes", "purpose", "createdAt", "duration", "sizeBytes",
                                          "file", "playCount", "lastPlayedAt", "recovered", "droppedFrames", "loudness", "format", "source"]
    private static let selectedLoudness = ["integrated", "range", "truePeak"].map { "json_extract(loudness, '$.\($0)')" }

    /// One row by id through a statement compiled once per connection (GRDB's `fetchOne(key:)` builds
    /// and compiles its SQL anew each time: a sixth of a play count's CPU).
    static func fetch(_ db: Database, id: String) throws -> RecordingRecord? {
        try fetchOne(db.cachedStatement(sql: selectByID), arguments: [id])
    }
    private static let selectByID = "SELECT \(selection) FROM recording WHERE id = ?"
    /// The selected columns as SQL, for statements written out (and compiled once: `cachedStatement`).
    static let selection = (selectedColumns.map { "\"\($0)\"" } + selectedLoudness).joined(separator: ", ")

    /// The row `id`, in one of `states` when they are given; else `notFound` or `unexpectedState`.
    static func existing(_ db: Database, id: String, in states: Set<String>? = nil) throws -> RecordingRecord {
        guard let record = try fetch(db, id: id) else { throw CatalogError.notFound(id: id) }
        if let states, !states.contains(record.state) { throw CatalogError.unexpectedState(id: id, state: record.state) }
        return record
    }

    init(row: Row) throws {
        id = row[0]; type = row[1]; state = row[2]; title = row[3]; notes = row[4]; purpose = row[5]
        guard let created = StoredDate.read(row, 6) else { throw DatabaseError(message: "recording.createdAt is NULL") }
        createdAt = created; duration = row[7]; sizeBytes = row[8]; file = row[9]; playCount = row[10]
        lastPlayedAt = StoredDate.read(row, 11); recovered = row[12]; droppedFrames = row[13]; loudness = row[14]; format = row[15]
        source = row[16]
        readLoudness = loudness == nil ? nil : Loudness(integrated: row[17], range: row[18], truePeak: row[19])
    }

    init(_ r: Recording) {
        id = r.id.uuidString
        type = r.type.rawValue
        state = r.state.rawValue
        title = r.title
        notes = r.notes
        purpose = r.purpose?.rawValue
        createdAt = r.createdAt
        duration = r.duration
        sizeBytes = r.sizeBytes
        file = r.file
        playCount = r.playCount
        lastPlayedAt = r.lastPlayedAt
        recovered = r.recovered
        droppedFrames = r.droppedFrames
        loudness = r.loudness.map(Self.column)
        format = r.format?.rawValue
        source = r.source.rawValue
    }

    /// How a `Loudness` is stored in its column.
    static func column(_ l: Loudness) -> String {
        // Three optional doubles: encoding cannot fail.
        String(decoding: (try? JSONEncoder().encode(l)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Converts to the API type. A row that does not parse is a corrupt catalog, reported with its id.
    /// The id as a UUID: the stored upper-case form read digit by digit (`UUID(uuidString:)` went
    /// through sscanf, a tenth of a listing's reply), anything else by Foundation.
    static func uuid(_ text: String) -> UUID? {
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

    func recording() throws -> Recording {
        guard let uuid = Self.uuid(id),
              let type = RecordingType(rawValue: type),
              let state = RecordingState(rawValue: state), let source = RecordingSource(rawValue: source) else {
            throw CatalogError.corruptRow(id: id, detail: "id/type/state/source '\(id)'/'\(type)'/'\(state)'/'\(source)'")
        }
        let format = try format.map { f in
            guard let v = RecordingFormat(rawValue: f) else { throw CatalogError.corruptRow(id: id, detail: "format '\(f)'") }
            return v
        }
        let purpose = try purpose.map { p in
            guard let v = Purpose(rawValue: p) else { throw CatalogError.corruptRow(id: id, detail: "purpose '\(p)'") }
            return v
        }
        return Recording(id: uuid, type: type, state: state, title: title, notes: notes, purpose: purpose,
                         createdAt: createdAt, duration: duration, sizeBytes: sizeBytes, file: file,
                         playCount: playCount, lastPlayedAt: lastPlayedAt, recovered: recovered,
                         droppedFrames: droppedFrames,
                         loudness: readLoudness ?? loudness.flatMap { try? JSONDecoder().decode(Loudness.self, from: Data($0.utf8)) },
                         format: format, source: source)
    }
}
