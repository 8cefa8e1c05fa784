// Play counts from other players (`played`), Quick Play (`top`), the listing by plays, and the
// media endpoint other players read through.
import Foundation
import RecdAPI
import XCTest

final class PlayCountTests: PlaybackTestCase {
    func testConcurrentPlayedRequestsAreAllCounted() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Concurrency")
        // 32 clients (curl processes, each on its own keep-alive connection), 500 `played` each.
        let config = daemon.dir.appendingPathComponent("played.curlrc")
        let entry = "url = \"http://recd/v1/recordings/\(r.id.uuidString)/played\"\noutput = \"/dev/null\"\n"
        try String(repeating: entry, count: 500).write(to: config, atomically: true, encoding: .utf8)
        let clients = (0..<32).map { i -> (Process, URL) in
            let out = daemon.dir.appendingPathComponent("codes-\(i)")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Tools.which("curl") ?? "/usr/bin/curl")
            p.arguments = ["-s", "--unix-socket", daemon.socket, "-X", "POST", "-K", config.path, "-w", "%{http_code}\n"]
            p.standardOutput = try? FileHandle(forWritingTo: out)
            p.standardError = FileHandle.nullDevice
            return (p, out)
        }
        for (p, _) in clients { try p.run() }
        for (p, _) in clients { p.waitUntilExit() }
        var codes: [String: Int] = [:]
        for (_, out) in clients {
            for line in try String(contentsOf: out, encoding: .utf8).split(separator: "\n") { codes[String(line), default: 0] += 1 }
        }
        XCTAssertEqual(codes, ["200": 16_000])
        let after = try show(r)
        XCTAssertEqual(after.playCount, 16_000)
        XCTAssertNotNil(after.lastPlayedAt)
    }

    func testTopAndListByPlaysFollowTheSeedsOrder() throws {
        let media = try TestMedia.twoTones()
        // Created in this order (newest last); plays 2, 5, 2, 0; one more pending with the most "plays" asked.
        let a = try addRecording(media, title: "A")
        let b = try addRecording(media, title: "B")
        let c = try addRecording(media, title: "C")
        let d = try addRecording(media, title: "D")
        let pending = try addRecording(media, title: "Pending", save: false)
        for (r, n) in [(a, 2), (b, 5), (c, 2)] {
            for _ in 0..<n { XCTAssertEqual(try daemon.recctl("played", r.id.uuidString).status, 0) }
        }
        XCTAssertEqual(try daemon.recctl("played", pending.id.uuidString).status, 1)

        let top = try daemon.recctlJSON(RecordingList.self, "top")
        // Count descending, ties newest first; pending never in Quick Play.
        XCTAssertEqual(top.recordings.map(\.title), ["B", "C", "A"])
        XCTAssertEqual(try daemon.recctlJSON(RecordingList.self, "top", "10").recordings.map(\.title), ["B", "C", "A", "D"])
        let text = try daemon.recctl("top")
        XCTAssertTrue(text.stdout.hasPrefix("Quick Play:"), text.stdout)

        let byPlays = try daemon.recctlJSON(RecordingList.self, "list", "--by", "plays")
        XCTAssertEqual(byPlays.recordings.map(\.title), ["B", "C", "A", "Pending", "D"])
        XCTAssertEqual(byPlays.recordings.map(\.playCount), [5, 2, 2, 0, 0])
        XCTAssertEqual(try daemon.recctl("top", "0").status, 1)
        XCTAssertEqual(try daemon.curl("GET", "/v1/top?limit=x").0, 400)
        _ = d
    }

    func testMediaEndpointServesTheFileWithRangesAndDoesNotCount() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Media")
        let original = try Data(contentsOf: URL(fileURLWithPath: daemon.path(of: r)))
        let out = daemon.dir.appendingPathComponent("copy.m4a")

        // recctl media: the whole file, byte for byte, under the name asked for.
        let copied = try daemon.recctl("media", r.id.uuidString, "-o", out.path)
        XCTAssertEqual(copied.status, 0, copied.stderr)
        XCTAssertEqual(try Data(contentsOf: out), original)
        XCTAssertEqual(try Probe.audio(out.path).codec, "aac")

        // A range, as players ask for them.
        let part = daemon.dir.appendingPathComponent("part")
        let headers = daemon.dir.appendingPathComponent("headers")
        let ranged = try Tools.run("curl", ["-s", "--unix-socket", daemon.socket, "-r", "100-1099", "-D", headers.path,
                                            "-o", part.path, "http://recd/v1/recordings/\(r.id.uuidString)/media"])
        XCTAssertEqual(ranged.status, 0)
        let head = try String(contentsOf: headers, encoding: .utf8).lowercased()
        XCTAssertTrue(head.hasPrefix("http/1.1 206"), head)
        XCTAssertTrue(head.contains("content-range: bytes 100-1099/\(original.count)"), head)
        XCTAssertTrue(head.contains("content-type: audio/mp4"), head)
        XCTAssertTrue(head.contains("accept-ranges: bytes"), head)
        XCTAssertEqual(try Data(contentsOf: part), original.subdata(in: 100..<1100))
        // The last bytes (suffix range), and a range past the end.
        _ = try Tools.run("curl", ["-s", "--unix-socket", daemon.socket, "-r", "-10", "-o", part.path,
                                   "http://recd/v1/recordings/\(r.id.uuidString)/media"])
        XCTAssertEqual(try Data(contentsOf: part), original.suffix(10))
        let past = try Tools.run("curl", ["-s", "--unix-socket", daemon.socket, "-r", "\(original.count)-", "-o", "/dev/null",
                                          "-w", "%{http_code}", "http://recd/v1/recordings/\(r.id.uuidString)/media"])
        XCTAssertEqual(past.stdout, "416")
        // HEAD: the size, no body.
        let h = try Tools.run("curl", ["-s", "-I", "--unix-socket", daemon.socket, "http://recd/v1/recordings/\(r.id.uuidString)/media"])
        XCTAssertTrue(h.stdout.lowercased().contains("content-length: \(original.count)"), h.stdout)

        // download=true: the same bytes, as an attachment named after the title (RFC 6266 / 8187).
        let titled = try daemon.recctlJSON(Recording.self, "edit", r.id.uuidString, "--title", "Café / notes")
        XCTAssertEqual(titled.title, "Café / notes")
        let saved = daemon.dir.appendingPathComponent("saved")
        let download = try Tools.run("curl", ["-s", "--unix-socket", daemon.socket, "-D", headers.path, "-o", saved.path,
                                              "http://recd/v1/recordings/\(r.id.uuidString)/media?download=true"])
        XCTAssertEqual(download.status, 0)
        let attached = try String(contentsOf: headers, encoding: .utf8)
        XCTAssertTrue(attached.contains("Content-Disposition: attachment; filename=\"Caf_ - notes.m4a\"; filename*=UTF-8''Caf%C3%A9%20-%20notes.m4a"),
                      attached)
        XCTAssertEqual(try Data(contentsOf: saved), original)
        let plain = try Tools.run("curl", ["-s", "-D", "-", "-o", "/dev/null", "--unix-socket", daemon.socket,
                                           "http://recd/v1/recordings/\(r.id.uuidString)/media?download=false"])
        XCTAssertFalse(plain.stdout.lowercased().contains("content-disposition"), plain.stdout)
        let (badStatus, badBody) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/media?download=yes")
        XCTAssertEqual(badStatus, 400, badBody)
        XCTAssertTrue(badBody.contains("download=yes"), badBody)

        // Reading the media is not a play.
        XCTAssertEqual(try show(r).playCount, 0)
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(UUID().uuidString)/media").0, 404)
        XCTAssertEqual(try daemon.recctl("media", "0000dead", "-o", out.path).status, 1)
        // An output place that cannot be written: a clear error, and no partial file left.
        let unwritable = try daemon.recctl("media", r.id.uuidString, "-o", "/nonexistent-dir/copy.m4a")
        XCTAssertEqual(unwritable.status, 1)
        XCTAssertTrue(unwritable.stderr.contains("cannot write /nonexistent-dir/copy.m4a"), unwritable.stderr)
        try FileManager.default.removeItem(atPath: daemon.path(of: r))
        XCTAssertEqual(try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/media").0, 410)
    }

    func testRecctlWaveformDrawsWritesSVGAndData() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Drawn")
        let drawn = try daemon.recctl("waveform", r.id.uuidString, "--width", "60", "--rows", "4")
        XCTAssertEqual(drawn.status, 0, drawn.stderr)
        let lines = drawn.stdout.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        XCTAssertEqual(lines.first.map(String.init), "Drawn (0:04)")
        XCTAssertEqual(lines.count, 5, drawn.stdout)
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.count <= 60 }, drawn.stdout)
        // A tone at half scale: the inner rows are full, the outer ones are not.
        XCTAssertTrue(lines[2].contains("█"), drawn.stdout)
        XCTAssertFalse(lines[1].contains("█"), drawn.stdout)

        let svg = daemon.dir.appendingPathComponent("w.svg")
        XCTAssertEqual(try daemon.recctl("waveform", r.id.uuidString, "--svg", svg.path).status, 0)
        let doc = try String(contentsOf: svg, encoding: .utf8)
        XCTAssertTrue(doc.hasPrefix("<?xml") && doc.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""), doc)
        XCTAssertEqual(doc.components(separatedBy: "<path ").count - 1, 1)
        XCTAssertTrue(doc.contains("<title>Drawn</title>"))

        let dat = daemon.dir.appendingPathComponent("w.dat")
        XCTAssertEqual(try daemon.recctl("waveform", r.id.uuidString, "--format", "dat", "--bits", "16", "-o", dat.path).status, 0)
        let bytes = [UInt8](try Data(contentsOf: dat))
        XCTAssertEqual(Array(bytes[0..<8]), [2, 0, 0, 0, 0, 0, 0, 0], "version 2, 16-bit")
        XCTAssertEqual(try daemon.recctl("waveform", r.id.uuidString, "--format", "png", "-o", dat.path).status, 2)
        XCTAssertEqual(try daemon.recctl("waveform", "0000dead").status, 1)
    }
}
