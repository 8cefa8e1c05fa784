import Foundation
import Storage
import Synchronization
import XCTest

/// The cadence that makes a recording's file durable while it is written (the power-cut guarantee;
/// the cut itself is tested in the VM by PowerCutTests).
final class PeriodicDataSyncTests: XCTestCase {
    func testSyncsASettledChangeAtMostTwicePerIntervalAndATrickleOncePerInterval() {
        let s = PeriodicDataSync.shouldSync
        XCTAssertFalse(s(false, true, 5000, 1000), "nothing new: no sync")
        XCTAssertTrue(s(true, true, 500, 1000), "a settled fragment, half an interval on")
        XCTAssertFalse(s(true, true, 499, 1000), "not more than twice per interval")
        XCTAssertFalse(s(true, false, 999, 1000), "still being written: wait for it to settle")
        XCTAssertTrue(s(true, false, 1000, 1000), "written to for a whole interval: sync anyway")
    }

    func testZeroIntervalIsOff() {
        XCTAssertNil(PeriodicDataSync(path: "/nonexistent", intervalMs: 0, onError: { _ in }))
    }

    /// A file written a fragment at a time, as the muxer does (and says so: `written()`): each one is
    /// synced as it lands, once per fragment, and the stop joins the thread at once.
    func testSyncsEachFragmentOfAGrowingFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("audio.m4a").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(count: 28)))
        let errors = Mutex<[StorageError]>([])
        let sync = try XCTUnwrap(PeriodicDataSync(path: path, intervalMs: 200, onError: { e in errors.withLock { $0.append(e) } }))
        sync.start()
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        for _ in 0..<10 {   // ten fragments, 200 ms apart
            Thread.sleep(forTimeInterval: 0.2)
            handle.write(Data(count: 12_000))
            sync.written()
        }
        // The last one is synced: at once on a quiet machine; a loaded one (CI's other half) may give
        // the sync thread its turn late (110,592 of 120,028 bytes after 0.1 s, seen once).
        let deadline = Date().addingTimeInterval(3)
        while sync.stats.syncedBytes < 28 + 10 * 12_000 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let settled = sync.stats
        XCTAssertEqual(settled.syncedBytes, 28 + 10 * 12_000, "the last fragment reached the disk")
        XCTAssertGreaterThanOrEqual(settled.syncs, 9, "\(settled)")
        XCTAssertLessThanOrEqual(settled.syncs, 11, "one sync per fragment: \(settled)")
        // The trailer, written just before the stop: the stop syncs it before it returns.
        handle.write(Data(count: 500))
        let t0 = Date()
        sync.stop()
        XCTAssertLessThan(Date().timeIntervalSince(t0), 0.2, "stop waits at most for one sync")
        try handle.close()
        let stats = sync.stats
        XCTAssertEqual(stats.syncedBytes, 28 + 10 * 12_000 + 500, "all of the file is on the disk after the stop")
        XCTAssertEqual(stats.syncs, settled.syncs + 1)
        XCTAssertTrue(errors.withLock { $0 }.isEmpty)
        sync.stop()   // idempotent
    }

    /// A file that changes without a word from its writer (a trickle) is still synced, once per
    /// interval; a burst of `written()` calls is one wake-up, one sync.
    func testAnUnannouncedChangeIsSyncedWithinAnInterval() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("audio.m4a").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(count: 28)))
        let sync = try XCTUnwrap(PeriodicDataSync(path: path, intervalMs: 200, onError: { _ in XCTFail("no error expected") }))
        sync.start()
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(count: 1_000))
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(sync.stats.syncedBytes, 1_028, "synced within two intervals without being told")
        let before = sync.stats.syncs
        handle.write(Data(count: 1_000))
        for _ in 0..<50 { sync.written() }
        Thread.sleep(forTimeInterval: 0.15)
        XCTAssertEqual(sync.stats.syncedBytes, 2_028)
        XCTAssertEqual(sync.stats.syncs, before + 1, "fifty calls, one sync")
        try handle.close()
        sync.stop()
    }

    /// A failed fdatasync (EIO from the disk) is the recording's fault, reported once, with the file
    /// and the call; the thread ends.
    func testAFailedSyncIsReportedOnceAsAStorageError() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("audio.m4a").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(count: 100)))
        let errors = Mutex<[StorageError]>([])
        let calls = Atomic<Int>(0)
        let sync = try XCTUnwrap(PeriodicDataSync(path: path, intervalMs: 40, onError: { e in errors.withLock { $0.append(e) } },
                                                  sync: { _ in calls.add(1, ordering: .relaxed); errno = EIO; return -1 }))
        sync.start()
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        for _ in 0..<10 {
            Thread.sleep(forTimeInterval: 0.03)
            handle.seekToEndOfFile()
            handle.write(Data(count: 100))
        }
        try handle.close()
        sync.stop()
        XCTAssertEqual(calls.load(ordering: .relaxed), 1, "the thread ends at the first failure")
        let reported = errors.withLock { $0 }
        XCTAssertEqual(reported.count, 1)
        guard case .storage(let file, let operation, let underlying)? = reported.first else {
            return XCTFail("\(reported)")
        }
        XCTAssertEqual(file, path)
        XCTAssertEqual(operation, "fdatasync")
        XCTAssertEqual(underlying, String(cString: strerror(EIO)))
    }
}
