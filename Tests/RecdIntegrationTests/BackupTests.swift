// Backups through restic (issue 48), with the real restic: the library backed up, the data directory
// wiped, a new data directory restored from the snapshot and a new recd started on it — every
// recording there, every field and file equal; a wrong password and a missing repository said as
// such while recording goes on.
import Foundation
import RecdAPI
import XCTest

final class BackupTests: XCTestCase {
    var pulse: PulseAudioServer!
    var daemon: Daemon!
    var work: URL!

    override func setUpWithError() throws {
        try Skip.if(Tools.which("restic") == nil, "restic is missing: scripts/install-deps.sh --test installs it")
        pulse = try PulseAudioServer()
        work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("recd-backup-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() {
        daemon?.cleanUp()
        pulse?.stop()
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    var repository: String { work.appendingPathComponent("repo").path }

    func passwordFile(_ text: String = "correct horse battery staple\n") throws -> String {
        let path = work.appendingPathComponent("password-\(UUID().uuidString.prefix(4))").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return path
    }

    func startDaemon(password: String, repository: String? = nil, extra: [String] = []) throws {
        daemon = try Daemon(environment: pulse.environment,
                            extraArgs: ["--backup", repository ?? self.repository, "--backup-password-file", password,
                                        "--backup-delay", "3600"] + extra,
                            dir: work.appendingPathComponent("recd"))
        try daemon.start()
    }

    func wav(_ name: String, hz: Int, seconds: Int = 1) throws -> String {
        let path = work.appendingPathComponent(name).path
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(hz):duration=\(seconds)", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return path
    }

    func sha256(_ path: String) throws -> String {
        let r = try Tools.run("sha256sum", [path])
        return String(r.stdout.prefix(64))
    }

    /// The library as a person sees it, and its files' bytes.
    func library(_ d: Daemon, in data: URL? = nil) throws -> ([Recording], [UUID: String]) {
        let list = try d.recctlJSON(RecordingList.self, "list", "--limit", "100").recordings.sorted { $0.id.uuidString < $1.id.uuidString }
        var hashes: [UUID: String] = [:]
        for r in list { hashes[r.id] = try sha256((data ?? d.dataDir).appendingPathComponent(r.file).path) }
        return (list, hashes)
    }

    /// Back up, wipe, restore with recctl alone (no daemon), start a new recd on it: the same
    /// recordings — titles, notes, purposes, play counts, hashes of imports, waveforms, transcripts
    /// off — and files of the same bytes that play.
    func testABackupRestoresIntoADataDirectoryANewRecdStartsOn() throws {
        let password = try passwordFile()
        try startDaemon(password: password)
        let off = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(off.status, 1, "no repository yet: \(off.stdout)\(off.stderr)")
        XCTAssertTrue(off.stdout.contains("recctl backup init"), off.stdout)
        let initialized = try daemon.recctl("backup", "init")
        XCTAssertEqual(initialized.status, 0, initialized.stderr)
        XCTAssertTrue(initialized.stdout.contains("made the repository"), initialized.stdout)

        let first = try daemon.recctlJSON(Recording.self, "import", try wav("a.wav", hz: 440), "--title", "Shopping list",
                                          "--notes", "milk, eggs", "--purpose", "reflection")
        let second = try daemon.recctlJSON(Recording.self, "import", try wav("b.wav", hz: 880, seconds: 2), "--title", "Lecture")
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "A take").status, 0)
        Thread.sleep(forTimeInterval: 1.2)
        let take = try XCTUnwrap(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording)
        for _ in 0..<3 { XCTAssertEqual(try daemon.recctl("played", first.id.uuidString).status, 0) }
        XCTAssertEqual(try daemon.recctl("edit", second.id.uuidString, "--notes", "week 3").status, 0)
        let waveform = try daemon.recctl("--json", "waveform", take.id.uuidString).stdout

        let now = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(now.status, 0, now.stdout + now.stderr + daemon.log)
        let status = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        let last = try XCTUnwrap(status.lastSuccess, "\(status)")
        XCTAssertEqual(last.recordings, 3)
        XCTAssertNil(status.lastError)
        XCTAssertEqual(status.repository, repository)
        let snapshots = try daemon.recctlJSON(BackupSnapshotList.self, "backup", "list").snapshots
        XCTAssertTrue(snapshots.contains { $0.id == last.snapshotID }, "\(snapshots)")
        let (before, hashes) = try library(daemon)
        XCTAssertEqual(before.count, 3)

        // The machine is lost: the data directory goes. recctl restores with the repository and the password.
        daemon.stop()
        try FileManager.default.removeItem(at: daemon.dataDir)
        let restored = work.appendingPathComponent("new-machine/data")
        try FileManager.default.createDirectory(at: restored.deletingLastPathComponent(), withIntermediateDirectories: true)
        let r = try Tools.run(Tools.recctl, ["restore", "--into", restored.path, "--repository", repository, "--password-file", password])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("restored 3 recording(s)"), r.stdout)

        let again = try Daemon(environment: pulse.environment, extraArgs: ["--data-dir", restored.path],
                               dir: work.appendingPathComponent("recd2"))
        defer { again.cleanUp() }
        try again.start()
        let (after, afterHashes) = try library(again, in: restored)
        XCTAssertTrue(again.log.contains(restored.path), "recd runs on the restored folder")
        XCTAssertEqual(after.map(\.id), before.map(\.id))
        for (a, b) in zip(after, before) {
            XCTAssertEqual(a.title, b.title); XCTAssertEqual(a.notes, b.notes); XCTAssertEqual(a.purpose, b.purpose)
            XCTAssertEqual(a.playCount, b.playCount); XCTAssertEqual(a.state, b.state); XCTAssertEqual(a.createdAt, b.createdAt)
            XCTAssertEqual(a.duration, b.duration); XCTAssertEqual(a.sizeBytes, b.sizeBytes); XCTAssertEqual(a.loudness, b.loudness)
        }
        XCTAssertEqual(afterHashes.count, 3)
        for (id, hash) in hashes { XCTAssertEqual(afterHashes[id], hash, "the file of \(id)") }
        XCTAssertEqual(try again.recctl("--json", "waveform", take.id.uuidString).stdout, waveform, "the stored waveform came back")
        XCTAssertEqual(try again.recctlJSON(Recording.self, "show", first.id.uuidString).playCount, 3)
        // A duplicate import is still found by its stored hash.
        let dup = try again.recctl("import", work.appendingPathComponent("a.wav").path)
        XCTAssertNotEqual(dup.status, 0)
        XCTAssertTrue(dup.stderr.contains("already in the library"), dup.stderr)
        XCTAssertEqual(try AudioAnalysis.of(restored.appendingPathComponent(take.file).path).frequency, 1000, accuracy: 10, "the take decodes")
        // A non-empty folder is never restored into.
        let refused = try Tools.run(Tools.recctl, ["restore", "--into", restored.path, "--repository", repository, "--password-file", password])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("is not an empty folder"), refused.stderr)
    }

    /// A wrong password and a repository that is not there: each said as such, in status and the
    /// log; recording goes on meanwhile; nothing is restored from them.
    func testAWrongPasswordAndAMissingRepositoryAreSaidAndRecordingGoesOn() throws {
        let good = try passwordFile()
        let make = try Tools.run("restic", ["init", "--repo", repository, "--password-file", good])
        XCTAssertEqual(make.status, 0, make.stderr)
        try startDaemon(password: try passwordFile("not the password\n"))
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        let wrong = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(wrong.status, 1, wrong.stdout)
        let status = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertEqual(status.lastError?.reason, .wrongPassword, "\(status)")
        XCTAssertTrue(status.lastError?.message.contains("password") == true, "\(status)")
        XCTAssertTrue(daemon.log.contains("backup failed (wrong-password)"), daemon.log)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .recording, "the take went on")
        Thread.sleep(forTimeInterval: 1.0)
        let take = try XCTUnwrap(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording)
        XCTAssertEqual(take.state, .ready)
        XCTAssertGreaterThan(take.duration ?? 0, 1.0)
        let restore = try Tools.run(Tools.recctl, ["restore", "--into", work.appendingPathComponent("x").path, "--repository", repository,
                                                   "--password-file", try passwordFile("not the password\n")])
        XCTAssertEqual(restore.status, 1)
        XCTAssertTrue(restore.stderr.contains("does not open"), restore.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: work.appendingPathComponent("x").path))
        daemon.cleanUp()

        try startDaemon(password: good, repository: work.appendingPathComponent("nowhere").path)
        let missing = try daemon.recctl("--json", "backup", "now", "--wait")
        XCTAssertEqual(missing.status, 1)
        let s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertEqual(s.lastError?.reason, .noRepository, "\(s)")
        XCTAssertTrue(s.lastError?.message.contains("recctl backup init") == true, "\(s)")
        let snapshots = try daemon.recctl("backup", "list")
        XCTAssertEqual(snapshots.status, 1)
        XCTAssertTrue(snapshots.stderr.contains("no repository at"), snapshots.stderr)
    }

    /// recd refuses to start with a repository and no password, or an unreadable password file;
    /// without --backup, backups are off and a request for one says how to turn them on.
    func testBackupsNeedAPasswordAndAreOffWithoutARepository() throws {
        for (args, said) in [(["--backup", repository], "--backup needs the repository's password"),
                             (["--backup", repository, "--backup-password-file", work.appendingPathComponent("none").path], "--backup-password-file")] {
            let r = try Tools.run(Tools.recd, ["--data-dir", work.appendingPathComponent("d").path, "--socket", work.appendingPathComponent("s").path] + args)
            XCTAssertNotEqual(r.status, 0)
            XCTAssertTrue(r.stderr.contains(said), r.stderr)
        }
        daemon = try Daemon(environment: pulse.environment, dir: work.appendingPathComponent("recd"))
        try daemon.start()
        XCTAssertEqual(try daemon.recctlJSON(BackupStatus.self, "backup", "status").state, .off)
        let now = try daemon.recctl("backup", "now")
        XCTAssertEqual(now.status, 1)
        XCTAssertTrue(now.stderr.contains("backups are off"), now.stderr)
        let (code, body) = try daemon.curl("POST", "/v1/backup")
        XCTAssertEqual(code, 409, body)
        XCTAssertTrue(body.contains("backups_off"), body)
    }
}
