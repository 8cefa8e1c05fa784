// Pause and resume of a recording (issue 14), through the real daemon on the PulseAudio rig: one
// continuous file, no gap, click or time jump at the join, pauses not counted, meters quiet while
// paused, refusals, and what a kill -9 while paused keeps.
import Foundation
import RecdAPI
import XCTest

final class PauseTests: DaemonTestCase {
    /// Decoded samples of a file (ffmpeg CLI, 48 kHz mono S16), as floats in [-1, 1).
    func decode(_ path: String) throws -> [Float] {
        let raw = NSTemporaryDirectory() + "recd-pause-\(UUID().uuidString).raw"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let r = try Tools.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-ac", "1", "-ar", "48000", "-f", "s16le", "-y", raw])
        XCTAssertEqual(r.status, 0, r.stderr)
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { $0.bindMemory(to: Int16.self).map { Float($0) / 32768 } }
    }

    /// Packet timestamps of the first audio stream: (pts, duration) in the stream's time base.
    func packets(_ path: String) throws -> [(pts: Int, duration: Int)] {
        let r = try Tools.run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts,duration",
                                          "-of", "csv=p=0", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",").compactMap { Int($0) }
            return f.count == 2 ? (f[0], f[1]) : nil
        }
    }

    func testPauseAndResumeMakeOneContinuousFileWithoutTheSoundWhilePaused() throws {
        // 997 Hz at half scale: its steepest step between samples is 2π·997/48000·0.5 ≈ 0.065; a cut
        // between two unrelated points of the wave jumps up to 1.0 (997: no whole number of periods
        // fits a device period, so the pause and the resume fall at unrelated phases).
        try pulse.play(try Tones.sine(frequency: 997, amplitude: 0.5))
        let listener = try EventListener(daemon, types: [.meter, .recordingPaused, .recordingResumed])
        let startAsked = Date()
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start", "--title", "Paused take")
        let id = start.recording.id
        Thread.sleep(forTimeInterval: 1.5)

        let paused = try daemon.recctl("record", "pause")
        XCTAssertEqual(paused.status, 0, paused.stderr)
        XCTAssertTrue(paused.stdout.contains("Paused at 0:01"), paused.stdout)
        let pausedAt = Date()
        // Status says paused and for how long; the recorded time stands still.
        Thread.sleep(forTimeInterval: 0.5)
        let s1 = try XCTUnwrap(try daemon.recctlJSON(DaemonStatus.self, "status").active)
        Thread.sleep(forTimeInterval: 0.5)
        let s2 = try XCTUnwrap(try daemon.recctlJSON(DaemonStatus.self, "status").active)
        XCTAssertTrue(s1.paused && s2.paused)
        XCTAssertEqual(s1.elapsed ?? -1, s2.elapsed ?? -2, accuracy: 0.001, "elapsed moved while paused")
        XCTAssertGreaterThan(try XCTUnwrap(s2.pausedFor), try XCTUnwrap(s1.pausedFor) + 0.4)
        XCTAssertTrue(try daemon.recctl("status").stdout.contains("⏸ paused 'Paused take'"))
        // Pausing again changes nothing and says so.
        let again = try daemon.recctl("record", "pause")
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("Already paused"), again.stdout)
        Thread.sleep(forTimeInterval: 0.3)

        let resumeAsked = Date()
        let resumed = try daemon.recctlJSON(RecordingPauseState.self, "record", "resume")
        let resumeReplied = Date()
        let pauseLasted = resumeReplied.timeIntervalSince(pausedAt)
        XCTAssertFalse(resumed.paused)
        XCTAssertEqual(try XCTUnwrap(resumed.pausedFor), pauseLasted, accuracy: 0.2)
        XCTAssertEqual(resumed.pausedTotal, resumed.pausedFor ?? 0, accuracy: 0.001)
        Thread.sleep(forTimeInterval: 1.5)
        let stopAsked = Date()
        let stop = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop", "--save")
        let stopReplied = Date()
        let r = try XCTUnwrap(stop.recording)
        listener.stop()

        // The file holds the time recorded, not the time taken: about 3 s of the 4.3 s. Bounded by
        // the requests' own times (a loaded machine stretches the sleeps and recctl's starts).
        let duration = try XCTUnwrap(r.duration)
        XCTAssertLessThan(duration, stopReplied.timeIntervalSince(startAsked) - 1.0, "duration \(duration) should leave the pause (1.3 s at least) out")
        XCTAssertGreaterThan(duration, resumed.elapsed + stopAsked.timeIntervalSince(resumeReplied) - 0.25)
        XCTAssertLessThan(duration, resumed.elapsed + stopReplied.timeIntervalSince(resumeAsked) + 0.25)
        let samples = try decode(daemon.path(of: r))
        XCTAssertEqual(Double(samples.count) / 48000, duration, accuracy: 0.05)
        // No gap: the tone never stops for longer than the two 5 ms fades at the join.
        var quiet = 0, longestQuiet = 0
        for block in stride(from: 4800, to: samples.count - 4800, by: 48) {   // 1 ms blocks
            let peak = samples[block..<(block + 48)].map(abs).max() ?? 0
            quiet = peak < 0.1 ? quiet + 1 : 0
            longestQuiet = max(longestQuiet, quiet)
        }
        XCTAssertLessThanOrEqual(longestQuiet, 12, "a silence of \(longestQuiet) ms in a paused-and-resumed tone")
        // No click: no step between samples steeper than the tone's own (with room for the codec).
        var steepest: Float = 0, at = 0
        for i in 4801..<(samples.count - 4800) where abs(samples[i] - samples[i - 1]) > steepest {
            steepest = abs(samples[i] - samples[i - 1]); at = i
        }
        XCTAssertLessThan(steepest, 0.13, "a step of \(steepest) at \(Double(at) / 48000) s: the join clicks")
        // And the join is where the pause was: the fade's dip sits at the time recorded before it.
        var dip = 0, dipPeak: Float = 1
        for block in stride(from: 4800, to: samples.count - 4800, by: 48) {
            let peak = samples[block..<(block + 48)].map(abs).max() ?? 0
            if peak < dipPeak { dipPeak = peak; dip = block }
        }
        XCTAssertEqual(Double(dip) / 48000, resumed.elapsed, accuracy: 0.15, "the join is not at the pause")
        // No timestamp jump: each packet starts where the one before ended.
        let p = try packets(daemon.path(of: r))
        XCTAssertGreaterThan(p.count, 100)
        for k in 1..<p.count {
            XCTAssertEqual(p[k].pts, p[k - 1].pts + p[k - 1].duration, "packet \(k) jumps")
            if p[k].pts != p[k - 1].pts + p[k - 1].duration { break }
        }

        // Events: one paused and one resumed, with the times; no meter of this recording between them.
        let events = try listener.events()
        let pauseEvents = events.compactMap { e -> RecordingPauseState? in
            if case .recordingPaused(let p) = e.payload { return p }; return nil
        }
        let resumeEvents = events.compactMap { e -> RecordingPauseState? in
            if case .recordingResumed(let p) = e.payload { return p }; return nil
        }
        XCTAssertEqual(pauseEvents.count, 1, "pausing twice told once")
        XCTAssertEqual(resumeEvents.count, 1)
        XCTAssertEqual(pauseEvents.first?.recordingID, id)
        XCTAssertEqual(resumeEvents.first?.pausedFor ?? 0, pauseLasted, accuracy: 0.2)
        let pausedSeq = try XCTUnwrap(events.first { $0.type == .recordingPaused }?.seq)
        let resumedSeq = try XCTUnwrap(events.first { $0.type == .recordingResumed }?.seq)
        let metersWhilePaused = events.filter { e in
            guard case .meter(let m) = e.payload, m.recordingID == id else { return false }
            return e.seq > pausedSeq + 2 && e.seq < resumedSeq   // (one period may still be on its way)
        }
        XCTAssertEqual(metersWhilePaused.count, 0, "meters went on while paused")
        XCTAssertGreaterThan(events.filter { $0.type == .meter && $0.seq > resumedSeq }.count, 5, "meters did not come back")

        // The stored waveform is of the file: its length matches the duration.
        let (wfStatus, wf) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/waveform")
        XCTAssertEqual(wfStatus, 200, wf)
        let waveform = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(wf.utf8)) as? [String: Any])
        let length = try XCTUnwrap(waveform["length"] as? Int), spp = try XCTUnwrap(waveform["samples_per_pixel"] as? Int)
        XCTAssertEqual(Double(length * spp) / 48000, duration, accuracy: 0.05)
    }

    func testPauseAndResumeAreRefusedWhenNothingIsRecording() throws {
        for command in ["pause", "resume"] {
            let (status, body) = try daemon.curl("POST", "/v1/record/\(command)")
            XCTAssertEqual(status, 409, body)
            XCTAssertTrue(body.contains("not_recording"), body)
            let r = try daemon.recctl("record", command)
            XCTAssertEqual(r.status, 1)
            XCTAssertTrue(r.stderr.lowercased().contains("nothing is being recorded"), r.stderr)
        }
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
    }

    /// Stopped while paused: the take ends where the pause began.
    func testStopWhilePausedKeepsWhatCameBeforeThePause() throws {
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        XCTAssertEqual(try daemon.recctl("record", "start").status, 0)
        Thread.sleep(forTimeInterval: 1.2)
        let paused = try daemon.recctlJSON(RecordingPauseState.self, "record", "pause")
        Thread.sleep(forTimeInterval: 1.0)
        let stop = try daemon.recctlJSON(StopRecordingResponse.self, "record", "stop")
        let duration = try XCTUnwrap(stop.recording?.duration)
        XCTAssertEqual(duration, paused.elapsed, accuracy: 0.15)
        let decoded = try AudioAnalysis.of(daemon.path(of: try XCTUnwrap(stop.recording)))
        XCTAssertEqual(decoded.frequency, 1000, accuracy: 20)
    }

    /// A kill -9 while paused keeps everything recorded before the pause (the open fragment was
    /// written at the pause), less what the AAC encoder still held (its delay, under 50 ms).
    func testKill9WhilePausedKeepsWhatCameBeforeThePause() throws {
        try pulse.play(try Tones.sine(frequency: 1000, amplitude: 0.5))
        let start = try daemon.recctlJSON(StartRecordingResponse.self, "record", "start")
        Thread.sleep(forTimeInterval: 2.6)
        let paused = try daemon.recctlJSON(RecordingPauseState.self, "record", "pause")
        // Longer than a fragment: without the flush at the pause the last second would still be in memory.
        Thread.sleep(forTimeInterval: 1.5)
        daemon.kill9()
        try daemon.start()
        let r = try daemon.recctlJSON(Recording.self, "show", start.recording.id.uuidString)
        XCTAssertTrue(r.recovered)
        let decoded = try AudioAnalysis.of(daemon.path(of: r))
        XCTAssertGreaterThan(decoded.duration, paused.elapsed - 0.1,
                             "kept \(decoded.duration) s of the \(paused.elapsed) s recorded before the pause")
    }
}
