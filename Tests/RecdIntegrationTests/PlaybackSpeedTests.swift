// Playback speed (issue 47) through the real recd and the paced PulseAudio speaker, recorded from
// its monitor: twice as fast is half as long at the same pitch; the speed changed mid-way plays on
// without a gap; the position, the end and the play count stay the recording's.
import Foundation
import RecdAPI
import XCTest

final class PlaybackSpeedTests: PlaybackTestCase {
    func testTwiceAsFastIsHalfAsLongAtTheSamePitchAndCountsOnce() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Two tones")
        let monitor = try SpeakerMonitor(pulse)
        let played = try daemon.recctl("--json", "play", r.id.uuidString, "--speed", "2x", "--wait")
        Thread.sleep(forTimeInterval: 0.3)
        let heard = try monitor.stop()
        XCTAssertEqual(played.status, 0, played.stderr)
        let lines = played.stdout.split(separator: "\n")
        let reply = try APIJSON.decoder().decode(PlayResponse.self, from: Data(lines[0].utf8))
        let ended = try APIJSON.decoder().decode(PlaybackEnded.self, from: Data(lines[1].utf8))
        XCTAssertEqual(reply.playback.speed, 2)
        XCTAssertEqual(ended.reason, .completed)
        XCTAssertEqual(ended.position, 4, accuracy: 0.1, "the end is the recording's")
        let spans = heard.sounding()
        XCTAssertEqual(spans.count, 1, "\(spans)")
        let span = try XCTUnwrap(spans.first)
        XCTAssertEqual(span.upperBound - span.lowerBound, 2, accuracy: 0.15, "4 s played twice as fast")
        XCTAssertEqual(heard.tone(from: span.lowerBound + 0.1, to: span.lowerBound + 0.9).frequency, 440, accuracy: 6)
        XCTAssertEqual(heard.tone(from: span.lowerBound + 1.1, to: span.upperBound - 0.1).frequency, 880, accuracy: 6)
        XCTAssertEqual(try show(r).playCount, 1)
    }

    func testTheSpeedChangedMidWayPlaysOnWithoutAGapAndBadSpeedsAreRefused() throws {
        let r = try addRecording(try TestMedia.twoTones(), title: "Two tones")
        let monitor = try SpeakerMonitor(pulse)
        XCTAssertEqual(try daemon.recctl("play", r.id.uuidString).status, 0)
        _ = try waitForPosition(1)
        let faster = try daemon.recctlJSON(PlaybackStatus.self, "playback", "speed", "150%")
        XCTAssertEqual(faster.playback?.speed, 1.5)
        let said = try daemon.recctl("playback")
        XCTAssertTrue(said.stdout.contains("at 1.5×"), said.stdout)
        let ended = try waitForEnd()
        Thread.sleep(forTimeInterval: 0.3)
        let heard = try monitor.stop()
        XCTAssertEqual(ended.reason, .completed)
        let spans = heard.sounding()
        XCTAssertEqual(spans.count, 1, "no gap where the speed changed: \(spans)")
        let length = try XCTUnwrap(spans.first).upperBound - (try XCTUnwrap(spans.first)).lowerBound
        // About a second at 1x, then about three at 1.5x: 3 s, not 4 (the switch lands within a
        // quarter second of the request).
        XCTAssertEqual(length, 3, accuracy: 0.3, "\(spans)")

        for bad in ["3", "0.25", "fast"] {
            let refused = try daemon.recctl("play", r.id.uuidString, "--speed", bad)
            XCTAssertEqual(refused.status, 2, refused.stderr)
        }
        let (code, body) = try daemon.curl("POST", "/v1/recordings/\(r.id.uuidString)/play", body: #"{"speed": 4}"#)
        XCTAssertEqual(code, 422, body)
        XCTAssertTrue(body.contains("not between 0.5 and 2"), body)
        XCTAssertNil(try playback().playback, "a refused play starts nothing")
        let (idle, idleBody) = try daemon.curl("POST", "/v1/playback/speed", body: #"{"speed": 1.5}"#)
        XCTAssertEqual(idle, 409, idleBody)
    }
}
