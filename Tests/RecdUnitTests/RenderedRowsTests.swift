@testable import Catalog
import Foundation
import RecdAPI
import Synchronization
import XCTest

/// The listings written from rows' JSON kept between them (`Catalog.listJSON`/`topJSON`) against
/// the same listings built from the rows (`list`/`top` through `RecordingJSON`), across every kind
/// of write, and the keeping's generation rules on their own.
final class RenderedRowsTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-rendered-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
    }

    override func tearDown() { catalog = nil; try? FileManager.default.removeItem(at: dir) }

    func make(state: RecordingState = .ready, created: TimeInterval, plays: Int = 0) -> Recording {
        let uuid = UUID()
        return Recording(id: uuid, type: .audio, state: state, title: "T \(created)", notes: "n \(created)", purpose: .reflection,
                         createdAt: Date(timeIntervalSince1970: created), duration: 1.5, sizeBytes: 100,
                         file: "Recordings/audio_\(uuid.uuidString).m4a", playCount: plays, lastPlayedAt: nil,
                         recovered: false, droppedFrames: 0,
                         loudness: Loudness(integrated: -20.5, range: 3, truePeak: nil), format: .aac)
    }

    /// Every listing, from kept rows, equals the same listing built from the rows now.
    func assertListingsFresh(_ queries: [ListQuery], file: StaticString = #filePath, line: UInt = #line) throws {
        for q in queries {
            let (rows, total) = try catalog.list(q)
            let want = RecordingJSON.encode(RecordingList(recordings: rows, total: total, limit: q.limit, offset: q.offset)) + Data("\n".utf8)
            let (page, kept) = try catalog.listJSON(q)
            XCTAssertEqual(String(decoding: RecordingJSON.encode(page, total: kept, limit: q.limit, offset: q.offset), as: UTF8.self),
                           String(decoding: want, as: UTF8.self), "\(q)", file: file, line: line)
        }
        for limit in [1, 3, 50] {
            let top = try catalog.top(limit: limit)
            let want = RecordingJSON.encode(RecordingList(recordings: top, total: top.count, limit: limit, offset: 0)) + Data("\n".utf8)
            let page = try catalog.topJSON(limit: limit)
            XCTAssertEqual(Data(RecordingJSON.encode(page, total: page.rows.count, limit: limit, offset: 0)), want,
                           "top \(limit)", file: file, line: line)
        }
    }

    let queries = [ListQuery(), ListQuery(limit: 5), ListQuery(limit: 5, offset: 5), ListQuery(order: .plays, limit: 7),
                   ListQuery(state: .ready), ListQuery(state: .pending), ListQuery(order: .plays, state: .ready, type: .audio, limit: 4)]

    func testListingsFromKeptRowsFollowEveryWrite() throws {
        var rs = (0..<30).map { make(state: $0 % 5 == 0 ? .pending : .ready, created: Double(1000 + $0), plays: $0 % 4) }
        for r in rs { try catalog.insert(r) }
        try assertListingsFresh(queries)
        XCTAssertGreaterThan(catalog.rendered.count, 0, "the listings keep the rows they rendered")
        try assertListingsFresh(queries)   // now from kept rows

        // A play: only the played row is dropped, the rest stay kept; the new count and order show.
        let keptBefore = catalog.rendered.count
        try catalog.countPlay(id: rs[29].id, at: Date(timeIntervalSince1970: 9000))
        XCTAssertEqual(catalog.rendered.count, keptBefore - 1)
        try assertListingsFresh(queries)
        // Group commit of several plays, one refused (pending): the counted ones show.
        _ = try catalog.countPlays([(rs[1].id, Date(timeIntervalSince1970: 9001)), (rs[0].id, Date(timeIntervalSince1970: 9002)),
                                    (rs[1].id, Date(timeIntervalSince1970: 9003))])
        try assertListingsFresh(queries)
        // Any other write drops everything.
        try catalog.modify(id: rs[3].id) { $0.title = "Renamed"; $0.notes = "with \"quotes\"\nand a line" }
        XCTAssertEqual(catalog.rendered.count, 0)
        try assertListingsFresh(queries)
        try catalog.modify(id: rs[5].id) { $0.state = .ready }
        try assertListingsFresh(queries)
        try catalog.delete(id: rs[7].id, ifStateIn: ["ready"])
        rs.remove(at: 7)
        try assertListingsFresh(queries)
        try catalog.insert(make(created: 5000, plays: 99))
        try assertListingsFresh(queries)
        // A write that fails (rolled back) changes nothing, and the listings still agree.
        XCTAssertThrowsError(try catalog.modify(id: rs[2].id) { _ in throw CatalogError.notFound(id: "x") })
        try assertListingsFresh(queries)
    }

    /// Readers and writers at once: whatever a reader kept while writes went on, once they stop
    /// every listing equals the rows (a row kept from a snapshot older than a write would stay wrong).
    func testConcurrentReadsAndWritesLeaveNothingStale() throws {
        let rs = (0..<40).map { make(created: Double(2000 + $0), plays: $0 % 3) }
        for r in rs { try catalog.insert(r) }
        let catalog = self.catalog!
        let stop = Date().addingTimeInterval(1.0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var i = 0
            while Date() < stop {
                i += 1
                do {
                    switch worker {
                    case 0: try catalog.countPlay(id: rs[i % rs.count].id, at: Date())
                    case 1: try catalog.modify(id: rs[(i * 7) % rs.count].id) { $0.title = "W\(i)" }
                    case 2: _ = try catalog.topJSON(limit: 10)
                    default: _ = try catalog.listJSON(ListQuery(order: i % 2 == 0 ? .plays : .recent, limit: 20))
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        try assertListingsFresh([ListQuery(order: .plays, limit: 20), ListQuery(limit: 20), ListQuery()])
    }

    func testGenerationRules() {
        let kept = RenderedRows()
        let g = kept.readerGeneration()!
        kept.store([("a", [1]), ("b", [2])], at: g)
        XCTAssertEqual(kept.lookup(["a", "b", "c"], at: g)!, [[1], [2], nil])

        // A write under way: readers keep nothing and find nothing kept for their snapshot.
        kept.beginWrite(changing: ["a"])
        XCTAssertNil(kept.readerGeneration())
        XCTAssertNil(kept.lookup(["b"], at: g), "a reader whose generation predates the write must not use kept rows")
        kept.store([("a", [9])], at: g)
        kept.endWrite(changing: ["a"])
        let g2 = kept.readerGeneration()!
        XCTAssertNotEqual(g, g2)
        XCTAssertEqual(kept.lookup(["a", "b"], at: g2)!, [nil, [2]], "the play dropped its row only; the old store was refused")

        // A reader whose snapshot predates a whole write (begun and ended before it stores) keeps nothing.
        let before = kept.readerGeneration()!
        kept.beginWrite(changing: ["b"])
        kept.endWrite(changing: ["b"])
        kept.store([("b", [7])], at: before)
        XCTAssertEqual(kept.lookup(["b"], at: kept.readerGeneration()!)!, [nil])

        // A write of any row drops all.
        kept.beginWrite()
        kept.endWrite()
        let g3 = kept.readerGeneration()!
        XCTAssertEqual(kept.lookup(["b"], at: g3)!, [nil])

        // Full: everything goes, then the new rows are kept.
        kept.store((0..<RenderedRows.capacity).map { ("r\($0)", [0]) }, at: g3)
        XCTAssertEqual(kept.count, RenderedRows.capacity)
        kept.store([("new", [1])], at: g3)
        XCTAssertEqual(kept.count, 1)
    }
}
