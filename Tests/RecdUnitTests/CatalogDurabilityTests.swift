import Catalog
import Foundation
import GRDB
import XCTest

/// The catalog's commits survive power loss: its writer connection runs with synchronous = FULL
/// (GRDB's DatabasePool sets NORMAL for WAL by itself, which a power cut in the VM showed loses
/// acknowledged changes).
final class CatalogDurabilityTests: XCTestCase {
    func testTheWriterSyncsEveryCommit() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-catalog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for _ in 0..<2 {   // a new catalog, then the same one opened again
            let catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
            let mode = try catalog.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            XCTAssertEqual(mode, 2, "PRAGMA synchronous: 2 is FULL")
            let journal = try catalog.pool.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
            XCTAssertEqual(journal, "wal")
        }
    }
}
