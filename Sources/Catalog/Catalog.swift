// The SQLite catalog of recordings (GRDB over the system libsqlite3, WAL mode).
import Foundation
import GRDB
import RecdAPI
import Synchronization

public enum CatalogError: Error, CustomStringConvertible, Sendable {
    case open(path: String, underlying: String)
    case notFound(id: String)
    case ambiguous(prefix: String, matches: [String])
    case prefixTooShort(prefix: String, minimum: Int)
    case corruptRow(id: String, detail: String)
    /// A conditional write found the row in another state.
    case unexpectedState(id: String, state: String)
    /// An import's content is already the recording `existingID`.
    case duplicate(existingID: String)
    case database(operation: String, underlying: String)

    public var description: String {
        switch self {
        case .open(let path, let e): return "cannot open catalog \(path): \(e)"
        case .notFound(let id): return "no recording with id '\(id)'"
        case .ambiguous(let p, let m): return "id prefix '\(p)' matches \(m.count) recordings: \(m.joined(separator: ", "))"
        case .prefixTooShort(let p, let n): return "id prefix '\(p)' is too short: give at least \(n) characters"
        case .corruptRow(let id, let d): return "catalog row \(id) is corrupt: \(d)"
        case .unexpectedState(let id, let state): return "recording \(id) is \(state)"
        case .duplicate(let id): return "the same content is already recording \(id)"
        case .database(let op, let e): return "catalog \(op) failed: \(e)"
        }
    }
}

/// Filter and order of a library listing.
public struct ListQuery: Sendable, Equatable {
    public var order: ListOrder = .recent
    public var state: RecordingState?
    public var type: RecordingType?
    public var limit: Int = 100
    public var offset: Int = 0
    public init(order: ListOrder = .recent, state: RecordingState? = nil, type: RecordingType? = nil,
                limit: Int = 100, offset: Int = 0) {
        self.order = order; self.state = state; self.type = type; self.limit = limit; self.offset = offset
    }
}

/// The catalog. Every write is one transaction; invariants (unique file, valid enums, non-negative
/// counts) live in the schema. Safe to share between tasks: GRDB's pool serializes writes.
public final class Catalog: Sendable {
    public static let minimumPrefixLength = 4

    let pool: DatabasePool
    public let path: String
    /// `list`'s totals per filter, counted once and kept until a write could change them (every write
    /// but a play count), so paging through a large library does not count every row for each page.
    /// The generation tells a count that raced a write (read before it, stored after) from a good one.
    private let totals = Mutex<(generation: Int, counts: [String: Int])>((0, [:]))

    public init(path: String) throws {
        self.path = path
        var config = Configuration()
        config.busyMode = .timeout(5)
        do {
            pool = try DatabasePool(path: path, configuration: config)
            // FULL: a committed state change survives power loss, not only a process crash (each
            // commit fsyncs the WAL). Set here, on the pool's one writer connection, after the pool
            // is open: GRDB's WAL set-up sets NORMAL after `prepareDatabase` runs (NORMAL lost
            // acknowledged changes to power cuts in the VM test).
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.migrator.migrate(pool)
        } catch {
            throw CatalogError.open(path: path, underlying: "\(error)")
        }
    }

    /// Every write but a play count: the transaction, then the cached totals are dropped (a row added,
    /// removed, or moved to another state or type).
    private func write<T>(_ updates: (Database) throws -> T) throws -> T {
        defer { totals.withLock { $0.generation += 1; $0.counts.removeAll() } }
        return try pool.write(updates)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1: recordings") { db in
            try db.create(table: "recording") { t in
                t.primaryKey("id", .text)
                t.column("type", .text).notNull().check(sql: "type IN ('audio', 'video')")
                t.column("state", .text).notNull()
                t.column("title", .text).notNull().check(sql: "length(title) > 0")
                t.column("notes", .text).notNull().defaults(to: "")
                t.column("purpose", .text)
                    .check(sql: "purpose IS NULL OR purpose IN ('motivational', 'craving', 'reflection', 'milestone')")
                t.column("createdAt", .datetime).notNull()
                t.column("duration", .double)
                t.column("sizeBytes", .integer)
                t.column("file", .text).notNull().unique()
                t.column("playCount", .integer).notNull().defaults(to: 0).check(sql: "playCount >= 0")
                t.column("lastPlayedAt", .datetime)
                t.column("recovered", .boolean).notNull().defaults(to: false)
                t.column("droppedFrames", .integer).notNull().defaults(to: 0)
            }
            // Newest first, and the seed's "most played" order (count desc, then newest).
            try db.create(index: "recording_by_created", on: "recording", columns: ["createdAt"])
            try db.execute(sql: "CREATE INDEX recording_by_plays ON recording(playCount DESC, createdAt DESC)")
            try db.create(index: "recording_by_state", on: "recording", columns: ["state", "createdAt"])
        }
        m.registerMigration("v2: journal") { db in
            // Multi-step operations that must finish or be undone as a whole after a crash
            // (delete all). A row here means "started, not committed".
            try db.create(table: "journal") { t in
                t.primaryKey("id", .text)
                t.column("kind", .text).notNull()
                t.column("startedAt", .datetime).notNull()
            }
        }
        m.registerMigration("v3: play-count indexes") { db in
            // The listing by plays and Quick Play (ready only) as pure index range scans, ties broken
            // by id inside the index, so neither sorts 100,000 rows.
            try db.execute(sql: "DROP INDEX recording_by_plays")
            try db.execute(sql: "CREATE INDEX recording_by_plays ON recording(playCount DESC, createdAt DESC, id)")
            try db.execute(sql: "CREATE INDEX recording_by_state_plays ON recording(state, playCount DESC, createdAt DESC, id)")
        }
        m.registerMigration("v4: waveforms") { db in
            // audiowaveform v2 binary data (16-bit, the recording's own resolution), one per recording;
            // it goes with its row.
            try db.execute(sql: """
                CREATE TABLE waveform (
                    recordingID TEXT PRIMARY KEY NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                    data BLOB NOT NULL)
                """)
        }
        m.registerMigration("v5: posters") { db in
            // JPEG of a video recording's first frame (the preview's "first frame shown"); it goes with its row.
            try db.execute(sql: """
                CREATE TABLE poster (
                    recordingID TEXT PRIMARY KEY NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                    data BLOB NOT NULL)
                """)
        }
        m.registerMigration("v6: state and droppedFrames checks") { db in
            // The states and counters the code writes, enforced by the schema as the other columns'
            // are: SQLite adds CHECKs only by rebuilding the table (its documented 12 steps; GRDB runs
            // the migration with foreign keys off and checks them before the commit, so the waveform
            // and poster rows that refer to a recording stay).
            try db.create(table: "recording_v6") { t in
                t.primaryKey("id", .text)
                t.column("type", .text).notNull().check(sql: "type IN ('audio', 'video')")
                t.column("state", .text).notNull().check(sql: "state IN ('recording', 'pending', 'ready', 'missing')")
                t.column("title", .text).notNull().check(sql: "length(title) > 0")
                t.column("notes", .text).notNull().defaults(to: "")
                t.column("purpose", .text)
                    .check(sql: "purpose IS NULL OR purpose IN ('motivational', 'craving', 'reflection', 'milestone')")
                t.column("createdAt", .datetime).notNull()
                t.column("duration", .double)
                t.column("sizeBytes", .integer)
                t.column("file", .text).notNull().unique()
                t.column("playCount", .integer).notNull().defaults(to: 0).check(sql: "playCount >= 0")
                t.column("lastPlayedAt", .datetime)
                t.column("recovered", .boolean).notNull().defaults(to: false)
                t.column("droppedFrames", .integer).notNull().defaults(to: 0).check(sql: "droppedFrames >= 0")
            }
            let columns = "id, type, state, title, notes, purpose, createdAt, duration, sizeBytes, file, playCount, lastPlayedAt, recovered, droppedFrames"
            try db.execute(sql: "INSERT INTO recording_v6 (\(columns)) SELECT \(columns) FROM recording")
            try db.drop(table: "recording")
            try db.rename(table: "recording_v6", to: "recording")
            try db.create(index: "recording_by_created", on: "recording", columns: ["createdAt"])
            try db.create(index: "recording_by_state", on: "recording", columns: ["state", "createdAt"])
            try db.execute(sql: "CREATE INDEX recording_by_plays ON recording(playCount DESC, createdAt DESC, id)")
            try db.execute(sql: "CREATE INDEX recording_by_state_plays ON recording(state, playCount DESC, createdAt DESC, id)")
        }
        m.registerMigration("v7: content hashes of imports") { db in
            // SHA-256 of an imported file's bytes: the same content imported twice is found, not
            // stored twice. Recordings made here have none.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN contentHash TEXT")
            try db.execute(sql: "CREATE UNIQUE INDEX recording_by_content ON recording(contentHash) WHERE contentHash IS NOT NULL")
        }
        m.registerMigration("v8: loudness") { db in
            // EBU R128 integrated loudness, range and true peak of the recording's sound, as JSON
            // (`Loudness`); NULL until measured.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN loudness TEXT")
        }
        m.registerMigration("v9: formats") { db in
            // How the sound is encoded (`RecordingFormat`). Until now recd wrote AAC only: a file it
            // recorded (named after its row) with sound (a waveform: a silent video has none) is AAC.
            // Imports and adopted files, which may hold another codec, stay NULL (not known).
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN format TEXT CHECK (format IS NULL OR format IN ('aac', 'opus', 'flac'))")
            try db.execute(sql: """
                UPDATE recording SET format = 'aac'
                WHERE contentHash IS NULL AND id IN (SELECT recordingID FROM waveform)
                  AND file IN ('Recordings/audio_' || id || '.m4a', 'Recordings/video_' || id || '.mov')
                """)
        }
        m.registerMigration("v10: the state a missing recording had") { db in
            // `missing` forgot whether the recording was saved or pending; the file put back (as recctl
            // advises) then made a saved recording pending. NULL for every other state, and for rows
            // marked missing before this column.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN missingFrom TEXT CHECK (missingFrom IS NULL OR missingFrom IN ('pending', 'ready'))")
        }
        return m
    }

    private func wrap<T>(_ operation: String, _ body: () throws -> T) throws -> T {
        do { return try body() }
        catch let e as DatabaseError { throw CatalogError.database(operation: operation, underlying: "\(e)") }
        // Anything else (CatalogError, or an error thrown by a caller's closure) passes through.

    }

    // MARK: reads

    public func recording(id: UUID) throws -> Recording? {
        try wrap("read") {
            try pool.read { db in try RecordingRecord.fetch(db, id: id.uuidString)?.recording() }
        }
    }

    /// Whether a row refers to `relativePath` (no decoding: a row recd cannot parse still counts).
    public func hasRow(file relativePath: String) throws -> Bool {
        try wrap("read") {
            try pool.read { db in try RecordingRecord.filter(Column("file") == relativePath).fetchCount(db) > 0 }
        }
    }

    /// Ids of the rows in `state`, oldest first, without decoding them (start-up recovery handles
    /// each on its own, so one unreadable row cannot stop the others).
    public func ids(inState state: RecordingState) throws -> [UUID] {
        try wrap("read") {
            try pool.read { db in
                try String.fetchAll(db, RecordingRecord.select(RecordingRecord.Columns.id)
                    .filter(RecordingRecord.Columns.state == state.rawValue).order(RecordingRecord.Columns.createdAt))
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
                try RecordingRecord
                    .filter(RecordingRecord.Columns.id >= key && RecordingRecord.Columns.id < key + "\u{7F}")
                    .limit(11).fetchAll(db)
            }
        }
        switch rows.count {
        case 0: throw CatalogError.notFound(id: idOrPrefix)
        case 1: return try rows[0].recording()
        default: throw CatalogError.ambiguous(prefix: idOrPrefix, matches: rows.map(\.id))
        }
    }

    public func list(_ q: ListQuery) throws -> (recordings: [Recording], total: Int) {
        let page = Self.listSQL(q)
        return try withTotal(q, page) { db in
            // Written out and compiled once per connection and shape (`cachedStatement`): the
            // query interface built and compiled the SQL on every page.
            try RecordingRecord.fetchAll(db.cachedStatement(sql: page.rows), arguments: page.arguments).map { try $0.recording() }
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
        return PageSQL(rows: "SELECT \(RecordingRecord.selection) \(tail)",
                       count: "SELECT count(*) FROM recording" + whereClause,
                       arguments: StatementArguments(filter + [q.limit, q.offset]), filterArguments: filter)
    }

    static func topSQL(limit: Int) -> PageSQL {
        let tail = "FROM recording WHERE state = 'ready' ORDER BY playCount DESC, createdAt DESC, id LIMIT ?"
        return PageSQL(rows: "SELECT \(RecordingRecord.selection) \(tail)",
                       count: "SELECT count(*) FROM recording WHERE state = 'ready'", arguments: [limit], filterArguments: [])
    }

    private func count(_ db: Database, _ page: PageSQL) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: page.count), arguments: StatementArguments(page.filterArguments)) ?? 0
    }

    /// The `limit` most played saved recordings (the seed's Quick Play): play count descending, then
    /// newest first.
    public func top(limit: Int) throws -> [Recording] {
        try wrap("top") {
            try pool.read { db in
                try RecordingRecord.fetchAll(db.cachedStatement(sql: Self.topSQL(limit: limit).rows), arguments: [limit])
                    .map { try $0.recording() }
            }
        }
    }

    /// Number of recordings per state (states with none are absent).
    public func countsByState() throws -> [RecordingState: Int] {
        try wrap("count") {
            try pool.read { db in
                var out: [RecordingState: Int] = [:]
                let rows = try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM recording GROUP BY state")
                for row in rows {
                    if let s = RecordingState(rawValue: row["state"]) { out[s] = row["n"] }
                }
                return out
            }
        }
    }

    // MARK: writes

    public func insert(_ r: Recording) throws {
        try wrap("insert") { try write { db in try RecordingRecord(r).insert(db) } }
    }

    /// Reads a row, lets `body` change it, and writes it back, all in one write transaction, so
    /// concurrent changes of the same row cannot interleave. Errors thrown by `body` roll back and
    /// pass through unchanged.
    @discardableResult
    public func modify(id: UUID, _ body: (inout Recording) throws -> Void) throws -> Recording {
        try wrap("update") {
            try write { db in
                guard let record = try RecordingRecord.fetch(db, id: id.uuidString) else {
                    throw CatalogError.notFound(id: id.uuidString)
                }
                var r = try record.recording()
                try body(&r)
                precondition(r.id == id, "modify must not change the id")
                try RecordingRecord(r).update(db)
                return r
            }
        }
    }

    /// One play of a saved recording (see `countPlays`). Returns the row after it; throws `notFound`,
    /// or `unexpectedState` when the recording is not `ready` (previews never count).
    @discardableResult
    public func countPlay(id: UUID, at date: Date) throws -> Recording {
        try countPlays([(id, date)])[0].get()
    }

    /// Plays of saved recordings, all in one transaction: one commit, so one fsync under
    /// `synchronous=FULL`, however many there are (group commit). Each play is one SQL statement (the
    /// count is never read and written back from Swift, so no increment can be lost) and gets its own
    /// result: the row after it, or why it did not count (`notFound`; `unexpectedState` when the
    /// recording is not `ready`: previews never count) — one refused play does not undo the others.
    /// Throws only when the transaction itself fails (then none counted).
    public func countPlays(_ plays: [(id: UUID, at: Date)]) throws -> [Result<Recording, CatalogError>] {
        let ids = plays.map { $0.id.uuidString }
        return try wrap("count plays") {
            try pool.write { db in
                // The row after the play from the UPDATE itself (RETURNING): one statement per play.
                let count = try db.cachedStatement(sql: """
                    UPDATE recording SET playCount = playCount + 1, lastPlayedAt = ? WHERE id = ? AND state = 'ready'
                    RETURNING \(RecordingRecord.selection)
                    """)
                return try zip(plays, ids).map { play, id -> Result<Recording, CatalogError> in
                    if let record = try RecordingRecord.fetchOne(count, arguments: [StoredDate.value(play.at), id]) {
                        return .success(try record.recording())
                    }
                    guard let record = try RecordingRecord.fetch(db, id: id) else { return .failure(.notFound(id: id)) }
                    return .failure(.unexpectedState(id: id, state: record.state))
                }
            }
        }
    }

    /// Deletes a row if, in the same transaction, it is still in `state`. Throws `notFound` or
    /// `unexpectedState` otherwise.
    public func delete(id: UUID, ifStateIn states: Set<String>) throws {
        try wrap("delete") {
            try write { db in
                guard let record = try RecordingRecord.fetch(db, id: id.uuidString) else {
                    throw CatalogError.notFound(id: id.uuidString)
                }
                guard states.contains(record.state) else {
                    throw CatalogError.unexpectedState(id: id.uuidString, state: record.state)
                }
                try RecordingRecord.deleteOne(db, key: id.uuidString)
            }
        }
    }

    /// The row's file is gone: `missing`, remembering the state it had (pending or ready) for when
    /// the file is back. Returns false when the row is not pending or ready (any more).
    @discardableResult
    public func markMissing(id: UUID) throws -> Bool {
        try wrap("mark missing") {
            try write { db in
                // SQLite evaluates every right-hand side against the row as it was: `state` is the old one.
                try db.execute(sql: """
                    UPDATE recording SET missingFrom = state, state = 'missing'
                    WHERE id = ? AND state IN ('pending', 'ready')
                    """, arguments: [id.uuidString])
                return db.changesCount > 0
            }
        }
    }

    /// The file of a missing row is back, `sizeBytes` long. The same size as the row says: the state it
    /// had before (a saved recording is saved again, its flags as they were). Another size, or a row
    /// marked missing before recd remembered the state: pending and `recovered`, so the user looks.
    /// Returns the row after it, or nil when it is not missing (any more).
    public func fileIsBack(id: UUID, sizeBytes: Int64?) throws -> Recording? {
        try wrap("restore") {
            try write { db in
                try db.execute(sql: """
                    UPDATE recording SET
                      state = CASE WHEN missingFrom IS NOT NULL AND sizeBytes IS ?1 THEN missingFrom ELSE 'pending' END,
                      recovered = CASE WHEN missingFrom IS NOT NULL AND sizeBytes IS ?1 THEN recovered ELSE 1 END,
                      missingFrom = NULL
                    WHERE id = ?2 AND state = 'missing'
                    """, arguments: [sizeBytes, id.uuidString])
                guard db.changesCount > 0 else { return nil }
                return try RecordingRecord.fetch(db, id: id.uuidString)?.recording()
            }
        }
    }

    /// Every row's file (relative path) with its id and state, for matching against `Recordings/`.
    /// Ids stay text here: parsing 100,000 UUIDs is a noticeable part of start-up; and an array,
    /// not a dictionary by file: the caller looks the files up in the listing, not the other way.
    public func fileRows() throws -> [(file: String, id: String, state: String)] {
        try wrap("read") {
            try pool.read { db in
                var out: [(file: String, id: String, state: String)] = []
                out.reserveCapacity(try Int.fetchOne(db, sql: "SELECT count(*) FROM recording") ?? 0)
                let rows = try Row.fetchCursor(db, sql: "SELECT file, id, state FROM recording")
                while let row = try rows.next() { out.append((row[0], row[1], row[2])) }
                return out
            }
        }
    }

    // MARK: waveforms and posters

    /// Data kept per recording in a table of its own, deleted with the recording's row.
    private enum Attachment: String { case waveform, poster }

    private func store(_ table: Attachment, id: UUID, data: Data) throws {
        try wrap("store \(table.rawValue)") {
            try write { db in
                guard try RecordingRecord.exists(db, key: id.uuidString) else { throw CatalogError.notFound(id: id.uuidString) }
                try db.execute(sql: "INSERT OR REPLACE INTO \(table.rawValue) (recordingID, data) VALUES (?, ?)",
                               arguments: [id.uuidString, data])
            }
        }
    }

    private func fetch(_ table: Attachment, id: UUID) throws -> Data? {
        try wrap("read \(table.rawValue)") {
            try pool.read { db in
                try Data.fetchOne(db, sql: "SELECT data FROM \(table.rawValue) WHERE recordingID = ?", arguments: [id.uuidString])
            }
        }
    }

    /// Stores (or replaces) a recording's waveform. Throws `notFound` if the recording is gone.
    public func storeWaveform(id: UUID, data: Data) throws { try store(.waveform, id: id, data: data) }
    public func waveform(id: UUID) throws -> Data? { try fetch(.waveform, id: id) }

    /// Stores (or replaces) a video recording's poster (JPEG). Throws `notFound` if the recording is gone.
    public func storePoster(id: UUID, data: Data) throws { try store(.poster, id: id, data: data) }
    public func poster(id: UUID) throws -> Data? { try fetch(.poster, id: id) }

    // MARK: journal

    /// Records that a multi-step operation started; returns its id.
    public func beginJournal(kind: String) throws -> String {
        let id = UUID().uuidString
        try wrap("journal") {
            try write { db in
                try db.execute(sql: "INSERT INTO journal (id, kind, startedAt) VALUES (?, ?, ?)",
                               arguments: [id, kind, StoredDate.value(Date())])
            }
        }
        return id
    }

    /// Operations started and not committed (what a crash interrupted).
    public func openJournal() throws -> [(id: String, kind: String)] {
        try wrap("journal") {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT id, kind FROM journal ORDER BY startedAt").map { ($0["id"], $0["kind"]) }
            }
        }
    }

    /// Closes a journal entry without doing anything else (the operation was rolled back).
    public func endJournal(id: String) throws {
        try wrap("journal") { try write { db in try db.execute(sql: "DELETE FROM journal WHERE id = ?", arguments: [id]) } }
    }

    /// The commit point of "delete all": every row and the journal entry go in one transaction.
    /// Returns the number of rows deleted.
    public func commitDeleteAll(journalID: String) throws -> Int {
        try wrap("delete all") {
            try write { db in
                let n = try RecordingRecord.deleteAll(db)
                try db.execute(sql: "DELETE FROM journal WHERE id = ?", arguments: [journalID])
                return n
            }
        }
    }

    /// Journal entries of file replacements (trim, import): the id is the temporary file's path
    /// relative to the data directory; see `commitReplacement`.
    public static let replacementKind = "replace"

    /// The commit point of writing a recording's file anew (a trim in place, a trim kept as a new
    /// recording): in one transaction, the row (`insert`: added; else its duration and size updated,
    /// if it is still in one of `states`), its waveform and poster (stored, or removed when nil: a
    /// stale one would not match the new file) and a journal entry naming `temporary`, the finished
    /// file that must then be renamed over the row's file. A crash before this leaves the old
    /// recording; after it, start-up recovery finishes the rename. Throws `notFound` /
    /// `unexpectedState` (nothing written) when the row is gone or has moved on.
    /// `contentHash`: an import's (with `insert`); a row with the same one makes this throw
    /// `duplicate` (nothing written).
    public func commitReplacement(_ r: Recording, insert: Bool, states: Set<String>, waveform: Data?, poster: Data?,
                                  temporary: String, contentHash: String? = nil) throws -> Recording {
        try wrap("replace file") {
            try write { db in
                if insert {
                    if let contentHash, let existing = try Self.recording(withContentHash: contentHash, db) {
                        throw CatalogError.duplicate(existingID: existing.id.uuidString)
                    }
                    try RecordingRecord(r).insert(db)
                    if let contentHash {
                        try db.execute(sql: "UPDATE recording SET contentHash = ? WHERE id = ?", arguments: [contentHash, r.id.uuidString])
                    }
                } else {
                    guard let record = try RecordingRecord.fetch(db, id: r.id.uuidString) else {
                        throw CatalogError.notFound(id: r.id.uuidString)
                    }
                    guard states.contains(record.state) else {
                        throw CatalogError.unexpectedState(id: r.id.uuidString, state: record.state)
                    }
                    // The cut's loudness is its own: measured again (NULL until then).
                    try db.execute(sql: "UPDATE recording SET duration = ?, sizeBytes = ?, loudness = ? WHERE id = ?",
                                   arguments: [r.duration, r.sizeBytes,
                                               r.loudness.map(RecordingRecord.column),
                                               r.id.uuidString])
                }
                for (table, data) in [(Attachment.waveform, waveform), (Attachment.poster, poster)] {
                    if let data {
                        try db.execute(sql: "INSERT OR REPLACE INTO \(table.rawValue) (recordingID, data) VALUES (?, ?)",
                                       arguments: [r.id.uuidString, data])
                    } else {
                        try db.execute(sql: "DELETE FROM \(table.rawValue) WHERE recordingID = ?", arguments: [r.id.uuidString])
                    }
                }
                try db.execute(sql: "INSERT INTO journal (id, kind, startedAt) VALUES (?, ?, ?)",
                               arguments: [temporary, Self.replacementKind, StoredDate.value(Date())])
                guard let after = try RecordingRecord.fetch(db, id: r.id.uuidString) else {
                    throw CatalogError.notFound(id: r.id.uuidString)
                }
                return try after.recording()
            }
        }
    }

    /// The recording whose import had these bytes (SHA-256, hex), if any.
    public func recording(withContentHash hash: String) throws -> Recording? {
        try wrap("read") { try pool.read { db in try Self.recording(withContentHash: hash, db) } }
    }

    private static func recording(withContentHash hash: String, _ db: Database) throws -> Recording? {
        try RecordingRecord.filter(Column("contentHash") == hash).fetchOne(db)?.recording()
    }

    /// Saved and pending recordings whose loudness is not measured yet, newest first.
    public func idsWithoutLoudness() throws -> [UUID] {
        try wrap("read") {
            try pool.read { db in
                try String.fetchAll(db, sql: """
                    SELECT id FROM recording WHERE loudness IS NULL AND state IN ('ready', 'pending') ORDER BY createdAt DESC
                    """).compactMap(UUID.init(uuidString:))
            }
        }
    }

    /// Stores a loudness measured from the file of `sizeBytes` bytes, unless the row has changed
    /// since (measured meanwhile, or its file replaced by a trim: another size). Returns whether it
    /// was stored.
    @discardableResult
    public func storeLoudness(id: UUID, _ loudness: Loudness, measuredFileSize sizeBytes: Int64?) throws -> Bool {
        let json = RecordingRecord.column(loudness)
        return try wrap("store loudness") {
            try write { db in
                try db.execute(sql: "UPDATE recording SET loudness = ? WHERE id = ? AND loudness IS NULL AND sizeBytes IS ?",
                               arguments: [json, id.uuidString, sizeBytes])
                return db.changesCount == 1
            }
        }
    }

    /// Deletes a row; returns whether it existed.
    @discardableResult
    public func delete(id: UUID) throws -> Bool {
        try wrap("delete") { try write { db in try RecordingRecord.deleteOne(db, key: id.uuidString) } }
    }
}
