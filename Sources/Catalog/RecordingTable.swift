// The catalog's `recording` table holds `Recording` itself, by GRDB's column coding.
import Foundation
import GRDB
import RecdAPI

/// A row of the `recording` table is a `Recording`, its columns named as its coding keys: a field
/// added to `Recording` (with its column in a migration) is stored and read with nothing written
/// here. Ids are stored as upper-case UUID text (as `UUID.uuidString` prints them) so that id
/// prefixes can be matched with an index range scan; the loudness as JSON text (GRDB's encoding of a
/// nested value); dates as GRDB's own text, written and read by `StoredDate` (see there why).
/// Columns the API does not show (`contentHash`, `missingFrom`) are written by their own SQL, and an
/// `update` leaves them alone: it writes the columns `Recording` has.
extension Recording: FetchableRecord, PersistableRecord {
    public static var databaseTableName: String { "recording" }

    public static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .uppercaseString }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .custom { StoredDate.value($0) } }
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .custom(StoredDate.read) }

    /// One row by id through a statement compiled once per connection (GRDB's `fetchOne(key:)` builds
    /// and compiles its SQL anew each time: a sixth of a play count's CPU).
    static func fetch(_ db: Database, id: String) throws -> Recording? {
        try fetchOne(db.cachedStatement(sql: "SELECT * FROM recording WHERE id = ?"), arguments: [id])
    }

    /// The row `id`, in one of `states` when they are given; else `notFound` or `unexpectedState`.
    static func existing(_ db: Database, id: String, in states: Set<String>? = nil) throws -> Recording {
        guard let record = try fetch(db, id: id) else { throw CatalogError.notFound(id: id) }
        if let states, !states.contains(record.state.rawValue) { throw CatalogError.unexpectedState(id: id, state: record.state.rawValue) }
        return record
    }

    /// How a `Loudness` is stored in its column, for the statements that set it alone.
    static func column(_ l: Loudness) -> String {
        // Three optional doubles, finite or absent: encoding cannot fail.
        String(decoding: (try? databaseJSONEncoder(for: "loudness").encode(l)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
