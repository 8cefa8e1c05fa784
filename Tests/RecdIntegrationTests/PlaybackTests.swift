// Playback end to end: the real recd plays through the ALSA pulse plugin into a paced PulseAudio
// null sink, and what it played is recorded from the sink's monitor and compared with the file.
import Foundation
import RecdAPI
import XCTest

/// Media files made by the ffmpeg CLI (independent of recd's own encoder).
enum TestMedia {
    /// 2 s of 440 Hz then 2 s of 880 Hz, amplitude 0.5, AAC in MP4: where playback is in the file
    /// can be told by ear.
    static func twoTones() throws -> String {
        let path = NSTemporaryDirectory() + "recd-two-tones.m4a"
        if FileManager.default.fileExists(atPath: path) { return path }
        let tmp = path + ".\(getpid()).tmp.m4a"
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-y",
                                         "-f", "lavfi", "-i", "sine=frequency=440:duration=2:sample_rate=48000",
                                         "-f", "lavfi", "-i", "sine=frequency=880:duration=2:sample_rate=48000",
                                         "-filter_complex", "[0][1]concat=n=2:v=0:a=1,volume=4",
                                         "-ac", "1", "-c:a", "aac", "-b:a", "128k", tmp])
        guard r.status == 0 else { throw NSError(domain: "recd-tests", code: 8, userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
        try? FileManager.default.moveItem(atPath: tmp, toPath: path)
        return path
    }
}

class PlaybackTestCase: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "pulse:speaker"] }

    /// Puts `media` into Recordings/, lets `check --repair` adopt it (pending), and saves it unless
    /// `save` is false.
    func addRecording(_ media: String, title: String, save: Bool = true) throws -> Recording {
        let dest = daemon.dataDir.appendingPathComponent("Recordings/audio_\(UUID().uuidString).m4a")
        try FileManager.default.copyItem(atPath: media, toPath: dest.path)
        // Adoption dates a file by its mtime: now, so recordings added one after another are in order.
        Thread.sleep(forTimeInterval: 0.01)
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: dest.path)
        let report = try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair")
        let id = try XCTUnwrap(report.repaired?.adopted.first, "the file was not adopted")
        if save { return try daemon.recctlJSON(Recording.self, "save", id.uuidString, "--title", title) }
        return try daemon.recctlJSON(Recording.self, "edit", id.uuidString, "--title", title)
    }

    func show(_ r: Recording) throws -> Recording { try daemon.recctlJSON(Recording.self, "show", r.id.uuidString) }

    func playback() throws -> PlaybackStatus { try daemon.recctlJSON(PlaybackStatus.self, "playback") }

    /// Polls until the playback's position reaches `seconds` (fails after `timeout`).
    func waitForPosition(_ seconds: Double, timeout: Double = 5) throws -> PlaybackInfo {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let p = try playback().playback, p.position >= seconds { return p }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("playback did not reach \(seconds) s")
        throw NSError(domain: "recd-tests", code: 9)
    }

    /// Polls until nothing plays; returns how the last playback ended.
    func waitForEnd(timeout: Double = 10) throws -> PlaybackEnded {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let s = try playback()
            if s.playback == nil, let e = s.lastEnded { return e }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTFail("playback did not end")
        throw NSError(domain: "recd-tests", code: 10)
    }
}

final class PlaybackTests: PlaybackTestCase {
    func testPlayedAudioMatchesTheRecordingAndCountsOnce() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Remember Your Goals")
        XCTAssertEqual(r.playCount, 0)
        let monitor = try SpeakerMonitor(pulse)
        let played = try daemon.recctl("--json", "play", r.id.uuidString, "--wait")
        XCTAssertEqual(played.status, 0, played.stderr)
        // --json --wait: the play reply, then how it ended.
        let lines = played.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, played.stdout)
        let reply = try APIJSON.decoder().decode(PlayResponse.self, from: Data(lines[0].utf8))
        let ended = try APIJSON.decoder().decode(PlaybackEnded.self, from: Data(lines[1].utf8))
        Thread.sleep(forTimeInterval: 0.3)
        let heard = try monitor.stop()

        XCTAssertTrue(reply.playback.counts)
        XCTAssertEqual(reply.playback.device, "pulse:speaker")
        XCTAssertGreaterThan(reply.startLatencyMs, 0)
        XCTAssertLessThan(reply.startLatencyMs, 2000)
        XCTAssertEqual(ended.reason, .completed)
        XCTAssertTrue(ended.counted)
        XCTAssertEqual(ended.position, 4.0, accuracy: 0.05)

        // What came out of the sink: one span of sound, as long as the file, 440 Hz then 880 Hz, at the file's level.
        let spans = heard.sounding()
        XCTAssertEqual(spans.count, 1, "sound spans: \(spans)")
        let span = try XCTUnwrap(spans.first)
        XCTAssertEqual(span.upperBound - span.lowerBound, 4.0, accuracy: 0.1, "duration heard")
        let first = heard.tone(from: span.lowerBound + 0.2, to: span.lowerBound + 1.8)
        let second = heard.tone(from: span.lowerBound + 2.2, to: span.upperBound - 0.2)
        XCTAssertEqual(first.frequency, 440, accuracy: 5)
        XCTAssertEqual(second.frequency, 880, accuracy: 5)
        let file = try AudioAnalysis.of(daemon.path(of: r))
        XCTAssertEqual(first.rms, file.rms, accuracy: file.rms * 0.1, "level heard vs level in the file")
        XCTAssertEqual(first.rms, 0.5 / 2.0.squareRoot(), accuracy: 0.04)

        let after = try show(r)
        XCTAssertEqual(after.playCount, 1)
        XCTAssertNotNil(after.lastPlayedAt)
    }

    func testPauseHoldsThePositionResumeContinuesAndSeekMoves() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Transport")
        let monitor = try SpeakerMonitor(pulse)
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        _ = try waitForPosition(0.8)
        let paused = try daemon.recctlJSON(PlaybackStatus.self, "playback", "pause")
        let p1 = try XCTUnwrap(paused.playback)
        XCTAssertEqual(p1.state, .paused)
        XCTAssertEqual(p1.position, 0.9, accuracy: 0.3)
        Thread.sleep(forTimeInterval: 1.0)
        let still = try XCTUnwrap(try playback().playback)
        XCTAssertEqual(still.state, .paused)
        XCTAssertEqual(still.position, p1.position, accuracy: 0.001, "a paused playback does not move")
        // Pausing again is harmless; the position stays.
        XCTAssertEqual(try daemon.recctlJSON(PlaybackStatus.self, "playback", "pause").playback?.position ?? -1, p1.position, accuracy: 0.001)

        let resumed = try XCTUnwrap(try daemon.recctlJSON(PlaybackStatus.self, "playback", "resume").playback)
        XCTAssertEqual(resumed.state, .playing)
        Thread.sleep(forTimeInterval: 0.5)
        // Seek to 3.0 s (into the 880 Hz half), then back by 1 s: both land where asked.
        let moved = try XCTUnwrap(try daemon.recctlJSON(PlaybackStatus.self, "playback", "seek", "0:03").playback)
        XCTAssertEqual(moved.position, 3.0, accuracy: 0.15)
        let back = try XCTUnwrap(try daemon.recctlJSON(PlaybackStatus.self, "playback", "seek", "--", "-1").playback)
        XCTAssertEqual(back.position, 2.0, accuracy: 0.2)
        let ended = try waitForEnd()
        XCTAssertEqual(ended.reason, .completed)
        Thread.sleep(forTimeInterval: 0.3)
        let heard = try monitor.stop()

        // Heard: ~0.9 s, then the pause as silence, then sound again.
        let spans = heard.sounding(gap: 0.3)
        XCTAssertGreaterThanOrEqual(spans.count, 2, "sound spans: \(spans)")
        if spans.count >= 2 {
            XCTAssertEqual(spans[0].upperBound - spans[0].lowerBound, p1.position, accuracy: 0.15, "heard before the pause")
            XCTAssertGreaterThan(spans[1].lowerBound - spans[0].upperBound, 0.8, "silence while paused")
            XCTAssertEqual(heard.tone(from: spans[0].lowerBound + 0.1, to: spans[0].upperBound - 0.1).frequency, 440, accuracy: 8)
            // The end of the playback is the 880 Hz half (after the seeks).
            let last = spans[spans.count - 1]
            XCTAssertEqual(heard.tone(from: last.upperBound - 0.9, to: last.upperBound - 0.1).frequency, 880, accuracy: 8)
        }
        // One session: one play, however often it was paused and moved.
        XCTAssertEqual(try show(r).playCount, 1)
    }

    func testSeekClampsAtBothEnds() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Clamp")
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        XCTAssertEqual(try daemon.recctl("playback", "pause").status, 0)
        let start = try XCTUnwrap(try daemon.recctlJSON(PlaybackStatus.self, "playback", "seek", "--", "-15").playback)
        XCTAssertEqual(start.position, 0, accuracy: 0.001)
        XCTAssertEqual(start.state, .paused, "a seek keeps a paused playback paused")
        let end = try XCTUnwrap(try daemon.recctlJSON(PlaybackStatus.self, "playback", "seek", "1:00").playback)
        XCTAssertEqual(end.position, 4.0, accuracy: 0.05)
        // Resumed at the end: it completes (and counts).
        XCTAssertEqual(try daemon.recctl("playback", "resume").status, 0)
        let ended = try waitForEnd()
        XCTAssertEqual(ended.reason, .completed)
        XCTAssertEqual(try show(r).playCount, 1)
    }

    func testPreviewOfAPendingRecordingNeverCounts() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Preview", save: false)
        XCTAssertEqual(r.state, .pending)
        let reply = try daemon.recctlJSON(PlayResponse.self, "play", r.id.uuidString)
        XCTAssertFalse(reply.playback.counts)
        XCTAssertEqual(try daemon.recctl("playback", "stop").status, 0)
        let played = try daemon.recctl("play", r.id.uuidString, "--wait")
        XCTAssertEqual(played.status, 0, played.stderr)
        XCTAssertTrue(played.stdout.contains("preview"), played.stdout)
        XCTAssertEqual(try playback().lastEnded?.counted, false)
        // `played` (a GUI's playback) of a pending recording is refused too.
        let gui = try daemon.recctl("played", r.id.uuidString)
        XCTAssertEqual(gui.status, 1)
        XCTAssertTrue(gui.stderr.contains("pending"), gui.stderr)
        let saved = try daemon.recctlJSON(Recording.self, "save", r.id.uuidString)
        XCTAssertEqual(saved.playCount, 0, "replaying before saving leaves playCount at 0 (seed 5.3)")
        XCTAssertNil(saved.lastPlayedAt)
    }

    func testStoppedAndReplacedPlaybacksCountOnceEach() throws {
        let a = try addRecording(try TestMedia.twoTones(), title: "A")
        let b = try addRecording(try TestMedia.twoTones(), title: "B")
        XCTAssertEqual(try daemon.recctl("play", a.id.uuidString).status, 0)
        let second = try daemon.recctlJSON(PlayResponse.self, "play", b.id.uuidString)
        XCTAssertEqual(second.replaced?.recordingID, a.id)
        XCTAssertEqual(second.replaced?.reason, .replaced)
        XCTAssertEqual(second.replaced?.counted, true)
        let stopped = try daemon.recctlJSON(PlaybackStatus.self, "playback", "stop")
        XCTAssertNil(stopped.playback)
        XCTAssertEqual(stopped.lastEnded?.reason, .stopped)
        XCTAssertEqual(try show(a).playCount, 1)
        XCTAssertEqual(try show(b).playCount, 1)
        // Nothing plays now: transport controls are a clear error and change nothing.
        for args in [["playback", "pause"], ["playback", "resume"], ["playback", "seek", "+15"], ["playback", "stop"]] {
            let r = try daemon.recctl(args)
            XCTAssertEqual(r.status, 1, "\(args)")
            XCTAssertTrue(r.stderr.contains("nothing is playing"), r.stderr)
        }
        let (code, body) = try daemon.curl("POST", "/v1/playback/pause")
        XCTAssertEqual(code, 409)
        XCTAssertTrue(body.contains("not_playing"), body)
        XCTAssertEqual(try show(a).playCount, 1)
    }

    func testCtrlCOnPlayWaitStopsThePlaybackAndCounts() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Interrupted")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tools.recctl)
        p.arguments = ["--socket", daemon.socket, "play", r.id.uuidString, "--wait"]
        p.environment = daemon.environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        _ = try waitForPosition(0.5)
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 130)
        let s = try playback()
        XCTAssertNil(s.playback)
        XCTAssertEqual(s.lastEnded?.reason, .stopped)
        XCTAssertEqual(try show(r).playCount, 1)
    }

    func testSIGTERMDuringPlaybackCountsItOnceAndExitsCleanly() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Shut down")
        let listener = try EventListener(daemon, types: [.playbackStarted])
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        _ = try waitForPosition(0.3)
        let process = try XCTUnwrap(daemon.process)
        let stoppingAt = Date()
        daemon.stop()   // SIGTERM
        XCTAssertLessThan(Date().timeIntervalSince(stoppingAt), 5, "recd exits within 5 s")
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.socket), "the socket file is removed")
        XCTAssertEqual(try listener.events().map(\.type), [.playbackStarted], "the event stream ended at shutdown")
        try daemon.start()
        XCTAssertEqual(try show(r).playCount, 1)
        XCTAssertTrue(daemon.log.contains("shutdown at"), daemon.log)
    }

    func testDeletingTheRecordingThatPlaysStopsItWithoutCounting() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Going away")
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        _ = try waitForPosition(0.3)
        let deleted = try daemon.recctl("delete", "--yes", r.id.uuidString)
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        let s = try playback()
        XCTAssertNil(s.playback)
        XCTAssertEqual(s.lastEnded?.reason, .deleted)
        XCTAssertEqual(s.lastEnded?.counted, false)
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.path(of: r)))
        XCTAssertEqual(try daemon.recctl("show", r.id.uuidString).status, 1)
    }

    func testPlayErrorsChangeNothing() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Errors")
        // Unknown id.
        let unknown = try daemon.recctl("play", "0000dead")
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no recording"), unknown.stderr)
        XCTAssertEqual(try daemon.curl("POST", "/v1/recordings/\(UUID().uuidString)/play").0, 404)
        XCTAssertEqual(try daemon.curl("POST", "/v1/recordings/\(UUID().uuidString)/played").0, 404)
        // Bad bodies.
        XCTAssertEqual(try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/play", body: "{\"position\": \"x\"}").0, 400)
        XCTAssertEqual(try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/play", body: "{\"position\": -1}").0, 422)
        // Past the end nothing would be heard, yet it would count: refused, and not counted.
        let past = try daemon.recctl("play", r.id.uuidString, "--from", "10:00")
        XCTAssertEqual(past.status, 1, past.stderr)
        XCTAssertTrue(past.stderr.contains("600.0 is past the end of the recording"), past.stderr)
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString, "--from", "soon").status, 2)
        XCTAssertEqual(try daemon.recctl("playback", "seek", "1:75").status, 2)
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        let (both, bothBody) = try daemon.curl("POST", "/v1/playback/seek", body: "{\"by\": 1, \"to\": 2}")
        XCTAssertEqual(both, 422, bothBody)
        XCTAssertEqual(try daemon.curl("POST", "/v1/playback/seek", body: "{\"by\": ").0, 400)
        XCTAssertEqual(try daemon.recctl("playback", "stop").status, 0)
        XCTAssertEqual(try show(r).playCount, 1)

        // The file is gone (behind recd's back): a clear error naming it, and no count.
        try FileManager.default.removeItem(atPath: daemon.path(of: r))
        let missing = try daemon.recctl("play", r.id.uuidString)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains(r.file) && missing.stderr.contains("missing"), missing.stderr)
        let (code, body) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/play")
        XCTAssertEqual(code, 410)
        XCTAssertTrue(body.contains("file_missing"), body)
        XCTAssertEqual(try show(r).playCount, 1)
        XCTAssertNil(try playback().playback)
    }
}

final class PlaybackDeviceTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--playback-device", "hw:CARD=NoSuchCard"] }

    func testMissingPlaybackDeviceIs503WithItsName() throws {
        let dest = daemon.dataDir.appendingPathComponent("Recordings/audio_\(UUID().uuidString).m4a")
        try FileManager.default.copyItem(atPath: try TestMedia.twoTones(), toPath: dest.path)
        let report = try daemon.recctlJSON(ConsistencyReport.self, "check", "--repair")
        let id = try XCTUnwrap(report.repaired?.adopted.first)
        _ = try daemon.recctlJSON(Recording.self, "save", id.uuidString)
        let (code, body) = try daemon.curl("POST", "/v1/recordings/\(id.uuidString)/play")
        XCTAssertEqual(code, 503, body)
        XCTAssertTrue(body.contains("device_unavailable") && body.contains("hw:CARD=NoSuchCard"), body)
        let r = try daemon.recctl("play", id.uuidString)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("hw:CARD=NoSuchCard"), r.stderr)
        XCTAssertEqual(try daemon.recctlJSON(Recording.self, "show", id.uuidString).playCount, 0)
        XCTAssertNil(try daemon.recctlJSON(PlaybackStatus.self, "playback").playback)
    }
}
