// StorageError as the engine's error (issue 46): case for case, the same words, the same HTTP answer.
import Catalog
import Engine
import Foundation
import RecdAPI
import Server
import Storage
import XCTest

final class StorageErrorTests: XCTestCase {
    func testEachStorageErrorIsTheEngineErrorOfTheSameNameWordForWord() {
        let id = UUID()
        let r = Recording(id: id, type: .audio, state: .ready, title: "t", notes: "", purpose: nil, createdAt: Date(),
                          duration: 1, sizeBytes: 7, file: "Recordings/a.m4a", playCount: 0, lastPlayedAt: nil,
                          recovered: false, droppedFrames: 0)
        let all: [StorageError] = [
            .notFound(id: "abc"), .markerNotFound(recording: "r", marker: "m"), .ambiguousID(prefix: "ab", matches: ["a", "b"]),
            .invalidID(id: "x", detail: "d"), .invalidState(id: id, state: .recording, action: "trim", allowed: [.ready]),
            .fieldTooLong(field: "notes", limit: 2, count: 3), .invalidValue(field: "title", detail: "d"),
            .noMedia(id: id, detail: "has no copy"), .storage(file: "f", operation: "read", underlying: "EIO"),
            .catalog(.database(operation: "o", underlying: "u")), .unexpected("bug"),
            .insufficientStorage(path: "/p", freeBytes: 1_000_000, requiredBytes: 2_000_000), .fileMissing(id: id, file: "f"),
            .duplicate(name: "n", existing: r), .backup(reason: .staging, message: "could not link"),
        ]
        for s in all {
            let e = EngineError(s)
            XCTAssertEqual(e.description, s.description)
            XCTAssertEqual("\(Mirror(reflecting: e).children.first?.label ?? "")", "\(Mirror(reflecting: s).children.first?.label ?? "")")
            let (status, body) = ErrorMapping.map(s), (engineStatus, engineBody) = ErrorMapping.map(e)
            XCTAssertEqual(status, engineStatus, "\(s)")
            XCTAssertEqual(body, engineBody, "\(s)")
        }
        XCTAssertEqual(StorageError.insufficientStorage(path: "/p", freeBytes: 1_000_000, requiredBytes: 2_000_000).description,
                       "not enough free space in /p: 1 MB free, at least 2 MB required (--min-free-mb)")
        XCTAssertEqual(ErrorMapping.map(StorageError.fileMissing(id: id, file: "f")).0.code, 410)
    }

    func testFromMapsCatalogAndStorageErrors() {
        guard case .notFound(let id) = EngineError.from(CatalogError.notFound(id: "abc")), id == "abc" else { return XCTFail() }
        guard case .fileMissing = EngineError.from(StorageError.fileMissing(id: UUID(), file: "f")) else { return XCTFail() }
        guard case .unexpected = EngineError.from(CocoaError(.fileNoSuchFile)) else { return XCTFail() }
    }
}
