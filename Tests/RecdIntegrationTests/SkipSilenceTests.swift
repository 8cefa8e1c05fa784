// Skip Silence (issue 47) through the real recd: the pauses of a memo found from its waveform, and
// recd's player skipping them — what comes out of the speaker, recorded from its monitor, is the same
// four tones with the three 3 s pauses cut to a fraction of a second.
import Foundation
import RecdAPI
import XCTest

final class SkipSilenceTests: PlaybackTestCase {
    /// 2 s of 440 Hz, 3 s of silence, three times, then 2 s more: 17 s, made by sox (not recd).
    func pausedMemo() throws -> String {
        let dir = daemon.dir.path
        let tone = dir + "/tone.wav", gap = dir + "/gap.wav", memo = dir + "/memo.wav"
        XCTAssertEqual(try Tools.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "2", "sine", "440", "vol", "0.5"]).status, 0)
        XCTAssertEqual(try Tools.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", gap, "trim", "0", "3"]).status, 0)
        XCTAssertEqual(try Tools.run("sox", [tone, gap, tone, gap, tone, gap, tone, memo]).status, 0)
        return memo
    }

    func testTheMemosPausesAreFoundAndSkippedWhenPlayed() throws {
        let r = try daemon.recctlJSON(Recording.self, "import", try pausedMemo(), "--title", "Three pauses")
        XCTAssertEqual(r.duration ?? 0, 17, accuracy: 0.05)
        let (code, body) = try daemon.curl("GET", "/v1/recordings/\(r.id.uuidString)/silences")
        XCTAssertEqual(code, 200, body)
        let found = try APIJSON.decoder().decode(SilenceList.self, from: Data(body.utf8))
        XCTAssertEqual(found.silences.count, 3, body)
        for (k, s) in found.silences.enumerated() {
            XCTAssertEqual(s.start, 2.2 + 5 * Double(k), accuracy: 0.05, body)
            XCTAssertEqual(s.end, 4.8 + 5 * Double(k), accuracy: 0.05, body)
        }
        XCTAssertEqual(found.skippable, 7.8, accuracy: 0.15)

        let monitor = try SpeakerMonitor(pulse)
        let started = Date()
        let played = try daemon.recctl("play", r.id.uuidString, "--skip-silence", "--wait")
        let took = Date().timeIntervalSince(started)
        Thread.sleep(forTimeInterval: 0.3)
        let heard = try monitor.stop()
        XCTAssertEqual(played.status, 0, played.stderr)
        XCTAssertTrue(played.stdout.contains("skipping pauses") && played.stdout.contains("played to the end (counted as a play)"), played.stdout)
        // Every tone whole, the pauses shortened: at least 7 s less than the 17 s of the file.
        let spans = heard.sounding()
        XCTAssertEqual(spans.count, 4, "\(spans)")
        for span in spans { XCTAssertEqual(span.upperBound - span.lowerBound, 2, accuracy: 0.15, "\(spans)") }
        let length = try XCTUnwrap(spans.last).upperBound - (try XCTUnwrap(spans.first)).lowerBound
        XCTAssertLessThanOrEqual(length, 10, "\(spans)")
        XCTAssertGreaterThan(length, 8.5, "a fifth of a second of each pause is kept: \(spans)")
        XCTAssertLessThan(took, 13, "the play took \(took) s")
        XCTAssertEqual(try show(r).playCount, 1)

        // Without it, the pauses are heard.
        let plain = try daemon.recctlJSON(PlayResponse.self, "play", r.id.uuidString, "--from", "1")
        XCTAssertFalse(plain.playback.skipSilence)
        _ = try waitForPosition(3.5, timeout: 8)
        _ = try daemon.recctl("playback", "stop")
        let (unknown, _) = try daemon.curl("GET", "/v1/recordings/00000000-0000-0000-0000-000000000000/silences")
        XCTAssertEqual(unknown, 404)
        let (badBody, badText) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/play", body: #"{"skipSilence": "yes"}"#)
        XCTAssertEqual(badBody, 400, badText)
    }
}
