// recctl as a person meets it: the rough edges found by using it for an hour (issue 18), each
// reproduced through the real recctl, the real socket and the real recd.
import Foundation
import RecdAPI
import Synchronization
import XCTest

final class ClientTests: DaemonTestCase {
    /// A saved recording of a second or so, titled `title` (through the API, as any client would).
    func saved(_ title: String) throws -> Recording {
        let stop = try record(seconds: 0.8, startArgs: ["--title", title], stopArgs: ["--save"])
        return try XCTUnwrap(stop.recording)
    }

    /// Writes a row straight into the catalog (sqlite3 CLI; WAL lets it in while recd runs), as an
    /// older recd or another tool may have left it.
    func insertRow(id: String, title: String, state: String = "ready") throws {
        let db = daemon.dataDir.appendingPathComponent("catalog.sqlite").path
        let quoted = title.replacingOccurrences(of: "'", with: "''")
        let sql = """
            INSERT INTO recording (id, type, state, title, notes, createdAt, file, playCount, recovered, droppedFrames)
            VALUES ('\(id)', 'audio', '\(state)', '\(quoted)', '', '2025-10-24 20:15:00.000', 'Recordings/x-\(id).m4a', 0, 0, 0);
            """
        let r = try Tools.run("sqlite3", [db, sql])
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    /// The SVG request used to fail now and then ("connection lost: I/O on closed channel", 3 in
    /// 1,200 under load): the request went out in parts and recd, replying and closing as soon as
    /// it had the head, closed the channel between them. Four loops at once make the load.
    func testWaveformNeverLosesItsReplyUnderLoad() throws {
        try pulse.play(try Tones.sine(frequency: 440, amplitude: 0.5))
        let r = try saved("Wave")
        let failures = Mutex([String]())
        let (dir, socket, env, id) = (daemon.dir, daemon.socket, daemon.environment, Output8(r.id))
        DispatchQueue.concurrentPerform(iterations: 4) { k in
            for i in 0..<75 {
                let out = dir.appendingPathComponent("w\(k)-\(i).svg").path
                guard let run = try? Tools.run(Tools.recctl, ["--socket", socket, "waveform", id, "--svg", out], environment: env)
                else { continue }
                if run.status != 0 { failures.withLock { $0.append(run.stderr) } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [], "300 waveform --svg runs")
    }

    func testControlCharactersAreRefusedAndNeverPrintedRaw() throws {
        try pulse.play(try Tones.sine())
        let r = try saved("Plain")
        let id = Output8(r.id)
        let red = try daemon.recctl("edit", id, "--title", "\u{1B}[31mred")
        XCTAssertEqual(red.status, 1)
        XCTAssertTrue(red.stderr.contains("control character U+001B"), red.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", id).title, "Plain", "nothing changed")
        let (status, _) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)", body: #"{"notes": "a\u0007b"}"#)
        XCTAssertEqual(status, 422)
        // Notes keep their line breaks.
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "edit", id, "--notes", "line one\nline two").notes, "line one\nline two")

        // A title stored before the rule (straight into the catalog) is printed escaped.
        try insertRow(id: "EEEE0000-0000-4000-8000-000000000001", title: "\u{1B}]0;owned\u{07}\u{1B}[2Jgone")
        for args in [["list"], ["show", "eeee"]] {
            let out = try daemon.recctl(args)
            XCTAssertEqual(out.status, 0, out.stderr)
            XCTAssertFalse(out.stdout.contains("\u{1B}") || out.stdout.contains("\u{07}"), "raw control characters in \(args)")
            XCTAssertTrue(out.stdout.contains("\\u{1B}]0;owned\\u{7}"), out.stdout)
        }
    }

    /// Right-to-left overrides and isolates (U+202A–U+202E, U+2066–U+2069) make a title, a note or a
    /// file's name show other text than it holds (`memo‮vaw.exe` reads as `memoexe.wav`): 422 as the
    /// other control characters, in the body and in an import's query alike; a file's own title tag
    /// that holds one is imported with a space in its place, as controls are.
    func testBidirectionalOverridesAreRefusedInTitlesNotesAndImportNames() throws {
        try pulse.play(try Tones.sine())
        let r = try saved("Plain")
        var (status, body) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)", body: #"{"title": "memo\u202Evaw.exe"}"#)
        XCTAssertEqual(status, 422, body)
        XCTAssertTrue(body.contains("bidirectional formatting character U+202E"), body)
        (status, body) = try daemon.curl("PATCH", "/v1/recordings/\(r.id.uuidString)", body: #"{"notes": "a\n\u2066b\u2069"}"#)
        XCTAssertEqual(status, 422, body)
        let edit = try daemon.recctl("edit", Output8(r.id), "--title", "memo\u{202E}vaw.exe")
        XCTAssertEqual(edit.status, 1, edit.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", Output8(r.id)).title, "Plain", "nothing changed")

        // An import: its name, title and notes (query parameters), checked before a byte is stored.
        let wav = daemon.dir.appendingPathComponent("tagged.wav").path
        let made = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
                                            "-metadata", "title=memo\u{202E}vaw.exe", "-y", wav])
        XCTAssertEqual(made.status, 0, made.stderr)
        func importing(_ query: String) throws -> (Int, String) {
            let out = daemon.dir.appendingPathComponent("import-reply").path
            let c = try Tools.run("curl", ["-s", "-o", out, "-w", "%{http_code}", "--unix-socket", daemon.socket,
                                           "--data-binary", "@" + wav, "http://recd/v1/recordings/import?" + query])
            return (Int(c.stdout) ?? 0, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
        }
        for query in ["name=memo%E2%80%AEvaw.exe", "name=a.wav&title=x%E2%81%A6y", "name=a.wav&notes=%E2%80%AAz"] {
            (status, body) = try importing(query)
            XCTAssertEqual(status, 422, "\(query): \(body)")
            XCTAssertTrue(body.contains("invalid_value"), body)
        }
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1, "nothing was imported")
        (status, body) = try importing("name=tagged.wav")
        XCTAssertEqual(status, 201, body)
        let imported = try APIJSON.decoder().decode(Recording.self, from: Data(body.utf8))
        XCTAssertEqual(imported.title, "memo vaw.exe", "the tag's override became a space")
    }

    /// Usage errors are said in recctl's words, exit 2, before recd is asked: an ambiguous purpose
    /// names the purposes it could be; a search with no word says so (not recd's "invalid q"); a
    /// piped "y" does not stand in for a person at a terminal (docs/usage.md says so too).
    func testUsageErrorsSayWhatToTypeInRecctlsWords() throws {
        let r = try daemon.recctlJSON(Recording.self, "import", try Tones.sine(frequency: 440, seconds: 1))
        let id = String(r.id.uuidString.prefix(8))
        let ambiguous = try daemon.recctl("edit", id, "--purpose", "m")
        XCTAssertEqual(ambiguous.status, 2, ambiguous.stderr)
        XCTAssertTrue(ambiguous.stderr.contains("--purpose m is ambiguous: motivational or milestone"), ambiguous.stderr)
        let unknown = try daemon.recctl("edit", id, "--purpose", "happy")
        XCTAssertEqual(unknown.status, 2, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("is not one of motivational, craving, reflection, milestone, or none"), unknown.stderr)
        XCTAssertFalse(unknown.stderr.contains("lower case"), unknown.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "edit", id, "--purpose", "Mile").purpose, .milestone)
        let noWord = try daemon.recctl("search", "!!!")
        XCTAssertEqual(noWord.status, 2, noWord.stderr)
        XCTAssertTrue(noWord.stderr.contains("give at least one word to look for"), noWord.stderr)
        XCTAssertFalse(noWord.stderr.contains("invalid q"), noWord.stderr)
        let piped = try Tools.run("/bin/sh", ["-c", "echo y | \(Tools.recctl) --socket \(daemon.socket) delete \(id)"])
        XCTAssertEqual(piped.status, 2, piped.stderr)
        XCTAssertTrue(piped.stderr.contains("add --yes"), piped.stderr)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 1, "nothing was deleted")
    }

    /// Help is wrapped by the terminal's width, never broken where the source's lines ended: on a
    /// wide terminal each paragraph above USAGE is one line.
    func testHelpParagraphsAreWrappedByTheTerminalNotTheSource() throws {
        for command in [["ui"], ["play"], ["trim"], ["import"], ["record"], ["record", "start"], ["export"], ["media"], ["delete"]] {
            let help = try Tools.run(Tools.recctl, command + ["--help"],
                                     environment: ProcessInfo.processInfo.environment.merging(["COLUMNS": "1000"]) { $1 })
            let head = help.stdout.components(separatedBy: "USAGE:").first ?? ""
            let lines = head.split(separator: "\n", omittingEmptySubsequences: false)
            for (line, next) in zip(lines, lines.dropFirst()) where !line.isEmpty && !next.isEmpty {
                XCTFail("recctl \(command.joined(separator: " ")) --help breaks a paragraph after: \(line)")
            }
        }
    }

    func testCSVExportNeutralizesFormulas() throws {
        try pulse.play(try Tones.sine())
        _ = try saved("=1+2")
        _ = try saved("@SUM(A1:A9)")
        let out = try daemon.recctl("export", "-o", "-")
        XCTAssertEqual(out.status, 0, out.stderr)
        XCTAssertTrue(out.stdout.contains(",'=1+2,") && out.stdout.contains(",'@SUM(A1:A9),"), out.stdout)
        XCTAssertFalse(out.stdout.contains(",=1+2,"), out.stdout)
    }

    func testListSaysWhatIsThereAndHowToSeeMore() throws {
        XCTAssertTrue(try daemon.recctl("list").stdout.contains("No recordings yet."), "the seed's empty state")
        try pulse.play(try Tones.sine())
        for t in ["A", "B", "C"] { _ = try saved(t) }
        let pending = try daemon.recctl("list", "--state", "pending")
        XCTAssertEqual(pending.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "No pending recordings.")
        let past = try daemon.recctl("list", "--offset", "10")
        XCTAssertTrue(past.stdout.contains("there are 3 in all"), past.stdout)
        XCTAssertFalse(past.stdout.contains("No recordings yet"), past.stdout)
        let page = try daemon.recctl("list", "--limit", "2")
        XCTAssertTrue(page.stdout.contains("(1–2 of 3; the next page: recctl list --offset 2 --limit 2)"), page.stdout)
        // The people's word for a saved recording is accepted, and is what the table says.
        let savedOnes = try daemon.recctl("list", "--state", "saved")
        XCTAssertEqual(savedOnes.status, 0, savedOnes.stderr)
        XCTAssertEqual(savedOnes.stdout.split(separator: "\n").filter { $0.hasSuffix("  saved") }.count, 3, savedOnes.stdout)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list", "--state", "ready").total, 3)
        let first = try XCTUnwrap(try daemon.recctlJSON(RecordingList.self, "list").recordings.first)
        let again = try daemon.recctl("save", Output8(first.id))
        XCTAssertTrue(again.stderr.contains("it is already saved"), again.stderr)
        // Counted nouns.
        let all = try daemon.recctl("delete", "--all", "--yes")
        XCTAssertTrue(all.stdout.contains("(3 recordings, 3 files)"), all.stdout)
    }

    /// Rough edges found by using recctl for an hour again (stop 33): each one as a person met it.
    func testNextPagesKeepTheirFiltersAndTextMayStartWithADash() throws {
        try pulse.play(try Tones.sine())
        for t in ["A", "B", "C"] { _ = try saved(t) }
        // The next page's command repeats the order and the filters, so it follows on from this page.
        let byPlays = try daemon.recctl("list", "--by", "plays", "--state", "saved", "--type", "audio", "--limit", "2")
        XCTAssertTrue(byPlays.stdout.contains(
            "the next page: recctl list --by plays --state saved --type audio --offset 2 --limit 2)"), byPlays.stdout)
        // Empty filtered lists read as sentences.
        XCTAssertEqual(try daemon.recctl("list", "--state", "recording").stdout.trimmingCharacters(in: .whitespacesAndNewlines),
                       "No recordings being recorded.")
        XCTAssertEqual(try daemon.recctl("list", "--state", "missing", "--type", "video").stdout
                        .trimmingCharacters(in: .whitespacesAndNewlines), "No video recordings missing their file.")
        // A title or notes may start with a dash: they are text, not options.
        let first = try XCTUnwrap(try daemon.recctlJSON(RecordingList.self, "list").recordings.first)
        let edit = try daemon.recctl("edit", Output8(first.id), "--title", "- memo", "--notes", "-- a note")
        XCTAssertEqual(edit.status, 0, edit.stderr)
        let edited = try daemon.recctlJSON(Recording.self, "show", Output8(first.id))
        XCTAssertEqual(edited.title, "- memo")
        XCTAssertEqual(edited.notes, "-- a note")
        // A value left out is still a missing value, also with a global option moved behind it.
        for args in [["--json", "edit", Output8(first.id), "--title"], ["edit", Output8(first.id), "--title", "--json"]] {
            let r = try daemon.recctl(args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stdout) \(r.stderr)")
        }
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", Output8(first.id)).title, "- memo")

        // A discard at stop names what it threw away, as `recctl discard` does.
        XCTAssertEqual(try daemon.recctl("record", "start", "--title", "Gone soon").status, 0)
        Thread.sleep(forTimeInterval: 0.3)
        let discarded = try daemon.recctl("record", "stop", "--discard")
        XCTAssertTrue(discarded.stdout.hasPrefix("Recording discarded: 'Gone soon' ("), discarded.stdout)

        // Files that cannot be sent are said as the daemon's refusals are: JSON with --json, and a
        // directory is called one.
        let dir = daemon.dir.appendingPathComponent("a-folder").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let folder = try daemon.recctl("import", dir)
        XCTAssertEqual(folder.status, 1)
        XCTAssertTrue(folder.stderr.contains("a-folder: is a directory"), folder.stderr)
        let missing = try daemon.recctl("--json", "import", dir + "/none.wav")
        XCTAssertEqual(missing.status, 1)
        let body = try JSONSerialization.jsonObject(with: missing.stdoutData) as? [String: [String: String]]
        XCTAssertEqual(body?["error"]?["code"], "local", missing.stdout)
        XCTAssertTrue(body?["error"]?["message"]?.hasSuffix("none.wav: no such file") == true, missing.stdout)
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "list").total, 3)
    }

    /// Issue 37: the title gets the room the terminal has (a 40-character title was cut in 120
    /// columns), and is cut with … only where the terminal is narrower.
    func testListGivesTheTitleTheTerminalsWidth() throws {
        let title = "Why I'm Taking a Break, what it is for.."
        XCTAssertEqual(title.count, 40)
        try insertRow(id: "BBBB0000-0000-4000-8000-000000000001", title: title)
        func list(columns: Int?) throws -> String {
            var env = daemon.environment
            env["COLUMNS"] = columns.map(String.init)
            let out = try Tools.run(Tools.recctl, ["--socket", daemon.socket, "list"], environment: env)
            XCTAssertEqual(out.status, 0, out.stderr)
            return out.stdout
        }
        let wide = try list(columns: 120)
        XCTAssertTrue(wide.contains(title), wide)
        XCTAssertTrue(wide.split(separator: "\n").allSatisfy { TerminalWidth.of(String($0)) <= 120 }, wide)
        let narrow = try list(columns: 80)
        XCTAssertFalse(narrow.contains(title), narrow)
        XCTAssertTrue(narrow.contains("Why I'm Taking") && narrow.contains("…"), narrow)
        XCTAssertTrue(narrow.split(separator: "\n").allSatisfy { TerminalWidth.of(String($0)) <= 80 }, narrow)
        XCTAssertTrue(try list(columns: nil).contains(title), "a pipe without COLUMNS: whole titles")
    }

    /// Issue 37: `top` and `list` suggest the same command for an empty library; every error has one
    /// prefix ("recctl:"), ArgumentParser's usage errors too.
    func testEmptyLibrarySuggestionsAndErrorPrefixAgree() throws {
        let list = try daemon.recctl("list").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let top = try daemon.recctl("top").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(list.hasSuffix(": recctl record") && top.hasSuffix(": recctl record"), "\(list)\n\(top)")
        for args in [["delete"], ["list", "--limit", "many"], ["show", "zzzz"]] {
            let out = try daemon.recctl(args)
            XCTAssertNotEqual(out.status, 0)
            XCTAssertTrue(out.stderr.hasPrefix("recctl: ") && !out.stderr.contains("Error:"), "\(args): \(out.stderr)")
        }
    }

    /// Issue 37: an import is dated when it was recorded (here the file's time, three days ago), and
    /// recctl says so, since it then sorts under newer takes rather than at the top of Recent.
    func testImportSaysTheDateItGot() throws {
        let old = daemon.dir.appendingPathComponent("memo.wav").path
        let fresh = daemon.dir.appendingPathComponent("fresh.wav").path
        for (file, hz) in [(old, "500"), (fresh, "700")] {
            XCTAssertEqual(try Tools.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", file, "synth", "1", "sine", hz]).status, 0)
        }
        XCTAssertEqual(try Tools.run("touch", ["-d", "3 days ago", old]).status, 0)
        // Into an empty library it is the top of Recent, dated as it is: nothing to warn of.
        let first = try daemon.recctl("import", old)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdout.contains("(when it was recorded)"), first.stdout)
        XCTAssertFalse(first.stdout.contains("not at the top"), first.stdout)
        _ = try daemon.recctl("delete", "--all", "--yes")
        // Under a newer take, recctl says where it went.
        _ = try record(seconds: 0.5, stopArgs: ["--save"])
        let out = try daemon.recctl("import", old)
        XCTAssertEqual(out.status, 0, out.stderr)
        XCTAssertTrue(out.stdout.contains("(when it was recorded): listed there in Recent, not at the top"), out.stdout)
        let now = try daemon.recctl("import", fresh)
        XCTAssertFalse(now.stdout.contains("when it was recorded"), now.stdout)
        let listed = try daemon.recctlJSON(RecordingList.self, "list").recordings.map(\.title)
        // The take (recorded last), the fresh file (made at the test's start), the three-day-old one.
        XCTAssertEqual(Array(listed.dropFirst()), ["fresh", "memo"], "Recent: newest recorded first")
    }

    func testTablesAlignByDisplayWidth() throws {
        try insertRow(id: "AAAA0000-0000-4000-8000-000000000001", title: "plain title")
        try insertRow(id: "AAAA0000-0000-4000-8000-000000000002", title: "日本語のタイトル")
        try insertRow(id: "AAAA0000-0000-4000-8000-000000000003", title: "🎉🎉 party 👍🏽")
        let out = try daemon.recctl("list")
        XCTAssertEqual(out.status, 0, out.stderr)
        // Where the CREATED column starts, in terminal columns, is the same on every line.
        let lines = out.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("(") }
        XCTAssertEqual(lines.count, 4, out.stdout)
        let starts = try lines.map { line -> Int in
            let marker = line.hasPrefix("ID") ? "CREATED" : "Oct 24, 2025"
            let range = try XCTUnwrap(line.range(of: marker), line)
            return TerminalWidth.of(String(line[..<range.lowerBound]))
        }
        XCTAssertEqual(Set(starts).count, 1, "columns: \(starts)\n\(out.stdout)")
    }

    func testSeekAsTheHelpOffersItAndPastTheEnd() throws {
        try pulse.play(try Tones.sine())
        let r = try saved("Seek me")
        XCTAssertEqual(try daemon.recctl("play", Output8(r.id)).status, 0)
        let back = try daemon.recctl("playback", "seek", "-15")
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertTrue(back.stdout.contains("0:00 /"), back.stdout)
        let end = try daemon.recctl("playback", "seek", "1:30")
        XCTAssertEqual(end.status, 0, end.stderr)
        XCTAssertFalse(end.stdout.contains("▶ playing"), end.stdout)
        XCTAssertTrue(end.stdout.contains("nothing is playing (last: 'Seek me' completed"), end.stdout)
    }

    func testErrorsNameWhatWasTypedAndSpeakJSONWithJSON() throws {
        let spaced = try daemon.recctl("show", "zz zz")
        XCTAssertTrue(spaced.stderr.contains("'zz zz'") && !spaced.stderr.contains("%20"), spaced.stderr)

        let refused = try daemon.recctl("--json", "show", "abcdef")
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(try APIJSON.decoder().decode(APIErrorBody.self, from: refused.stdoutData).error.code, .notFound)
        let usage = try daemon.recctl("--json", "lsit")
        XCTAssertEqual(usage.status, 2)
        XCTAssertTrue(usage.stdout.contains(#""code":"usage""#) && usage.stdout.contains("did you mean 'list'?"), usage.stdout)
        let mistyped = try daemon.recctl("playback", "sek")
        XCTAssertEqual(mistyped.status, 2)
        XCTAssertTrue(mistyped.stderr.contains("unknown command 'sek': did you mean 'seek'?"), mistyped.stderr)

        // A negative number is the option's value, and what is wrong with it is said (not "Missing value").
        let negative = try daemon.recctl("list", "--limit", "-1")
        XCTAssertEqual(negative.status, 1, negative.stderr)
        XCTAssertTrue(negative.stderr.contains("limit") && !negative.stderr.contains("Missing value"), negative.stderr)
        let noSocket = try Tools.run(Tools.recctl, ["--socket", "", "status"])
        XCTAssertEqual(noSocket.status, 2, noSocket.stderr)
        XCTAssertTrue(noSocket.stderr.contains("--socket needs the path"), noSocket.stderr)

        let nowhere = try Tools.run(Tools.recctl, ["--socket", daemon.dir.appendingPathComponent("none.sock").path, "--json", "status"])
        XCTAssertEqual(nowhere.status, 3)
        XCTAssertTrue(nowhere.stdout.contains(#""code":"unreachable""#), nowhere.stdout)
        let plain = try Tools.run(Tools.recctl, ["--socket", daemon.dir.appendingPathComponent("none.sock").path, "status"])
        // The tests run as root: the hint names the system unit, not `--user`.
        if getuid() == 0 { XCTAssertTrue(plain.stderr.contains("`systemctl start recd`"), plain.stderr) }
    }

    func testFilesAreNotReplacedWithoutBeingAskedAndMediaIsNamedAfterItsTitle() throws {
        try pulse.play(try Tones.sine())
        let r = try saved("Morning walk")
        let cwd = daemon.dir.appendingPathComponent("out").path
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        let first = try daemon.recctl(["media", Output8(r.id)], cwd: cwd)
        XCTAssertEqual(first.status, 0, first.stderr)
        let file = cwd + "/Morning walk.m4a"
        XCTAssertTrue(FileManager.default.fileExists(atPath: file), first.stdout)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: file))
        let second = try daemon.recctl(["media", Output8(r.id)], cwd: cwd)
        XCTAssertEqual(second.status, 1)
        XCTAssertTrue(second.stderr.contains("exists; add --force"), second.stderr)
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "mine", "left as it was")
        XCTAssertEqual(try daemon.recctl(["media", Output8(r.id), "--force"], cwd: cwd).status, 0)
        XCTAssertNotEqual(try String(contentsOfFile: file, encoding: .isoLatin1), "mine")

        let export = try daemon.recctl(["--json", "export", "-o", "e.csv"], cwd: cwd)
        let written = try JSONSerialization.jsonObject(with: export.stdoutData) as? [String: Any]
        XCTAssertTrue(written?["bytes"] is NSNumber, export.stdout)
        XCTAssertEqual(try daemon.recctl(["export", "-o", "e.csv"], cwd: cwd).status, 1, "an existing export is kept")
    }

    func testDiscardAsksLikeDeleteDoesAndWordsAreTheSameOnEveryPath() throws {
        try pulse.play(try Tones.sine())
        let stop = try record(seconds: 0.8, startArgs: ["--title", "Take"])
        let r = try XCTUnwrap(stop.recording)
        let refused = try daemon.recctl("discard", Output8(r.id))
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("add --yes"), refused.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", Output8(r.id)).state, .pending)
        let gone = try daemon.recctl("discard", Output8(r.id), "--yes")
        XCTAssertTrue(gone.stdout.hasPrefix("Recording discarded: 'Take' (\(Output8(r.id)), "), gone.stdout)

        // The same recording reads the same from start, stop and save: short id, quoted title.
        let start = try daemon.recctl("record", "start", "--title", "Again")
        let id = try XCTUnwrap(try daemon.recctlJSON(DaemonStatus.self, "status").active?.recording.id)
        XCTAssertTrue(start.stdout.hasPrefix("⏺ Recording 'Again' (\(Output8(id))) from "), start.stdout)
        Thread.sleep(forTimeInterval: 0.5)
        let stopped = try daemon.recctl("record", "stop")
        XCTAssertTrue(stopped.stdout.hasPrefix("⏹ Recording stopped: 'Again' (\(Output8(id)),"), stopped.stdout)
        XCTAssertTrue(stopped.stdout.contains("recctl save \(Output8(id))"), stopped.stdout)
        let save = try daemon.recctl("save", Output8(id))
        XCTAssertTrue(save.stdout.hasPrefix("Recording saved ✓ 'Again' (\(Output8(id)),"), save.stdout)
    }
}

/// The first 8 characters of an id, as recctl prints it.
func Output8(_ id: UUID) -> String { String(id.uuidString.prefix(8)) }

/// Terminal columns, for checking recctl's alignment independently: CJK wide and emoji pictures
/// take two, combining marks and modifiers none.
enum TerminalWidth {
    static func of(_ s: String) -> Int {
        s.reduce(0) { sum, c in
            let first = c.unicodeScalars.first!.value
            if c.unicodeScalars.first!.properties.isEmojiPresentation || c.unicodeScalars.contains("\u{FE0F}") { return sum + 2 }
            if (0x3000...0x9FFF).contains(first) || (0xFF00...0xFF60).contains(first) { return sum + 2 }
            return sum + 1
        }
    }
}

/// The API's contract where it meets HTTP (issue 13).
final class APIContractTests: DaemonTestCase {
    /// `curl -i` of one request: (status, headers lower-cased, body).
    func raw(_ method: String, _ path: String) throws -> (Int, String, String) {
        let r = try Tools.run("curl", ["-s", "-i", "--unix-socket", daemon.socket, "-X", method, "http://recd\(path)"])
        let parts = r.stdout.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? ""
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head.lowercased(), parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    func testAKnownPathWithAnotherMethodIs405WithAllow() throws {
        for (method, path, allow) in [("DELETE", "/v1/status", "allow: get"), ("PUT", "/v1/recordings/abcd", "allow: get, patch, delete"),
                                      ("POST", "/v1/recordings/abcd/media", "allow: get, head"), ("GET", "/v1/record/start", "allow: post")] {
            let (status, head, body) = try raw(method, path)
            XCTAssertEqual(status, 405, "\(method) \(path): \(head)")
            XCTAssertTrue(head.contains(allow), "\(method) \(path): \(head)")
            XCTAssertEqual(try APIJSON.decoder().decode(APIErrorBody.self, from: Data(body.utf8)).error.code, .methodNotAllowed, body)
        }
        XCTAssertEqual(try raw("GET", "/v1/no-such-thing").0, 404)
        XCTAssertEqual(try raw("GET", "/v1/recordings/abcd/nope").0, 404)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle, "nothing changed")
    }

    func testTheStopReplyOfADiscardHasEveryDeclaredKey() throws {
        try pulse.play(try Tones.sine())
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 0.5)
        let (status, body) = try daemon.curl("POST", "/v1/record/stop", body: #"{"then": "discard"}"#)
        XCTAssertEqual(status, 200, body)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertTrue(object["recording"] is NSNull, body)
        XCTAssertEqual(object["discarded"] as? Bool, true)
    }
}
