// The media worker's Landlock sandbox (issue 35 §1, defence in depth): a real recd-media started as
// recd starts it, with the data directory as its sandbox, reads and writes there and nowhere else,
// whatever the files' modes say.
import Foundation
import MediaWire
@testable import MediaWorker
import MediaWorkerServer
import XCTest

final class WorkerSandboxTests: XCTestCase {
    func workerBinary() throws -> String {
        let binary = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
            .map { $0.appendingPathComponent("recd-media").path }.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try XCTUnwrap(binary, "recd-media is built beside the tests")
    }

    func ffmpeg(_ path: String, _ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-nostdin", "-v", "error", "-y"] + args + [path]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
    }

    func testAWorkerReadsAndWritesOnlyBeneathItsDataDirectory() throws {
        // Under CI (CI=true) a kernel without Landlock is a failure, not a skip: a green CI means it ran.
        let ci = ["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "")
        try XCTSkipIf(MediaWorkerPool.landlockABI == nil && !ci, "this kernel has no Landlock")
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-sandbox-\(UUID().uuidString.prefix(8))")
        let data = root.appendingPathComponent("data"), outside = root.appendingPathComponent("elsewhere")
        for d in [data, outside] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(at: root) }
        let inside = data.appendingPathComponent("in.m4a").path, other = outside.appendingPathComponent("out.m4a").path
        for path in [inside, other] {
            try ffmpeg(path, ["-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac"])
            chmod(path, 0o644)   // readable by anyone: only the sandbox stands in the way
        }

        let pool = MediaWorkerPool()
        pool.configure(executable: try workerBinary(), idleSeconds: 0, logLevel: "error", sandbox: [data.path])
        // Inside: probed, and remuxed into a new file there.
        let lease = try MediaWorkerLease(pool: pool)
        XCTAssertEqual(try WorkerMedia.probe(inside, lease: lease).streams.map(\.codec), ["aac"])
        let copy = data.appendingPathComponent("copy.m4a").path
        XCTAssertGreaterThan(try WorkerMedia.remux(from: inside, to: copy, lease: lease).packets, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: copy))
        // Outside: the same file is refused by the kernel (EACCES), for reading and for writing.
        XCTAssertThrowsError(try WorkerMedia.probe(other, lease: lease)) { error in
            XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(error)")
        }
        let escaped = outside.appendingPathComponent("written.m4a").path
        XCTAssertThrowsError(try WorkerMedia.remux(from: inside, to: escaped, lease: lease)) { error in
            XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: escaped))
        lease.release()

        // Without a sandbox (as the rest of the unit tests run their workers) the same probe works:
        // what refused it above was the sandbox.
        let open = MediaWorkerPool()
        open.configure(executable: try workerBinary(), idleSeconds: 0, logLevel: "error")
        XCTAssertEqual(try WorkerMedia.probe(other, lease: try MediaWorkerLease(pool: open)).streams.map(\.codec), ["aac"])
    }
}
