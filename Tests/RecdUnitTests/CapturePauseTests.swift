import Engine
import XCTest

/// Pause and resume as the capture thread applies them: period boundaries, fades, and where the
/// video thread places frames.
final class CapturePauseTests: XCTestCase {
    func testAPauseStartsAfterAFadeOutAndEndsWithAFadeInAtThePeriodsWhereTheyWereAsked() {
        let pause = CapturePause(sampleRate: 48_000)   // 240-frame fades
        XCTAssertEqual(pause.fadeFrames, 240)
        XCTAssertEqual(pause.plan(frames: 480), .keep)          // 0..<480
        pause.set(paused: true)
        XCTAssertEqual(pause.plan(frames: 480), .fadeOut(frames: 240))   // 480..<720 written, fading
        XCTAssertTrue(pause.isPaused)
        XCTAssertEqual(pause.plan(frames: 480), .drop)          // 960..<1440
        pause.set(paused: false)
        XCTAssertEqual(pause.plan(frames: 100), .fadeIn(from: 0))      // 1440..<1540
        XCTAssertEqual(pause.plan(frames: 100), .fadeIn(from: 100))
        XCTAssertEqual(pause.plan(frames: 100), .fadeIn(from: 200))    // the last 40 frames of the fade
        XCTAssertEqual(pause.plan(frames: 100), .keep)
        XCTAssertEqual(pause.cuts, [CapturePause.Cut(start: 720, end: 1440)])
        // Where the video thread places positions: before, in and after the pause.
        XCTAssertEqual(pause.filePosition(of: 700), 700)
        XCTAssertNil(pause.filePosition(of: 720))
        XCTAssertNil(pause.filePosition(of: 1439.5))
        XCTAssertEqual(pause.filePosition(of: 1440), 720)
        XCTAssertEqual(pause.clampedFilePosition(of: 1000), 720)
        XCTAssertEqual(pause.deliveredInFile, 1840 - 720)
        // Asking twice for the same thing changes nothing.
        pause.set(paused: false)
        XCTAssertEqual(pause.plan(frames: 10), .keep)
    }

    func testFadesRampTheSamplesAndNeverOvershoot() {
        let pause = CapturePause(sampleRate: 800)   // 4-frame fades
        var samples: [Int16] = [1000, 1000, 1000, 1000, 1000, 1000]   // 3 stereo frames
        samples.withUnsafeMutableBufferPointer { pause.fade(.fadeOut(frames: 3), $0, frames: 3, channels: 2) }
        XCTAssertEqual(samples, [666, 666, 333, 333, 0, 0])
        samples = [1000, 1000, 1000, 1000, 1000, 1000]
        samples.withUnsafeMutableBufferPointer { pause.fade(.fadeIn(from: 2), $0, frames: 3, channels: 2) }
        XCTAssertEqual(samples, [500, 500, 750, 750, 1000, 1000])
    }

    func testSilentVideoPausesByCaptureTime() {
        let pause = MonotonicPause()
        pause.set(paused: true, atNs: 1_000)
        pause.set(paused: true, atNs: 1_500)      // already paused: no second cut
        XCTAssertTrue(pause.isPaused)
        XCTAssertEqual(pause.fileTime(ofNs: 999), 999)
        XCTAssertNil(pause.fileTime(ofNs: 5_000))
        pause.set(paused: false, atNs: 3_000)
        XCTAssertNil(pause.fileTime(ofNs: 2_999))
        XCTAssertEqual(pause.fileTime(ofNs: 3_000), 1_000)
        XCTAssertEqual(pause.fileTime(ofNs: 4_000), 2_000)
    }
}
