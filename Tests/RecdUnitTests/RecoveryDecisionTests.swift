// Start-up recovery's decisions in milliseconds (issue 46): a real catalog and a real data directory
// in a temporary folder, the files a crash leaves made by hand; no daemon, no media worker (the
// salvage and adoption of media, which need one, are the integration suite's CrashTests).
import Catalog
import Foundation
import Logging
import RecdAPI
import Storage
import XCTest

final class RecoveryDecisionTests: XCTestCase {
    var root: URL!
    var data: DataDirectory!
    var catalog: Catalog!

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("recd-recovery-\(UUID().uuidString)")
        data = DataDirectory(root: root)
        try data.create()
        catalog = try Catalog(path: data.catalogPath)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: root)
    }

    func recover(activeID: UUID? = nil) -> RecoveryReport {
        Recovery(catalog: catalog, data: data, timeZone: TimeZone(identifier: "UTC"), logger: Logger(label: "recd.test.recovery")).run(activeID: activeID)
    }

    /// A row in `state`, and its file holding `bytes` (nil: no file).
    @discardableResult
    func row(_ state: RecordingState, bytes: String? = "sound") throws -> Recording {
        let id = UUID()
        let r = Recording(id: id, type: .audio, state: state, title: "Memo", notes: "", purpose: nil, createdAt: Date(),
                          duration: 1, sizeBytes: bytes.map { Int64($0.utf8.count) }, file: DataDirectory.relativePath(id: id, type: .audio),
                          playCount: 0, lastPlayedAt: nil, recovered: false, droppedFrames: 0)
        try catalog.insert(r)
        if let bytes { try write(bytes, to: path(r)) }
        return r
    }

    func path(_ r: Recording) -> String { data.absolute(r.file) }
    func write(_ text: String, to path: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }
    func read(_ path: String) -> String? { (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) } }
    func hidden() throws -> [String] { try data.listRecordings().hidden.sorted() }

    func testAnInterruptedDeleteIsUndoneWhileItsRowIsThereAndFinishedOnceItIsGone() throws {
        // Killed between the file's move aside and the row's delete: the row is there, so undone.
        let kept = try row(.ready)
        try FileOps.rename(path(kept), data.discardingPath(for: path(kept)))
        // Killed after the row's delete: finished.
        let gone = UUID()
        let aside = data.discardingPath(for: data.absolute(DataDirectory.relativePath(id: gone, type: .audio)))
        try write("sound", to: aside)
        let report = recover()
        XCTAssertEqual(report.removalsUndone, [data.discardingPath(for: path(kept))])
        XCTAssertEqual(report.removalsFinished, [aside])
        XCTAssertEqual(read(path(kept)), "sound")
        XCTAssertEqual(try catalog.recording(id: kept.id)?.state, .ready)
        XCTAssertEqual(try hidden(), [])
        XCTAssertEqual(try catalog.recording(id: gone), nil, "no row is made for what was deleted")
    }

    func testATrimIsFinishedOnlyWhenItsCommitReachedTheJournal() throws {
        // Committed (journaled) but not yet renamed into place: finished.
        let committed = try row(.ready, bytes: "old sound")
        let temporary = data.replacingPath(for: path(committed))
        try write("new sound", to: temporary)
        try catalog.commitChapters(id: committed.id, sizeBytes: 9, temporary: data.relative(temporary))
        // Written, never committed: the old file stays, the new one goes.
        let uncommitted = try row(.ready, bytes: "old sound")
        let stray = data.replacingPath(for: path(uncommitted))
        try write("half a new sound", to: stray)
        let report = recover()
        XCTAssertEqual(report.replacementsFinished, [path(committed)])
        XCTAssertEqual(read(path(committed)), "new sound")
        XCTAssertTrue(report.temporaryFilesRemoved.contains(stray), "\(report.temporaryFilesRemoved)")
        XCTAssertEqual(read(path(uncommitted)), "old sound")
        XCTAssertEqual(try hidden(), [])
        XCTAssertTrue(try catalog.openJournal().isEmpty, "the journal entry is closed")
    }

    func testARowWithoutItsFileIsMissingAndComesBackAsItWasWithTheSameFile() throws {
        let same = try row(.ready)
        let other = try row(.ready)
        let moved = root.appendingPathComponent("elsewhere").path
        try FileOps.rename(path(same), moved)
        try FileOps.remove(path(other))
        var report = recover()
        XCTAssertEqual(Set(report.markedMissing), [same.id, other.id])
        XCTAssertEqual(try catalog.recording(id: same.id)?.state, .missing)
        // Put back: the same file is ready again; another file (another size) asks to be looked at.
        try FileOps.rename(moved, path(same))
        try write("some other sound", to: path(other))
        report = recover()
        XCTAssertEqual(Set(report.foundAgain), [same.id, other.id])
        XCTAssertEqual(try catalog.recording(id: same.id)?.state, .ready)
        XCTAssertEqual(try catalog.recording(id: other.id)?.state, .pending)
        XCTAssertTrue(recover().isClean, "nothing left to do")
    }

    func testWhatIsNotMediaIsQuarantinedNeverDeleted() throws {
        let note = data.recordings.appendingPathComponent("shopping.m4a").path
        try write("eggs, milk", to: note)
        try write("older", to: data.recordings.appendingPathComponent(".quarantine/shopping.m4a").path, makingFolder: true)
        let report = recover()
        XCTAssertEqual(report.quarantined, ["shopping.m4a"])
        XCTAssertEqual(read(data.recordings.appendingPathComponent(".quarantine/shopping.m4a.2").path), "eggs, milk",
                       "beside the one quarantined before, not over it")
        XCTAssertEqual(read(data.recordings.appendingPathComponent(".quarantine/shopping.m4a").path), "older")
        XCTAssertTrue(try catalog.list(ListQuery()).recordings.isEmpty, "no row for it")
    }

    func testATakeInterruptedBeforeItsFirstSoundIsRemovedAndTheOneRecordingNowIsLeftAlone() throws {
        let empty = try row(.recording, bytes: "")
        let never = try row(.recording, bytes: nil)
        let active = try row(.recording)
        let finalizing = data.finalizingPath(for: path(active))
        try write("being finalized", to: finalizing)
        let report = recover(activeID: active.id)
        XCTAssertEqual(Set(report.removedEmpty), [empty.id, never.id])
        XCTAssertNil(try catalog.recording(id: empty.id))
        XCTAssertFalse(FileOps.exists(path(empty)))
        XCTAssertEqual(try catalog.recording(id: active.id)?.state, .recording, "the take under way is not salvaged")
        XCTAssertEqual(read(finalizing), "being finalized", "nor its finalization file removed")
    }
}

extension RecoveryDecisionTests {
    func write(_ text: String, to path: String, makingFolder: Bool) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try write(text, to: path)
    }
}
