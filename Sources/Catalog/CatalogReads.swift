// Reading the catalog: one recording, the library's pages and their totals, Quick Play, counts.
import Foundation
import GRDB
import RecdAPI

extension Catalog {
    public func recording(id: UUID) throws -> Recording? {
        try wrap("read") {
            try pool.read { db in try Recording.fetch(db, id: id.uuidString) }
        }
    }

    /// Whether a row refers to `relativePath` (no decoding: a row recd cannot parse still counts).
    public func hasRow(file relativePath: String) throws -> Bool {
        try wrap("read") {
            try pool.read { db in try Recording.filter(Column("file") == relativePath).fetchCount(db) > 0 }
        }
    }

    /// Ids of the rows in `state`, oldest first, without decoding them (start-up recovery handles
    /// each on its own, so one unreadable row cannot stop the others).
    public func ids(inState state: RecordingState) throws -> [UUID] {
        try wrap("read") {
            try pool.read { db in
                try String.fetchAll(db, Recording.select(Column("id"))
                    .filter(Column("state") == state.rawValue).order(Column("createdAt")))
                    .compactMap(UUID.init(uuidString:))
            }
        }
    }

    /// Resolves a full id or a unique prefix of at least `minimumPrefixLength` characters.
    public func resolve(_ idOrPrefix: String) throws -> Recording {
        let key = idOrPrefix.uppercased()
        if let uuid = UUID(uuidString: key) {
            guard let r = try recording(id: uuid) else { throw CatalogError.notFound(id: idOrPrefix) }
            return r
        }
        // Counted in code points, as the document's minLength is: "ก ำกำ" is five of them and four
        // characters, and a valid id (hex digits) is the same length either way.
        guard idOrPrefix.unicodeScalars.count >= Self.minimumPrefixLength else {
            throw CatalogError.prefixTooShort(prefix: idOrPrefix, minimum: Self.minimumPrefixLength)
        }
        guard key.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { throw CatalogError.notFound(id: idOrPrefix) }
        let rows = try wrap("read") {
            try pool.read { db in
                // A range scan on the primary key: ids >= prefix and < prefix + highest char.
                try Recording
                    .filter(Column("id") >= key && Column("id") < key + "\u{7F}")
                    .limit(11).fetchAll(db)
            }
        }
        switch rows.count {
        case 0: throw CatalogError.notFound(id: idOrPrefix)
        case 1: return rows[0]
        default: throw CatalogError.ambiguous(prefix: idOrPrefix, matches: rows.map(\.id.uuidString))
        }
    }

    public func list(_ q: ListQuery) throws -> (recordings: [Recording], total: Int) {
        let page = Self.listSQL(q)
        return try withTotal(q, page) { db in
            // Written out and compiled once per connection and shape (`cachedStatement`): the
            // query interface built and compiled the SQL on every page.
            try Recording.fetchAll(db.cachedStatement(sql: page.rows), arguments: page.arguments)
        }
    }

    /// A page read by `read`, with its filter's total in the same read transaction: the one kept
    /// since the last write that could change it, or counted now and kept.
    private func withTotal<T>(_ q: ListQuery, _ page: PageSQL, _ read: (Database) throws -> T) throws -> (T, Int) {
        let key = "\(q.state?.rawValue ?? "*") \(q.type?.rawValue ?? "*")"
        let (generation, cached) = totals.withLock { ($0.generation, $0.counts[key]) }
        let result = try wrap("list") { try pool.read { db in (try read(db), try cached ?? count(db, page)) } }
        if cached == nil { totals.withLock { if $0.generation == generation { $0.counts[key] = result.1 } } }
        return result
    }

    /// The SQL of a page: its rows and the count of its filter's rows; the
    /// arguments of the filter, then of the page (`count` takes the filter's alone).
    struct PageSQL {
        var rows: String
        var count: String
        var arguments: StatementArguments
        var filterArguments: [any DatabaseValueConvertible]
    }

    static func listSQL(_ q: ListQuery) -> PageSQL {
        var conditions: [String] = [], filter: [any DatabaseValueConvertible] = []
        if let s = q.state { conditions.append("state = ?"); filter.append(s.rawValue) }
        if let t = q.type { conditions.append("type = ?"); filter.append(t.rawValue) }
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let order = switch q.order {
        case .recent: "createdAt DESC, id"
        case .plays: "playCount DESC, createdAt DESC, id"
        }
        let tail = "FROM recording\(whereClause) ORDER BY \(order) LIMIT ? OFFSET ?"
        return PageSQL(rows: "SELECT \(Recording.selection) \(tail)",
                       count: "SELECT count(*) FROM recording" + whereClause,
                       arguments: StatementArguments(filter + [q.limit, q.offset]), filterArguments: filter)
    }

    private func count(_ db: Database, _ page: PageSQL) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: page.count), arguments: StatementArguments(page.filterArguments)) ?? 0
    }

    /// The `limit` most played saved recordings (the seed's Quick Play): play count descending, then
    /// newest first.
    public func top(limit: Int) throws -> [Recording] {
        let sql = "SELECT \(Recording.selection) FROM recording WHERE state = 'ready' ORDER BY playCount DESC, createdAt DESC, id LIMIT ?"
        return try wrap("top") {
            try pool.read { db in try Recording.fetchAll(db.cachedStatement(sql: sql), arguments: [limit]) }
        }
    }

    /// Number of recordings per state (states with none are absent).
    public func countsByState() throws -> [RecordingState: Int] {
        try wrap("count") {
            try pool.read { db in
                var out: [RecordingState: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM recording GROUP BY state") {
                    if let s = RecordingState(rawValue: row["state"]) { out[s] = row["n"] }
                }
                return out
            }
        }
    }
}
