// Deletion (one, all), recovery of what a crash leaves, the consistency check, and disk faults.
import Foundation
import RecdAPI
import XCTest

final class DeletionTests: DaemonTestCase {
    var recordingsDir: String { daemon.dataDir.appendingPathComponent("Recordings").path }

    func visibleFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: recordingsDir).filter { !$0.hasPrefix(".") }.sorted()
    }

    func allEntries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: recordingsDir).sorted() }

    /// Makes a file immutable (chattr +i): not even root can rename or delete it.
    func immutable(_ path: String, _ on: Bool) throws {
        let r = try Tools.run("chattr", [on ? "+i" : "-i", path])
        if on && r.status != 0 { throw Skip.because("chattr +i is not supported here: \(r.stderr)") }
    }

    /// Runs recctl on a pseudo-terminal, answering its question with `answer`.
    func recctlOnTTY(_ args: [String], answer: String) throws -> ProcessResult {
        let script = """
            import os, pty, sys, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            out = b""
            answered = False
            while True:
                try:
                    data = os.read(fd, 1024)
                except OSError:
                    break
                if not data:
                    break
                out += data
                if not answered and b"[y/N]" in out:
                    os.write(fd, (os.environ["ANSWER"] + "\\n").encode())
                    answered = True
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(out.decode(errors="replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        var env = daemon.environment
        env["ANSWER"] = answer
        return try Tools.run("python3", ["-c", script, Tools.recctl, "--socket", daemon.socket] + args, environment: env)
    }

    func testDeleteAsksRemovesFileAndRowAndRefusesWithoutATerminal() throws {
        let r = try XCTUnwrap(try record(seconds: 0.4, startArgs: ["--title", "Don't Do It"], stopArgs: ["--save"]).recording)
        let path = daemon.path(of: r)
        // No terminal to ask on and no --yes: refused, nothing changed.
        let refused = try daemon.recctl("delete", r.id.uuidString)
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("--yes"), refused.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        // On a terminal: the seed's question; "n" keeps it, "y" deletes it.
        let no = try recctlOnTTY(["delete", String(r.id.uuidString.prefix(6))], answer: "n")
        XCTAssertEqual(no.status, 0, no.stdout)
        XCTAssertTrue(no.stdout.contains("Delete 'Don't Do It'? This recording will be permanently deleted. This cannot be undone."), no.stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        let yes = try recctlOnTTY(["delete", String(r.id.uuidString.prefix(6))], answer: "y")
        XCTAssertEqual(yes.status, 0, yes.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try daemon.recctl("show", r.id.uuidString).status, 1)
        XCTAssertEqual(try allEntries(), [])
        // Unknown ids: 404.
        XCTAssertEqual(try daemon.recctl("delete", "--yes", UUID().uuidString).status, 1)
        XCTAssertEqual(try daemon.curl("DELETE", "/v1/recordings/\(UUID().uuidString)").0, 404)
    }

    func testDeletingTheRecordingInProgressStopsAndDiscardsIt() throws {
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        Thread.sleep(forTimeInterval: 0.5)
        let deleted = try daemon.recctlJSON(Recording.self, "delete", "--yes", start.recording.id.uuidString)
        XCTAssertEqual(deleted.id, start.recording.id)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        XCTAssertEqual(try allEntries(), [])
    }

    func testAFileThatCannotBeRemovedKeepsItsRecording() throws {
        let r = try XCTUnwrap(try record(seconds: 0.4, stopArgs: ["--save"]).recording)
        let path = daemon.path(of: r)
        try immutable(path, true)
        defer { try? immutable(path, false) }
        let result = try daemon.recctl("delete", "--yes", r.id.uuidString)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains(URL(fileURLWithPath: path).lastPathComponent), result.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", r.id.uuidString).state, .ready)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try allEntries(), [URL(fileURLWithPath: path).lastPathComponent])
    }

    var trashFolders: [String] {
        get throws { try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir.path).filter { $0.hasPrefix(".trash-") } }
    }

    func testDeleteAllIsAllOrNothing() throws {
        try record(seconds: 0.3, stopArgs: ["--save"])
        try record(seconds: 0.3, stopArgs: ["--save"])
        try record(seconds: 0.3)
        XCTAssertEqual(try visibleFiles().count, 3)

        // recd's quarantine stays in Recordings/ (moved back out of the swapped-away folder); when it
        // cannot be moved, the whole operation is refused and nothing changes.
        let quarantine = recordingsDir + "/.quarantine"
        try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: false)
        try "not audio".write(toFile: quarantine + "/notes.txt", atomically: false, encoding: .utf8)
        try immutable(quarantine, true)
        let failed = try daemon.recctl("delete", "--all", "--yes")
        try immutable(quarantine, false)
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains(".quarantine"), failed.stderr)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 3)
        XCTAssertEqual(try visibleFiles().count, 3)
        XCTAssertEqual(try allEntries().count, 4, "\((try? allEntries()) ?? [])")
        XCTAssertEqual(try trashFolders, [], "no trash folder left behind")
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)

        // A bare DELETE on the collection is refused.
        XCTAssertEqual(try daemon.curl("DELETE", "/v1/recordings").0, 400)
        // So is one that says both (the first value used to win).
        let (twice, said) = try daemon.curl("DELETE", "/v1/recordings?confirm=all&confirm=no")
        XCTAssertEqual(twice, 400, said)
        XCTAssertTrue(said.contains("give confirm once"), said)

        // A folder someone put in Recordings/ is not a recording: it stays, with what it holds.
        let mine = recordingsDir + "/mine"
        try FileManager.default.createDirectory(atPath: mine, withIntermediateDirectories: false)
        try "keep me".write(toFile: mine + "/keep.txt", atomically: false, encoding: .utf8)

        // With a recording in progress: it is stopped and discarded as part of it.
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 0.4)
        let done = try daemon.recctlJSON(DeleteAllResponse.self, "delete", "--all", "--yes")
        XCTAssertEqual(done.deletedRecordings, 4)
        XCTAssertEqual(done.deletedFiles, 3)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        XCTAssertEqual(try allEntries(), [".quarantine", "mine"], "at the reply the files are out of Recordings/; the quarantine and the folder stay")
        XCTAssertEqual(try String(contentsOfFile: quarantine + "/notes.txt", encoding: .utf8), "not audio")
        XCTAssertEqual(try String(contentsOfFile: mine + "/keep.txt", encoding: .utf8), "keep me")
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent, "a trash being emptied is settled")
        // The folder they went into is removed after the reply.
        for _ in 0..<100 where try !trashFolders.isEmpty { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(try trashFolders, [])
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
        // Recording goes on into the new folder.
        XCTAssertNotNil(try record(seconds: 0.3, stopArgs: ["--save"]).recording)
        XCTAssertEqual(try visibleFiles().count, 2, "the recording and the folder")
        // The seed's wording on a terminal.
        let asked = try recctlOnTTY(["delete", "--all"], answer: "n")
        XCTAssertTrue(asked.stdout.contains("Delete All Data? This will permanently delete all recordings. This cannot be undone."), asked.stdout)
    }

    /// Where `Recordings/` cannot be swapped whole (a symbolic link to a folder elsewhere), the files
    /// move one by one — all or nothing as well — and the link stays a link.
    func testDeleteAllOfALinkedRecordingsFolderMovesFileByFile() throws {
        try record(seconds: 0.3, stopArgs: ["--save"])
        let pending = try XCTUnwrap(try record(seconds: 0.3).recording)
        daemon.stop()
        let elsewhere = daemon.dataDir.deletingLastPathComponent().appendingPathComponent("elsewhere").path
        try FileManager.default.moveItem(atPath: recordingsDir, toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: recordingsDir, withDestinationPath: elsewhere)
        try daemon.start()

        // One file cannot move: refused, nothing changes.
        let stuck = daemon.path(of: pending)
        try immutable(stuck, true)
        let failed = try daemon.recctl("delete", "--all", "--yes")
        try immutable(stuck, false)
        XCTAssertEqual(failed.status, 1)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 2)
        XCTAssertEqual(try allEntries().count, 2, "no trash folder left behind: \((try? allEntries()) ?? [])")

        let done = try daemon.recctlJSON(DeleteAllResponse.self, "delete", "--all", "--yes")
        XCTAssertEqual(done.deletedRecordings, 2)
        XCTAssertEqual(done.deletedFiles, 2)
        XCTAssertEqual(try visibleFiles(), [])
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: recordingsDir), elsewhere)
        for _ in 0..<100 where try !allEntries().isEmpty { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(try allEntries(), [])
        XCTAssertEqual(try trashFolders, [])
    }

    /// The two crash points of "delete all", set up by hand with the daemon stopped: files moved into
    /// the trash with the journal open (→ rolled back), and rows committed away with the trash still
    /// full (→ finished). `intoTrash` does step 2 as one of recd's versions does.
    func checkInterruptedDeleteAll(intoTrash: (_ journal: String, _ names: [String]) throws -> Void) throws {
        let a = try XCTUnwrap(try record(seconds: 0.3, stopArgs: ["--save"]).recording)
        let b = try XCTUnwrap(try record(seconds: 0.3).recording)
        daemon.stop()
        let db = daemon.dataDir.appendingPathComponent("catalog.sqlite").path
        let journal = UUID().uuidString
        let names = [a, b].map { URL(fileURLWithPath: $0.file).lastPathComponent }
        try intoTrash(journal, names)
        XCTAssertEqual(try Tools.run("sqlite3", [db, "INSERT INTO journal (id, kind, startedAt) VALUES ('\(journal)', 'delete-all', '2026-01-01 00:00:00.000')"]).status, 0)
        try daemon.start()
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 2)
        XCTAssertEqual(try visibleFiles(), names.sorted())
        XCTAssertEqual(try allEntries().count, 2)
        XCTAssertEqual(try trashFolders, [])
        let status = try daemon.recctlJSON(DaemonStatus.self, "status")
        XCTAssertEqual(status.recovery?.deleteAllRolledBack, true)
        XCTAssertTrue(try daemon.recctlJSON(ConsistencyReport.self, "check").isConsistent)

        // Past the commit: rows gone, files still in the trash.
        daemon.stop()
        try intoTrash(journal, names)
        XCTAssertEqual(try Tools.run("sqlite3", [db, "DELETE FROM recording"]).status, 0)
        try daemon.start()
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
        XCTAssertEqual(try allEntries(), [])
        XCTAssertEqual(try trashFolders, [])
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").recovery?.deleteAllFinished, true)
    }

    /// Step 2 as this version does it: `Recordings/` swapped whole with an empty folder.
    func testInterruptedDeleteAllBySwapIsRolledBackOrFinished() throws {
        try checkInterruptedDeleteAll { journal, _ in
            let trash = daemon.dataDir.appendingPathComponent(".trash-" + journal).path
            try FileManager.default.moveItem(atPath: recordingsDir, toPath: trash)
            try FileManager.default.createDirectory(atPath: recordingsDir, withIntermediateDirectories: false)
        }
    }

    /// Step 2 file by file into `Recordings/.trash-<id>/` (a linked `Recordings/`, and earlier versions).
    func testInterruptedDeleteAllFileByFileIsRolledBackOrFinished() throws {
        try checkInterruptedDeleteAll { journal, names in
            let trash = recordingsDir + "/.trash-" + journal
            try FileManager.default.createDirectory(atPath: trash, withIntermediateDirectories: false)
            for name in names {
                try FileManager.default.moveItem(atPath: recordingsDir + "/" + name, toPath: trash + "/" + name)
            }
        }
    }

    func testRecoveryAdoptsOrphansQuarantinesNonMediaAndMarksMissing() throws {
        try pulse.play(try Tones.sine())
        let kept = try XCTUnwrap(try record(seconds: 0.6, stopArgs: ["--save"]).recording)
        let lost = try XCTUnwrap(try record(seconds: 0.3, stopArgs: ["--save"]).recording)
        daemon.stop()
        try FileManager.default.copyItem(atPath: daemon.path(of: kept), toPath: recordingsDir + "/copied in.m4a")
        try "not audio".write(toFile: recordingsDir + "/notes.txt", atomically: true, encoding: .utf8)
        let aside = daemon.dir.appendingPathComponent("lost-aside.m4a").path
        try FileManager.default.moveItem(atPath: daemon.path(of: lost), toPath: aside)
        try daemon.start()

        let status = try daemon.recctlJSON(DaemonStatus.self, "status")
        let recovery = try XCTUnwrap(status.recovery)
        XCTAssertEqual(recovery.adopted.count, 1)
        XCTAssertEqual(recovery.quarantined, ["notes.txt"])
        XCTAssertEqual(recovery.markedMissing, [lost.id])
        let adopted = try daemon.recctlJSON(Recording.self, "show", recovery.adopted[0].uuidString)
        XCTAssertEqual(adopted.state, .pending)
        XCTAssertTrue(adopted.recovered)
        XCTAssertEqual(adopted.file, "Recordings/copied in.m4a")
        XCTAssertEqual(try XCTUnwrap(adopted.duration), try XCTUnwrap(kept.duration), accuracy: 0.05)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", lost.id.uuidString).state, .missing)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list", "--state", "missing").recordings.map(\.id), [lost.id])
        XCTAssertTrue(FileManager.default.fileExists(atPath: recordingsDir + "/.quarantine/notes.txt"))
        let check = try daemon.recctlJSON(ConsistencyReport.self, "check")
        XCTAssertTrue(check.isConsistent, "\(check)")
        XCTAssertEqual(check.missing, [lost.id])
        XCTAssertEqual(check.filesBack, [])
        // Its own file put back, as recctl advises: the check says so, and the repair makes it saved
        // again, as it was (it used to come back pending, out of the library).
        try FileManager.default.moveItem(atPath: aside, toPath: daemon.path(of: lost))
        let back = try daemon.recctlJSON(ConsistencyReport.self, "check")
        XCTAssertEqual(back.filesBack, [lost.id])
        XCTAssertFalse(back.isConsistent)
        let told = try daemon.recctl("check")
        XCTAssertTrue(told.stdout.contains("file back for missing recording \(lost.id.uuidString)")
                      && told.stdout.contains("run `recctl check --repair`"), told.stdout)
        let restored = try daemon.recctl("check", "--repair")
        XCTAssertTrue(restored.stdout.contains("repair: 1 missing recording(s) restored"), restored.stdout)
        let again = try daemon.recctlJSON(Recording.self, "show", lost.id.uuidString)
        XCTAssertEqual(again.state, .ready)
        XCTAssertFalse(again.recovered)
        // Another file under its name (another size): pending and recovered, so the user looks.
        try FileManager.default.removeItem(atPath: daemon.path(of: lost))
        XCTAssertEqual(try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair").repaired?.markedMissing, [lost.id])
        try FileManager.default.copyItem(atPath: daemon.path(of: kept), toPath: daemon.path(of: lost))
        let repaired = try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair")
        XCTAssertEqual(repaired.repaired?.foundAgain, [lost.id])
        let other = try daemon.recctlJSON(Recording.self, "show", lost.id.uuidString)
        XCTAssertEqual(other.state, .pending)
        XCTAssertTrue(other.recovered)
        // A missing recording can be deleted.
        try FileManager.default.removeItem(atPath: daemon.path(of: lost))
        XCTAssertEqual(try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair").repaired?.markedMissing, [lost.id])
        XCTAssertEqual(try daemon.recctl("delete", "--yes", lost.id.uuidString).status, 0)
        XCTAssertEqual(try daemon.recctlJSON(ConsistencyReport.self, "check").missing, [])
    }

    func testCheckFindsAndRepairFixesWhileRunning() throws {
        let r = try XCTUnwrap(try record(seconds: 0.3, stopArgs: ["--save"]).recording)
        try FileManager.default.copyItem(atPath: daemon.path(of: r), toPath: recordingsDir + "/dropped.m4a")
        let found = try daemon.recctlJSON(ConsistencyReport.self, "check")
        XCTAssertEqual(found.filesWithoutRow, ["dropped.m4a"])
        XCTAssertFalse(found.isConsistent)
        let text = try daemon.recctl("check")
        XCTAssertTrue(text.stdout.contains("file with no recording: Recordings/dropped.m4a"), text.stdout)
        // Repair while a recording is in progress leaves that recording alone.
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        let repaired = try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair")
        XCTAssertEqual(repaired.repaired?.adopted.count, 1)
        XCTAssertEqual(repaired.repaired?.salvaged, [])
        XCTAssertTrue(repaired.isConsistent, "\(repaired)")
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .recording)
        XCTAssertEqual(try daemon.recctl("record", "stop").status, 0)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 3)
    }
}

final class DiskTests: XCTestCase {
    func testStartIsRefusedWhenFreeSpaceIsUnderTheThreshold() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        let daemon = try Daemon(environment: pulse.environment, extraArgs: ["--min-free-mb", "1000000000"])
        defer { daemon.cleanUp() }
        try daemon.start()
        let (status, body) = try daemon.curl("POST", "/v1/record/start", body: "{}")
        XCTAssertEqual(status, 507, body)
        XCTAssertTrue(body.contains("insufficient_storage") && body.contains("MB free"), body)
        XCTAssertEqual(try daemon.recctl("record", "start").status, 1)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 0)
    }

    /// `Recordings/` on a 192 KiB tmpfs: the disk fills a few seconds in; the recording ends by itself,
    /// keeps what was written, and status says why.
    func testAFullDiskEndsTheRecordingCleanly() throws {
        let pulse = try PulseAudioServer()
        defer { pulse.stop() }
        try pulse.play(try Tones.sine())
        let daemon = try Daemon(environment: pulse.environment, extraArgs: ["--min-free-mb", "0", "--bitrate", "256000"])
        defer { daemon.cleanUp() }
        let recordings = daemon.dataDir.appendingPathComponent("Recordings").path
        try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
        let mount = try Tools.run("mount", ["-t", "tmpfs", "-o", "size=192k,mode=0700", "tmpfs", recordings])
        guard mount.status == 0 else { throw Skip.because("cannot mount a tmpfs here: \(mount.stderr)") }
        defer { daemon.stop(); _ = try? Tools.run("umount", [recordings]) }
        try daemon.start()
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        var status = try daemon.recctlJSON(DaemonStatus.self, "status")
        for _ in 0..<300 where status.activity != .idle {
            Thread.sleep(forTimeInterval: 0.1)
            status = try daemon.recctlJSON(DaemonStatus.self, "status")
        }
        XCTAssertEqual(status.activity, .idle, "the recording did not end when the disk filled")
        let fault = try XCTUnwrap(status.lastFault)
        XCTAssertEqual(fault.recordingID, start.recording.id)
        XCTAssertTrue(fault.reason.contains("No space left on device"), fault.reason)
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertEqual(r.state, .pending)
        // What reached the disk plays: about 192 KiB at 256 kbit/s is ~6 s, less the last fragment.
        let decoded = try AudioAnalysis.of(daemon.path(of: r))
        XCTAssertGreaterThan(decoded.duration, 2.5)
        XCTAssertEqual(decoded.frequency, 1000, accuracy: 10)
        XCTAssertEqual(try XCTUnwrap(r.duration), decoded.duration, accuracy: 1.1)
    }
}
