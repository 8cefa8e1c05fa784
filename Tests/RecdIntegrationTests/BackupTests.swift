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

    /// Every snapshot kept (`--backup-keep all`) unless `extra` says otherwise: forgetting and pruning
    /// after each run is one test's subject, and in CI it doubled the class's time (restic at nice 19
    /// beside the package's compile).
    static let keepAll = ["--backup-keep", "all"]

    func startDaemon(password: String, repository: String? = nil, extra: [String] = []) throws {
        daemon = try Daemon(environment: pulse.environment,
                            extraArgs: ["--backup", repository ?? self.repository, "--backup-password-file", password,
                                        "--backup-delay", "3600"] + (extra.contains("--backup-keep") ? [] : Self.keepAll) + extra,
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

    /// utime + stime of `pid`, in seconds.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try XCTUnwrap(stat.lastIndex(of: ")")))...].split(separator: " ")
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
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
        XCTAssertEqual([first.source, second.source, take.source], [.import, .import, .record])
        for _ in 0..<3 { XCTAssertEqual(try daemon.recctl("played", first.id.uuidString).status, 0) }
        XCTAssertEqual(try daemon.recctl("edit", second.id.uuidString, "--notes", "week 3").status, 0)
        let waveform = try daemon.recctl("--json", "waveform", take.id.uuidString).stdout

        // `backup init` backed up at once: that run (its snapshot, then its forget and check) ends first.
        let deadline = Date().addingTimeInterval(60)
        while try daemon.recctlJSON(BackupStatus.self, "backup", "status").state == .running && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
        }
        let listener = try EventListener(daemon, types: [.backupStatus, .backupProgress])
        let now = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(now.status, 0, now.stdout + now.stderr + daemon.log)
        let status = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        // Events: the run's start (running), then its end with the snapshot.
        Thread.sleep(forTimeInterval: 0.3)
        let statuses = try listener.events().compactMap { e -> BackupStatus? in if case .backupStatus(let s) = e.payload { return s } else { return nil } }
        listener.stop()
        XCTAssertEqual(statuses.first?.state, .running, "\(statuses)")
        XCTAssertTrue(statuses.contains { $0.state != .running && $0.lastSuccess?.snapshotID == status.lastSuccess?.snapshotID }, "\(statuses)")
        let last = try XCTUnwrap(status.lastSuccess, "\(status)")
        XCTAssertEqual(last.recordings, 3)
        XCTAssertNil(status.lastError)
        XCTAssertEqual(status.repository, repository)
        let snapshots = try daemon.recctlJSON(BackupSnapshotList.self, "backup", "list").snapshots
        XCTAssertTrue(snapshots.contains { $0.id == last.snapshotID }, "\(snapshots)")
        let (before, hashes) = try library(daemon)
        XCTAssertEqual(before.count, 3)
        // Between runs recd sleeps until the next is due: an idle recd with backups on uses no CPU
        // (a timer that woke the next sleep once spun an event loop at 100 %).
        let pid = try XCTUnwrap(daemon.process?.processIdentifier)
        let cpuBefore = try Self.cpuSeconds(pid)
        Thread.sleep(forTimeInterval: 2)
        XCTAssertLessThan(try Self.cpuSeconds(pid) - cpuBefore, 0.2, "recd is idle between backups")

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

    /// One recording brought back from a snapshot into the running library: under its own id when
    /// that is free (every field, the play count, the waveform and the file's bytes as they were),
    /// as a new recording when the id is taken; an import already in the library (its content hash)
    /// is refused; an id the snapshot does not have is a clear error.
    func testOneRecordingComesBackFromASnapshotIntoTheRunningLibrary() throws {
        try startDaemon(password: try passwordFile())
        XCTAssertEqual(try daemon.recctl("backup", "init").status, 0)
        let memo = try daemon.recctlJSON(Recording.self, "import", try wav("r.wav", hz: 620, seconds: 2), "--title", "Keep this",
                                         "--notes", "the good one")
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "Take").status, 0)
        Thread.sleep(forTimeInterval: 1.0)
        let take = try XCTUnwrap(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording)
        for _ in 0..<2 { XCTAssertEqual(try daemon.recctl("played", memo.id.uuidString).status, 0) }
        let waveform = try daemon.recctl("--json", "waveform", memo.id.uuidString).stdout
        let memoHash = try sha256(daemon.path(of: memo)), takeHash = try sha256(daemon.path(of: take))
        XCTAssertEqual(try daemon.recctl("backup", "now", "--wait").status, 0, daemon.log)
        XCTAssertEqual(try daemon.recctl("delete", memo.id.uuidString, "--yes").status, 0)
        XCTAssertEqual(try daemon.recctl("delete", take.id.uuidString, "--yes").status, 0)

        let back = try daemon.recctlJSON(Recording.self, "restore", String(memo.id.uuidString.prefix(8)))
        XCTAssertEqual(back.id, memo.id)
        XCTAssertEqual(back.title, "Keep this"); XCTAssertEqual(back.notes, "the good one"); XCTAssertEqual(back.playCount, 2)
        XCTAssertEqual(back.createdAt, memo.createdAt); XCTAssertEqual(back.state, .ready)
        XCTAssertEqual(try sha256(daemon.path(of: back)), memoHash)
        XCTAssertEqual(try daemon.recctl("--json", "waveform", memo.id.uuidString).stdout, waveform)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "restore", take.id.uuidString).id, take.id)
        // Again, while it is in the library: a new recording of the same bytes.
        let copy = try daemon.recctlJSON(Recording.self, "restore", take.id.uuidString)
        XCTAssertNotEqual(copy.id, take.id)
        XCTAssertEqual(copy.title, take.title)
        XCTAssertEqual(try sha256(daemon.path(of: copy)), takeHash)
        // An import whose content is in the library already.
        let dup = try daemon.recctl("restore", memo.id.uuidString)
        XCTAssertEqual(dup.status, 1)
        XCTAssertTrue(dup.stderr.contains("already in the library"), dup.stderr)
        let unknown = try daemon.recctl("restore", "0000dead")
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no recording"), unknown.stderr)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 3)
        XCTAssertEqual(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent, true)
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.appendingPathComponent(".backup").path)
                        .contains { $0.hasPrefix("restore-") }, "the restore's folder goes")
    }

    /// `--backup-keep last=2`: after each good backup recd forgets its snapshots of this host that
    /// the rules no longer keep (the first run prunes too); a snapshot another host made in the same
    /// repository is left alone; what is said in status and by recctl; bad rules are refused.
    func testOldSnapshotsAreForgottenByTheKeepRulesAndAnotherHostsAreLeftAlone() throws {
        let password = try passwordFile()
        for bad in ["daily=0", "hourly=3", "last=2,last=3", "daily", ""] {
            let r = try Tools.run(Tools.recd, ["--data-dir", work.appendingPathComponent("d").path, "--socket", work.appendingPathComponent("s").path,
                                               "--backup", repository, "--backup-password-file", password, "--backup-keep", bad])
            XCTAssertEqual(r.status, 64, "\(bad): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--backup-keep must be all, or rules"), r.stderr)
        }
        try startDaemon(password: password, extra: ["--backup-keep", "last=2"])
        XCTAssertEqual(try daemon.recctl("backup", "init").status, 0)
        let restic = try XCTUnwrap(Tools.which("restic"))
        let elsewhere = try Tools.run(restic, ["backup", "--repo", repository, "--password-file", password, "--host", "elsewhere",
                                               "--tag", "recd", "--no-cache", password])
        XCTAssertEqual(elsewhere.status, 0, elsewhere.stderr)
        _ = try daemon.recctlJSON(Recording.self, "import", try wav("k.wav", hz: 700), "--title", "Kept")
        // `backup init` backs up at once: the first snapshot, the first forget, and a prune.
        let deadline = Date().addingTimeInterval(60)
        var status = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        while (status.lastForget == nil || status.state == .running) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            status = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        }
        var forgets = [try XCTUnwrap(status.lastForget, daemon.log)]
        for _ in 0..<2 {
            XCTAssertEqual(try daemon.recctl("backup", "now", "--wait").status, 0, daemon.log)
            forgets.append(try XCTUnwrap(try daemon.recctlJSON(BackupStatus.self, "backup", "status").lastForget, daemon.log))
        }
        XCTAssertEqual(forgets.map(\.kept), [1, 2, 2])
        XCTAssertEqual(forgets.map(\.removed), [0, 0, 1])
        XCTAssertEqual(forgets.map(\.pruned), [true, false, false], "pruned at most once a day")
        XCTAssertEqual(forgets.last?.policy, "last=2")
        struct Snapshot: Decodable { var hostname: String }
        let listed = try Tools.run(restic, ["snapshots", "--json", "--repo", repository, "--password-file", password, "--no-cache"])
        let hosts = try JSONDecoder().decode([Snapshot].self, from: Data(listed.stdout.utf8)).map(\.hostname)
        XCTAssertEqual(hosts.filter { $0 == "elsewhere" }.count, 1, "another host's snapshot is not recd's to forget: \(hosts)")
        XCTAssertEqual(hosts.filter { $0 != "elsewhere" }.count, 2, "\(hosts)\n\(daemon.log)")
        XCTAssertEqual(try daemon.recctlJSON(BackupSnapshotList.self, "backup", "list").snapshots.count, 3)
        let said = try daemon.recctl("backup", "status").stdout
        XCTAssertTrue(said.contains("1 forgotten, 2 kept (keep last=2)"), said)
        XCTAssertTrue(daemon.log.contains("1 old snapshot(s) forgotten, 2 kept (--backup-keep last=2)"), daemon.log)
        // The newest snapshot restores (the forget left the data it needs).
        let check = try Tools.run(restic, ["check", "--repo", repository, "--password-file", password, "--no-cache"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
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

    /// A restic that waits to be let go (the gate file made) before a backup runs: the stage is
    /// then made and "mid-backup" a sure instant. Returns the gate and the wrapper ($RECD_RESTIC).
    func gatedRestic() throws -> (gate: URL, wrapper: String) {
        let gate = work.appendingPathComponent("gate")
        let wrapper = work.appendingPathComponent("restic-gated").path
        let realRestic = try XCTUnwrap(Tools.which("restic"))
        try Data("""
            #!/bin/sh
            case " $* " in *" backup "*) echo $$ > \(gate.path).pid; while [ ! -e \(gate.path) ]; do sleep 0.05; done ;; esac
            exec \(realRestic) "$@"
            """.utf8).write(to: URL(fileURLWithPath: wrapper))
        chmod(wrapper, 0o755)
        return (gate, wrapper)
    }

    /// The pid of the gated restic once its backup has started (the stage made).
    func waitForRestic(_ gate: URL) throws -> Int32 {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: gate.path + ".pid", encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                try? FileManager.default.removeItem(atPath: gate.path + ".pid")
                return pid
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("restic backup never started\n\(daemon.log)")
        throw NSError(domain: "recd-tests", code: 6)
    }

    /// While restic reads a snapshot's stage: a take in progress is stopped and saved, a recording
    /// trimmed in place and another deleted. The snapshot holds the library as it was when the stage
    /// was made — the take being recorded left out (row and file), the trimmed one whole as it was,
    /// the deleted one whole — and the next snapshot the library after.
    func testATakeATrimAndADeleteDuringABackupLeaveEachRecordingWholeOrAbsent() throws {
        let (gate, wrapper) = try gatedRestic()
        let password = try passwordFile()
        XCTAssertEqual(try Tools.run("restic", ["init", "--repo", repository, "--password-file", password]).status, 0)
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_RESTIC": wrapper]) { $1 },
                            extraArgs: ["--backup", repository, "--backup-password-file", password, "--backup-delay", "3600"] + Self.keepAll,
                            dir: work.appendingPathComponent("recd"))
        try daemon.start()
        let trimmed = try daemon.recctlJSON(Recording.self, "import", try wav("t.wav", hz: 500, seconds: 3), "--title", "To trim")
        let deleted = try daemon.recctlJSON(Recording.self, "import", try wav("d.wav", hz: 700, seconds: 2), "--title", "To delete")
        let (_, hashesBefore) = try library(daemon)
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        let take = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start", "--title", "In progress").recording
        Thread.sleep(forTimeInterval: 1.0)

        XCTAssertEqual(try daemon.recctl("backup", "now").status, 0)
        _ = try waitForRestic(gate)
        XCTAssertEqual(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording?.state, .ready)
        let cut = try daemon.recctl("trim", trimmed.id.uuidString, "--start", "0.5", "--end", "1.5")
        XCTAssertEqual(cut.status, 0, cut.stderr)
        XCTAssertEqual(try daemon.recctl("delete", deleted.id.uuidString, "--yes").status, 0)
        FileManager.default.createFile(atPath: gate.path, contents: nil)
        let done = try daemon.recctl("backup", "now", "--wait")   // the one under way, then one more after it
        XCTAssertEqual(done.status, 0, done.stdout + done.stderr + daemon.log)
        let snapshots = try daemon.recctlJSON(BackupSnapshotList.self, "backup", "list").snapshots
        XCTAssertEqual(snapshots.count, 2, "\(snapshots)")

        // The older snapshot: the library at the stage's instant.
        let first = work.appendingPathComponent("first")
        let r = try Tools.run(Tools.recctl, ["restore", "--into", first.path, "--snapshot", try XCTUnwrap(snapshots.last?.id),
                                             "--repository", repository, "--password-file", password])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("restored 2 recording(s)"), r.stdout)
        let old = try Daemon(environment: pulse.environment, extraArgs: ["--data-dir", first.path], dir: work.appendingPathComponent("old"))
        defer { old.cleanUp() }
        try old.start()
        let (rows, hashes) = try library(old, in: first)
        XCTAssertEqual(Set(rows.map(\.id)), [trimmed.id, deleted.id], "the take being recorded is not in it")
        XCTAssertEqual(hashes, hashesBefore, "each file whole, as it was")
        XCTAssertEqual(try XCTUnwrap(rows.first { $0.id == trimmed.id }?.duration), 3.0, accuracy: 0.1, "the row as it was, with its file")
        XCTAssertEqual(try old.recctlJSON(ConsistencyReport.self, "check").isConsistent, true)

        // The newer one: after the changes.
        let second = work.appendingPathComponent("second")
        XCTAssertEqual(try Tools.run(Tools.recctl, ["restore", "--into", second.path, "--repository", repository, "--password-file", password]).status, 0)
        old.stop()
        let now = try Daemon(environment: pulse.environment, extraArgs: ["--data-dir", second.path], dir: work.appendingPathComponent("now"))
        defer { now.cleanUp() }
        try now.start()
        let (after, _) = try library(now, in: second)
        XCTAssertEqual(Set(after.map(\.id)), [trimmed.id, take.id])
        XCTAssertEqual(try XCTUnwrap(after.first { $0.id == trimmed.id }?.duration), 1.0, accuracy: 0.1)
    }

    /// A repository on a full disk (a 2 MB tmpfs): said as full, the last good backup still known,
    /// and recording goes on.
    func testAFullRepositoryIsSaidAsFullAndRecordingGoesOn() throws {
        try Skip.if(getuid() != 0, "mounting a small tmpfs needs root")
        let small = work.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mount = try Tools.run("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", small.path])
        try Skip.if(mount.status != 0, "mount -t tmpfs refused here: \(mount.stderr)")
        defer { _ = try? Tools.run("umount", ["-l", small.path]) }
        let repo = small.appendingPathComponent("repo").path
        let password = try passwordFile()
        XCTAssertEqual(try Tools.run("restic", ["init", "--repo", repo, "--password-file", password]).status, 0)
        try startDaemon(password: password, repository: repo)
        XCTAssertEqual(try daemon.recctl("backup", "now", "--wait").status, 0, daemon.log)   // an empty library fits
        // 20 s of stereo noise as FLAC (kept as it is by the import): about 4 MB that no compression shrinks.
        let noise = work.appendingPathComponent("noise.flac").path
        XCTAssertEqual(try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "anoisesrc=d=20:a=0.5", "-ac", "2", "-c:a", "flac", noise]).status, 0)
        XCTAssertEqual(try daemon.recctl("import", noise, "--title", "Noise").status, 0)
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        let full = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(full.status, 1, full.stdout)
        let s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertEqual(s.lastError?.reason, .full, "\(s)")
        XCTAssertTrue(s.lastError?.message.contains("is full") == true, "\(s)")
        XCTAssertNotNil(s.lastSuccess, "the last good backup is still known")
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertEqual(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording?.state, .ready)
    }

    /// recd's own disk full while the snapshot's catalog copy is made (the data directory on a small
    /// tmpfs, filled to within a few KB): the run fails as `staging`, saying why, its half-made folder
    /// is gone, the library is untouched, and the next run, with room, backs it all up.
    func testAFullDiskWhileTheCatalogIsCopiedFailsTheRunAndChangesNothing() throws {
        try Skip.if(getuid() != 0, "mounting a small tmpfs needs root")
        let dir = work.appendingPathComponent("recd")
        let data = dir.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let mount = try Tools.run("mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", data.path])
        try Skip.if(mount.status != 0, "mount -t tmpfs refused here: \(mount.stderr)")
        defer { daemon?.stop(); _ = try? Tools.run("umount", ["-l", data.path]) }
        let password = try passwordFile()
        XCTAssertEqual(try Tools.run("restic", ["init", "--repo", repository, "--password-file", password]).status, 0)
        try startDaemon(password: password, extra: ["--min-free-mb", "0"])
        let memo = try daemon.recctlJSON(Recording.self, "import", try wav("m.wav", hz: 440), "--title", "Kept",
                                         "--notes", String(repeating: "A note that makes the catalog larger. ", count: 5))
        let before = try sha256(daemon.path(of: memo))
        // Fill the disk but for 16 KB: less than the catalog's copy needs.
        let filler = data.appendingPathComponent("filler").path
        let free = try XCTUnwrap((try FileManager.default.attributesOfFileSystem(forPath: data.path))[.systemFreeSize] as? NSNumber).int64Value
        XCTAssertEqual(try Tools.run("fallocate", ["-l", String(free - 16_384), filler]).status, 0)
        let failed = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(failed.status, 1, failed.stdout + failed.stderr)
        let s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertEqual(s.lastError?.reason, .staging, "\(s)")
        XCTAssertTrue(s.lastError?.message.contains("catalog") == true && s.lastError?.message.contains("full") == true, "\(s)")
        XCTAssertNil(s.lastSuccess)
        XCTAssertFalse(FileManager.default.fileExists(atPath: data.appendingPathComponent(".backup/stage").path), "no half-made stage left")
        XCTAssertEqual(try sha256(daemon.path(of: memo)), before)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", memo.id.uuidString).notes, memo.notes)
        // Room again: the next run has it all.
        try FileManager.default.removeItem(atPath: filler)
        let done = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(done.status, 0, done.stdout + done.stderr + daemon.log)
        XCTAssertEqual(try daemon.recctlJSON(BackupStatus.self, "backup", "status").lastSuccess?.recordings, 1)
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)
    }

    /// An SFTP repository on a real sshd the test starts on 127.0.0.1 (keys made here): backed up
    /// and restored through it; the same sshd stopped is "unreachable", said at once, while a take
    /// goes on.
    func testAnSFTPRepositoryOnARealSSHDBacksUpRestoresAndIsSaidUnreachableWhenDown() throws {
        try Skip.if(Tools.which("sshd") == nil && !FileManager.default.fileExists(atPath: "/usr/sbin/sshd"),
                    "sshd is missing (openssh-server): scripts/install-deps.sh --test installs it")
        try Skip.if(getuid() != 0, "sshd as a server of logins needs root (its privilege separation)")
        let sshd = try SSHServer(in: work.appendingPathComponent("sshd"))
        defer { sshd.stop() }
        let password = try passwordFile()
        let remote = "sftp:root@127.0.0.1:" + work.appendingPathComponent("remote-repo").path
        try startDaemon(password: password, repository: remote, extra: ["--backup-option", "sftp.command=\(sshd.command)"])
        XCTAssertEqual(try daemon.recctl("backup", "init").status, 0, daemon.log)
        let memo = try daemon.recctlJSON(Recording.self, "import", try wav("m.wav", hz: 660), "--title", "Over SSH")
        let done = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(done.status, 0, done.stdout + done.stderr + daemon.log)
        XCTAssertEqual(try daemon.recctlJSON(BackupStatus.self, "backup", "status").lastSuccess?.recordings, 1)
        let restored = work.appendingPathComponent("from-sftp")
        let r = try Tools.run(Tools.recctl, ["restore", "--into", restored.path, "--repository", remote, "--password-file", password,
                                             "--option", "sftp.command=\(sshd.command)"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertEqual(try sha256(restored.appendingPathComponent(memo.file).path), try sha256(daemon.path(of: memo)))

        sshd.stop()
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        let started = Date()
        let down = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(down.status, 1, down.stdout)
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "a refused connection is said at once, not after a timeout")
        let s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertEqual(s.lastError?.reason, .unreachable, "\(s)")
        XCTAssertTrue(s.lastError?.message.contains("could not be reached") == true, "\(s)")
        XCTAssertEqual(s.lastSuccess?.recordings, 1, "the last good backup is still known")
        XCTAssertEqual(try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save").recording?.state, .ready)
    }

    /// restic killed (-9) in the middle of a backup, then recd killed in the middle of the next: the
    /// library is untouched, no stage is left once recd is back, the next run completes, and the
    /// repository checks clean (after restic's own unlock of the dead runs' locks).
    func testKillingResticOrRecdMidBackupLeavesTheLibraryAndTheRepositorySound() throws {
        let (gate, wrapper) = try gatedRestic()
        let password = try passwordFile()
        XCTAssertEqual(try Tools.run("restic", ["init", "--repo", repository, "--password-file", password]).status, 0)
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_RESTIC": wrapper]) { $1 },
                            extraArgs: Self.keepAll + ["--backup", repository, "--backup-password-file", password, "--backup-delay", "3600",
                                        "--backup-check-interval", "3600", "--backup-check-subset", "100%"],
                            dir: work.appendingPathComponent("recd"))
        try daemon.start()
        for i in 1...3 { _ = try daemon.recctlJSON(Recording.self, "import", try wav("k\(i).wav", hz: 300 + 100 * i), "--title", "Memo \(i)") }
        let (before, hashes) = try library(daemon)
        let stage = daemon.dataDir.appendingPathComponent(".backup/stage")

        func waitForRestic() throws -> Int32 { try self.waitForRestic(gate) }

        // 1. restic killed while it runs.
        XCTAssertEqual(try daemon.recctl("backup", "now").status, 0)
        let restic = try waitForRestic()
        XCTAssertTrue(FileManager.default.fileExists(atPath: stage.appendingPathComponent("catalog.sqlite").path), "the stage is made before restic runs")
        kill(restic, SIGKILL)
        var s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        let deadline = Date().addingTimeInterval(20)
        while s.lastError == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.1); s = try daemon.recctlJSON(BackupStatus.self, "backup", "status") }
        XCTAssertEqual(s.lastError?.reason, .failed, "\(s)")
        XCTAssertTrue(s.lastError?.message.contains("signal 9") == true || s.lastError?.message.contains("137") == true, "\(s)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: stage.path), "the stage goes with the run")

        // 2. recd killed while restic runs (its parent-death signal interrupts restic, which unlocks).
        XCTAssertEqual(try daemon.recctl("backup", "now").status, 0)
        let second = try waitForRestic()
        daemon.kill9()
        FileManager.default.createFile(atPath: gate.path, contents: nil)   // restic goes on, if it still lives
        let gone = Date().addingTimeInterval(10)
        while kill(second, 0) == 0 && Date() < gone { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertNotEqual(kill(second, 0), 0, "restic ended with recd")

        try daemon.start()
        XCTAssertFalse(FileManager.default.fileExists(atPath: stage.path), "a stage left by the killed recd is removed at start")
        let (after, afterHashes) = try library(daemon)
        XCTAssertEqual(after.map(\.id), before.map(\.id))
        XCTAssertEqual(afterHashes, hashes, "nothing in the library changed")
        let next = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(next.status, 0, next.stdout + next.stderr + daemon.log)
        XCTAssertEqual(try daemon.recctlJSON(BackupStatus.self, "backup", "status").lastSuccess?.recordings, 3)
        // recd's own check after that good backup (the first one is due at once): it unlocks what the
        // killed runs left, and restic finds the repository sound, all of its data read back.
        let check = try waitForCheck()
        XCTAssertEqual(check.ok, true, "\(check)\n\(daemon.log)")
        XCTAssertTrue(check.message.contains("no errors were found"), check.message)
        let own = try Tools.run("restic", ["check", "--repo", repository, "--password-file", password, "--no-cache"])
        XCTAssertEqual(own.status, 0, own.stdout + own.stderr)
    }

    /// A restic that hangs (the gated wrapper: no progress, nothing said) is stopped after
    /// --backup-stall and the run fails saying so; recording goes on; the next run completes.
    func testABackupThatMakesNoProgressIsStoppedAndSaidAsSuch() throws {
        let (gate, wrapper) = try gatedRestic()
        let password = try passwordFile()
        XCTAssertEqual(try Tools.run("restic", ["init", "--repo", repository, "--password-file", password]).status, 0)
        daemon = try Daemon(environment: pulse.environment.merging(["RECD_RESTIC": wrapper]) { $1 },
                            extraArgs: Self.keepAll + ["--backup", repository, "--backup-password-file", password, "--backup-delay", "3600",
                                        "--backup-stall", "2"],
                            dir: work.appendingPathComponent("recd"))
        try daemon.start()
        _ = try daemon.recctlJSON(Recording.self, "import", try wav("s.wav", hz: 440), "--title", "Stalled")
        let started = Date()
        let hung = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(hung.status, 1, hung.stdout + hung.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
        let s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertEqual(s.lastError?.reason, .failed, "\(s)")
        XCTAssertTrue(s.lastError?.message.contains("made no progress for 2 s and was stopped") == true, "\(s)")
        XCTAssertEqual(try Tools.run("pgrep", ["-f", wrapper]).stdout, "", "the hung restic is gone")
        FileManager.default.createFile(atPath: gate.path, contents: nil)
        // The next run completes: the stopped restic left no lock behind. By a recd with the default
        // stall: in CI a restic at nice 19 beside a compile showed no progress for 2 s at its start.
        daemon.stop()
        try daemon.startWithout(option: "--backup-stall")
        let next = try daemon.recctl("backup", "now", "--wait")
        XCTAssertEqual(next.status, 0, next.stdout + next.stderr + daemon.log)
        let bad = try Tools.run(Tools.recd, ["--backup", repository, "--backup-password-file", password, "--backup-stall", "1",
                                             "--data-dir", work.appendingPathComponent("never").path, "--socket", work.appendingPathComponent("never.sock").path])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("--backup-stall must be 2...86400 seconds"), bad.stderr)
    }

    /// The repository's last check, once recd has made one (within 30 s).
    func waitForCheck() throws -> BackupCheck {
        let deadline = Date().addingTimeInterval(30)
        var s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        while s.lastCheck == nil && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        }
        return try XCTUnwrap(s.lastCheck, "no check was made\n\(daemon.log)")
    }

    /// A repository whose data was damaged (a pack file's bytes changed): recd's check, reading all
    /// of the data back, finds it and says so in status (with a warning) and the journal.
    func testADamagedRepositoryIsFoundByTheCheckAndWarnedAbout() throws {
        let password = try passwordFile()
        XCTAssertEqual(try Tools.run("restic", ["init", "--repo", repository, "--password-file", password]).status, 0)
        try startDaemon(password: password, extra: ["--backup-check-interval", "3600", "--backup-check-subset", "100%"])
        _ = try daemon.recctlJSON(Recording.self, "import", try wav("c.wav", hz: 440, seconds: 2))
        XCTAssertEqual(try daemon.recctl("backup", "now", "--wait").status, 0, daemon.log)
        XCTAssertEqual(try waitForCheck().ok, true)
        XCTAssertNil(try daemon.recctlJSON(BackupStatus.self, "backup", "status").warning)
        daemon.stop()
        // Flip bytes in the middle of every data pack.
        let data = URL(fileURLWithPath: repository).appendingPathComponent("data")
        let packs = try FileManager.default.subpathsOfDirectory(atPath: data.path).map { data.appendingPathComponent($0) }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
        XCTAssertFalse(packs.isEmpty)
        for pack in packs {
            chmod(pack.path, 0o600)
            let h = try FileHandle(forUpdating: pack)
            let size = try h.seekToEnd()
            try h.seek(toOffset: size / 2)
            try h.write(contentsOf: Data(repeating: 0x5A, count: 64))
            try h.close()
        }
        try FileManager.default.removeItem(at: daemon.dataDir.appendingPathComponent(".backup/last-check.json"))
        try daemon.start()
        _ = try daemon.recctlJSON(Recording.self, "import", try wav("c2.wav", hz: 550, seconds: 1))
        _ = try daemon.recctl("backup", "now", "--wait")
        let check = try waitForCheck()
        XCTAssertEqual(check.ok, false, "\(check)")
        let s = try daemon.recctlJSON(BackupStatus.self, "backup", "status")
        XCTAssertTrue(s.warning?.contains("last check found errors") == true, "\(s)")
        XCTAssertTrue(daemon.log.contains("check found errors"), daemon.log)
    }
}

/// A private sshd on 127.0.0.1 (a free port, host and client keys made here), serving SFTP to the
/// client key alone: a real SFTP repository for restic.
final class SSHServer {
    let dir: URL
    let port: Int
    private var pid: Int32 = 0
    private var madeRunDir = false

    init(in dir: URL) throws {
        self.dir = dir
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // sshd as root insists on its privilege separation folder (systemd makes it for the real one).
        if !FileManager.default.fileExists(atPath: "/run/sshd") {
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            madeRunDir = true
        }
        for key in ["host", "client"] {
            let r = try Tools.run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "recd-test-\(key)", "-f", dir.appendingPathComponent(key).path])
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        try FileManager.default.copyItem(at: dir.appendingPathComponent("client.pub"), to: dir.appendingPathComponent("authorized_keys"))
        port = try Self.freePort()
        let config = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(dir.appendingPathComponent("host").path)
            AuthorizedKeysFile \(dir.appendingPathComponent("authorized_keys").path)
            PidFile \(dir.appendingPathComponent("sshd.pid").path)
            StrictModes no
            UsePAM no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            Subsystem sftp internal-sftp

            """
        try Data(config.utf8).write(to: dir.appendingPathComponent("sshd_config"))
        // Started to the background by itself (no -D): Foundation's Process takes a child that closes
        // the descriptors it inherited (sshd does) for ended, and then waits for it in a blocking
        // wait4 that holds up every other Process of the test. Its pid comes from PidFile.
        let log = dir.appendingPathComponent("sshd.log")
        let r = try Tools.run("/usr/sbin/sshd", ["-f", dir.appendingPathComponent("sshd_config").path, "-E", log.path])
        XCTAssertEqual(r.status, 0, r.stderr + ((try? String(contentsOf: log, encoding: .utf8)) ?? ""))
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let text = try? String(contentsOf: dir.appendingPathComponent("sshd.pid"), encoding: .utf8),
               let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                self.pid = pid
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("sshd did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        throw NSError(domain: "recd-tests", code: 7)
    }

    /// restic's sftp.command (split by restic, run without a shell): the client key, this port, no
    /// prompts, and bounds on a dead connection.
    var command: String {
        "ssh -i \(dir.appendingPathComponent("client").path) -p \(port) -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
            + "-o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=10 -o ServerAliveInterval=15 -o ServerAliveCountMax=3 root@127.0.0.1 -s sftp"
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) } }
        return Int(UInt16(bigEndian: a.sin_port))
    }

    func stop() {
        if pid > 0 {
            kill(pid, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while kill(pid, 0) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            pid = 0
        }
        if madeRunDir { try? FileManager.default.removeItem(atPath: "/run/sshd"); madeRunDir = false }
    }
}
