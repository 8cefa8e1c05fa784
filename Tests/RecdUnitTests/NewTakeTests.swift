// Storage's protocol for a new take's file and row (NewTake), at its own seam: the row before the
// file, the file before the row when a start fails, the outcome retried, a discard journaled. The
// Recorder's use of it is RecorderStateTests'; the crashes between the steps are CrashTests'.
import Catalog
import Foundation
import Logging
import RecdAPI
import Storage
import XCTest

final class NewTakeTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!
    var data: DataDirectory!
    let logger = Logger(label: "recd.test.new-take")

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-take-\(UUID().uuidString)")
        data = DataDirectory(root: dir)
        try data.create()
        catalog = try Catalog(path: data.catalogPath)
    }

    override func tearDown() { catalog = nil; try? FileManager.default.removeItem(at: dir) }

    func take() throws -> NewTake {
        let id = UUID()
        let r = Recording(id: id, type: .audio, state: .recording, title: "Take", notes: "", purpose: nil, createdAt: Date(),
                          duration: nil, sizeBytes: nil, file: DataDirectory.relativePath(id: id, type: .audio), playCount: 0,
                          lastPlayedAt: nil, recovered: false, droppedFrames: 0)
        return try NewTake.begin(r, catalog: catalog, data: data)
    }

    func testTheRowComesFirstAndAFailedStartTakesTheFileThenTheRow() throws {
        let t = try take()
        XCTAssertEqual(try catalog.recording(id: t.recording.id)?.state, .recording, "the row, before anything is captured")
        XCTAssertEqual(t.path, dir.appendingPathComponent(t.recording.file).path)
        XCTAssertTrue(FileManager.default.createFile(atPath: t.path, contents: Data("header".utf8)))
        t.abandon(logger: logger)
        XCTAssertFalse(FileManager.default.fileExists(atPath: t.path))
        XCTAssertNil(try catalog.recording(id: t.recording.id))
        t.abandon(logger: logger)   // nothing left to remove: no error
    }

    func testTheOutcomeIsWrittenAndARowThatIsGoneIsSaidAfterThreeTries() throws {
        let t = try take()
        let saved = try t.settle(logger: logger) { r in r.state = .ready; r.duration = 2; r.sizeBytes = 10 }
        XCTAssertEqual(saved.state, .ready)
        XCTAssertEqual(try catalog.recording(id: t.recording.id)?.duration, 2)

        let gone = try take()
        try catalog.delete(id: gone.recording.id)
        let started = Date()
        XCTAssertThrowsError(try gone.settle(logger: logger) { r in r.state = .ready }) { error in
            guard case StorageError.notFound = error else { return XCTFail("\(error)") }
        }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.55, "tried three times, 200 and 400 ms apart")
    }

    func testADiscardRemovesFileAndRowAndATakeAlreadyGoneIsNoError() throws {
        let t = try take()
        XCTAssertTrue(FileManager.default.createFile(atPath: t.path, contents: Data("sound".utf8)))
        try t.discard()
        XCTAssertFalse(FileManager.default.fileExists(atPath: t.path))
        XCTAssertNil(try catalog.recording(id: t.recording.id))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: data.recordings.path), [], "no aside file left")
        try t.discard()
        // A take saved meanwhile is not a take to discard: refused, and kept.
        let kept = try take()
        _ = try kept.settle(logger: logger) { r in r.state = .ready }
        XCTAssertThrowsError(try kept.discard()) { error in
            guard case StorageError.invalidState(_, .ready, "discard", _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertNotNil(try catalog.recording(id: kept.recording.id))
    }
}
