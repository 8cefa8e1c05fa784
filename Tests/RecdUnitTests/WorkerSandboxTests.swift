// The media workers' Landlock sandbox (issue 35 §1, issue 45; defence in depth): a real recd-media
// started as recd starts it — an upload's in its import's folder, a job's confined to its job's files
// — reads and writes there and nowhere else, whatever the files' modes say.
import Foundation
import MediaWire
import MediaWorker
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

    func testAnUploadsWorkerReadsAndWritesOnlyInItsImportsFolder() throws {
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
        let lease = try MediaWorkerLease(forUploadIn: data.path, pool: pool)
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
        XCTAssertEqual(try WorkerMedia.probe(other, lease: try MediaWorkerLease(reading: [other], pool: open)).streams.map(\.codec), ["aac"])
    }

    /// A library job's worker (a trim, a decode, a probe) reads its job's files and writes its
    /// output, and nothing else of the data directory: not the recording beside them, not a new
    /// file in their folder. It ends with its job; the next job gets a worker of its own.
    func testALibraryJobsWorkerReachesOnlyItsJobsFiles() throws {
        let ci = ["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "")
        try XCTSkipIf(MediaWorkerPool.landlockABI == nil && !ci, "this kernel has no Landlock")
        let data = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-job-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: data) }
        let source = data.appendingPathComponent("audio_source.m4a").path, sibling = data.appendingPathComponent("audio_sibling.m4a").path
        for path in [source, sibling] { try ffmpeg(path, ["-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac"]) }
        let output = data.appendingPathComponent(".trim-output.m4a").path

        let pool = MediaWorkerPool()
        pool.configure(executable: try workerBinary(), idleSeconds: 30, logLevel: "error", sandbox: [data.path])
        let lease = try MediaWorkerLease(reading: [source], writing: [output], pool: pool)
        let first = try lease.connection(for: "the test").pid
        XCTAssertEqual(try WorkerMedia.probe(source, lease: lease).streams.map(\.codec), ["aac"])
        XCTAssertGreaterThan(try WorkerMedia.remux(from: source, to: output, lease: lease).packets, 0)
        XCTAssertEqual(try WorkerMedia.probe(output, lease: lease).streams.map(\.codec), ["aac"], "its output, written whole")
        XCTAssertThrowsError(try WorkerMedia.probe(sibling, lease: lease), "the recording beside its job's") { error in
            XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(error)")
        }
        let made = data.appendingPathComponent("audio_made.m4a").path
        XCTAssertThrowsError(try WorkerMedia.remux(from: source, to: made, lease: lease), "a file its job did not name") { error in
            XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: made))
        lease.release()

        // It ended with its job; the next job gets another process, walled in to its own files.
        let ended = Date().addingTimeInterval(10)
        while kill(first, 0) == 0 && Date() < ended { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertNotEqual(kill(first, 0), 0, "the job's worker ended with its lease")
        let next = try MediaWorkerLease(reading: [sibling], pool: pool)
        XCTAssertNotEqual(try next.connection(for: "the test").pid, first)
        XCTAssertEqual(try WorkerMedia.probe(sibling, lease: next).streams.map(\.codec), ["aac"])
        XCTAssertThrowsError(try WorkerMedia.probe(source, lease: next)) { error in
            XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(error)")
        }
        next.release()

        // A worker started for one job serves nothing before its walls stand, and is walled in once.
        let bare = try MediaWorkerConnection(starting: try workerBinary(), arguments: ["normal", "error", "--one-job"],
                                             priority: .normal, use: .files, confinesPerJob: true)
        defer { _ = bare.end() }
        XCTAssertThrowsError(try bare.call(WorkerOp.Probe(path: source), operation: "an early probe")) { error in
            XCTAssertTrue("\(error)".contains("before the job's files were named"), "\(error)")
        }
        try bare.call(WorkerOp.Confine(reading: [sibling], writing: []), operation: "confining")
        XCTAssertThrowsError(try bare.call(WorkerOp.Confine(reading: [source], writing: []), operation: "confining again")) { error in
            XCTAssertTrue("\(error)".contains("already confined"), "\(error)")
        }
        XCTAssertThrowsError(try bare.call(WorkerOp.Probe(path: source), operation: "a probe of another file")) { error in
            XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(error)")
        }
    }
    /// A library worker (recd's `Recordings/` and `Enhanced/`) loads FFmpeg once and forks a process
    /// for each job, walled in to that job's files: the next job is served by the same worker (a
    /// playback starts without a new process), and reaches none of the last job's files. A job on a
    /// file elsewhere gets a worker of its own; a replaced folder ends the kept worker.
    func testALibraryWorkerForksEachJobWalledInAndIsKept() throws {
        let ci = ["true", "1", "yes"].contains(ProcessInfo.processInfo.environment["CI"]?.lowercased() ?? "")
        try XCTSkipIf(MediaWorkerPool.landlockABI == nil && !ci, "this kernel has no Landlock")
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-library-\(UUID().uuidString.prefix(8))")
        let recordings = root.appendingPathComponent("Recordings"), enhanced = root.appendingPathComponent("Enhanced")
        let outside = root.appendingPathComponent("elsewhere")
        for d in [recordings, enhanced, outside] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(at: root) }
        let source = recordings.appendingPathComponent("audio_source.m4a").path
        let sibling = recordings.appendingPathComponent("audio_sibling.m4a").path
        let copy = enhanced.appendingPathComponent("copy.m4a").path, other = outside.appendingPathComponent("other.m4a").path
        for path in [source, sibling, copy, other] { try ffmpeg(path, ["-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac"]) }
        let pool = MediaWorkerPool()
        pool.configure(executable: try workerBinary(), idleSeconds: 30, logLevel: "error", sandbox: [recordings.path],
                       library: [recordings.path, enhanced.path])
        func pid(_ lease: MediaWorkerLease) throws -> pid_t { try lease.connection(for: "the test").pid }
        func refused(_ path: String, _ lease: MediaWorkerLease, _ why: String) {
            XCTAssertThrowsError(try WorkerMedia.probe(path, lease: lease), why) { error in
                XCTAssertEqual((error as? FFmpegError)?.code, -EACCES, "\(why): \(error)")
            }
        }

        let output = recordings.appendingPathComponent(".trim-output.m4a").path
        let first = try MediaWorkerLease(reading: [source], writing: [output], pool: pool)
        let worker = try pid(first)
        XCTAssertTrue(try first.connection(for: "the test").forksLibraryJobs)
        XCTAssertGreaterThan(try WorkerMedia.remux(from: source, to: output, lease: first).packets, 0)
        refused(sibling, first, "the recording beside its job's")
        first.release()

        let second = try MediaWorkerLease(reading: [sibling], pool: pool)
        XCTAssertEqual(try pid(second), worker, "the library worker is kept for the next job")
        XCTAssertEqual(try WorkerMedia.probe(sibling, lease: second).streams.map(\.codec), ["aac"])
        refused(source, second, "the last job's file")
        second.release()
        let third = try MediaWorkerLease(reading: [copy], pool: pool)
        XCTAssertEqual(try pid(third), worker, "an enhanced copy is the library's too")
        XCTAssertEqual(try WorkerMedia.probe(copy, lease: third).streams.map(\.codec), ["aac"])
        third.release()

        // A file outside the library's folders: a worker of its own, ended with its job.
        let elsewhere = try MediaWorkerLease(reading: [other], pool: pool)
        let own = try pid(elsewhere)
        XCTAssertNotEqual(own, worker)
        XCTAssertFalse(try elsewhere.connection(for: "the test").forksLibraryJobs)
        XCTAssertEqual(try WorkerMedia.probe(other, lease: elsewhere).streams.map(\.codec), ["aac"])
        elsewhere.release()
        let ended = Date().addingTimeInterval(10)
        while kill(own, 0) == 0 && Date() < ended { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertNotEqual(kill(own, 0), 0, "the worker of a job elsewhere ended with it")
        XCTAssertEqual(kill(worker, 0), 0, "the library worker is still there")

        // Recordings/ replaced (a delete-all): Landlock holds the old folder, so a new worker serves.
        pool.sandboxFoldersReplaced()
        let after = try MediaWorkerLease(reading: [source], pool: pool)
        XCTAssertNotEqual(try pid(after), worker)
        XCTAssertEqual(try WorkerMedia.probe(source, lease: after).streams.map(\.codec), ["aac"])
        after.release()
        XCTAssertFalse(MediaWorkerPool.beneath([recordings.path], [recordings.path + "/../elsewhere/other.m4a"]), "no way out by ..")
        XCTAssertFalse(MediaWorkerPool.beneath([recordings.path], [recordings.path + "-other/x.m4a"]), "a sibling folder of the same prefix")
    }
}
