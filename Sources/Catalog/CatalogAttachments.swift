// Waveforms and posters: data kept per recording in tables of their own, gone with its row.
import Foundation
import GRDB
import RecdAPI

extension Catalog {
    /// Data kept per recording in a table of its own, deleted with the recording's row.
    enum Attachment: String { case waveform, poster }

    private func store(_ table: Attachment, id: UUID, data: Data) throws {
        try wrap("store \(table.rawValue)") {
            try write { db in
                guard try Recording.exists(db, key: id.uuidString) else { throw CatalogError.notFound(id: id.uuidString) }
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
}
