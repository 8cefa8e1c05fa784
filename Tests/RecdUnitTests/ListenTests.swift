// Listening (issue 49) in milliseconds: the segmenter's decisions alone; the microphone's history and
// its taps; and the Listener over a real Recorder and catalog, its microphone a MemoryCaptureSource
// and its detector the level gate (the real Silero runs in the integration suite's ListenTests).
import Capture
import Catalog
import Engine
import Foundation
import Logging
import MediaWorker
import RecdAPI
import Storage
import Synchronization
import XCTest

final class UtteranceSegmenterTests: XCTestCase {
    /// 100 windows a second at rate 100: a window is one frame of "speech" (1) or not (0).
    func run(_ pattern: String, silence: Double = 1, preRoll: Double = 0.5, min: Double = 0.3, max: Double = 600,
             oldest: Int64 = 0) -> [UtteranceSegmenter.Decision] {
        var s = UtteranceSegmenter(.init(rate: 100, silence: silence, preRoll: preRoll, min: min, max: max))
        var out: [UtteranceSegmenter.Decision] = []
        for (i, c) in pattern.enumerated() {
            out += s.feed(probability: c == "1" ? 0.9 : 0.05, start: Int64(i), end: Int64(i + 1), oldest: oldest)
        }
        return out + s.finish(at: Int64(pattern.count))
    }

    func testAnUtteranceBeginsAPreRollBeforeItsFirstSpeechAndEndsASilenceAfterItsLast() {
        let p = String(repeating: "0", count: 200) + String(repeating: "1", count: 100) + String(repeating: "0", count: 150)
        XCTAssertEqual(run(p), [.begin(at: 150), .end(at: 400, speech: 1.0)])
    }

    func testAPauseShorterThanTheSilenceIsPartOfTheUtterance() {
        let p = "0" + String(repeating: "1", count: 50) + String(repeating: "0", count: 90) + String(repeating: "1", count: 50) + String(repeating: "0", count: 120)
        XCTAssertEqual(run(p, preRoll: 0), [.begin(at: 1), .end(at: 291, speech: 1.0)])
    }

    func testLessSpeechThanMinIsDroppedWithoutARecording() {
        let p = String(repeating: "1", count: 20) + String(repeating: "0", count: 150)
        XCTAssertEqual(run(p), [.drop(speech: 0.2)])
    }

    func testTheRecordingBeginsOnceMinIsHeardButFromBeforeTheFirstWord() {
        let p = String(repeating: "0", count: 100) + String(repeating: "1", count: 80) + String(repeating: "0", count: 120)
        let d = run(p, min: 0.5)
        XCTAssertEqual(d, [.begin(at: 50), .end(at: 280, speech: 0.8)])
    }

    func testThePreRollCountsFromWhereTheProbabilityBeganToRise() {
        var s = UtteranceSegmenter(.init(rate: 100, silence: 1, preRoll: 0.5, min: 0.3, max: 600))
        var out: [UtteranceSegmenter.Decision] = []
        // Quiet speech: 0.05 until 100, then climbing 0.2, 0.3, 0.4 before reaching 0.5 at 103.
        let climb: [Double] = Array(repeating: 0.05, count: 100) + [0.2, 0.3, 0.4] + Array(repeating: 0.9, count: 60) + Array(repeating: 0.05, count: 120)
        for (i, p) in climb.enumerated() { out += s.feed(probability: p, start: Int64(i), end: Int64(i + 1), oldest: 0) }
        XCTAssertEqual(out.first, .begin(at: 50), "0.5 s before the climb began (at 100), not before 103")
        // A long stretch just above the climb's threshold counts for half a second at most.
        var t = UtteranceSegmenter(.init(rate: 100, silence: 1, preRoll: 0.5, min: 0.3, max: 600))
        let hum: [Double] = Array(repeating: 0.2, count: 400) + Array(repeating: 0.9, count: 60) + Array(repeating: 0.05, count: 120)
        var d: [UtteranceSegmenter.Decision] = []
        for (i, p) in hum.enumerated() { d += t.feed(probability: p, start: Int64(i), end: Int64(i + 1), oldest: 0) }
        XCTAssertEqual(d.first, .begin(at: 300))
    }

    func testThePreRollReachesNoFurtherThanTheHistory() {
        let p = String(repeating: "0", count: 100) + String(repeating: "1", count: 50) + String(repeating: "0", count: 120)
        XCTAssertEqual(run(p, preRoll: 2, oldest: 60), [.begin(at: 60), .end(at: 250, speech: 0.5)])
    }

    func testALongUtteranceIsSplitAtMaxWithoutAGap() {
        let p = String(repeating: "1", count: 1250) + String(repeating: "0", count: 120)
        let d = run(p, preRoll: 0, max: 5)
        XCTAssertEqual(d, [.begin(at: 0), .split(at: 500, speech: 5), .split(at: 1000, speech: 5), .end(at: 1350, speech: 2.5)])
    }

    func testAnUtteranceUnderWayWhenCaptureEndsEndsWhereCaptureDid() {
        let p = String(repeating: "1", count: 100) + String(repeating: "0", count: 30)
        XCTAssertEqual(run(p, preRoll: 0), [.begin(at: 0), .end(at: 130, speech: 1.0)])
    }
}

final class CaptureHistoryTests: XCTestCase {
    let format = CaptureStreamFormat(format: .s16, rate: 1000, channels: 1)

    func write(_ h: CaptureHistory, from: Int, count: Int) {
        let samples = (from..<(from + count)).map { Int16($0 % 30000) }
        samples.withUnsafeBytes { h.write($0, frames: count) }
    }

    /// Everything a tap delivered, as samples, once it ended.
    func drain(_ tap: CaptureHistoryTap) -> (samples: [Int16], error: (any Error)?) {
        let got = Mutex<[Int16]>([]), ended = DispatchSemaphore(value: 0), failure = Mutex<(any Error)?>(nil)
        tap.start(clock: nil, deliver: { raw, frames in
            got.withLock { $0 += Array(raw.bindMemory(to: Int16.self).prefix(frames)) }
        }, onEnd: { error in failure.withLock { $0 = error }; ended.signal() })
        _ = ended.wait(timeout: .now() + 2)
        tap.stop()
        return (got.withLock { $0 }, failure.withLock { $0 })
    }

    func testATapDeliversFromItsPositionToItsEndExactly() {
        let h = CaptureHistory(format: format, seconds: 5)
        write(h, from: 0, count: 3000)
        let tap = CaptureHistoryTap(history: h, from: 1200, device: "memory", sampleRate: 1000, channels: 1)
        tap.end(at: 2700)
        let (samples, error) = drain(tap)
        XCTAssertNil(error)
        XCTAssertEqual(samples, (1200..<2700).map { Int16($0) })
    }

    /// A device at another rate than the recording's: the tap delivers the device's frames and counts
    /// them at the recording's rate (`CaptureSource.recordingFrames`, as the ALSA source and the
    /// pipeline's device ring count theirs).
    func testATapOnADeviceAtAnotherRateCountsAtTheRecordingsRate() {
        let h = CaptureHistory(format: CaptureStreamFormat(format: .s16, rate: 2000, channels: 1), seconds: 5)
        write(h, from: 0, count: 3000)
        let tap = CaptureHistoryTap(history: h, from: 0, device: "memory", sampleRate: 1000, channels: 1)
        tap.end(at: 3000)
        let (samples, error) = drain(tap)
        XCTAssertNil(error)
        XCTAssertEqual(samples.count, 3000)
        XCTAssertEqual(tap.stats.framesCaptured, 1500)
        XCTAssertEqual(tap.recordingFrames(88200), 44100)
        let same = CaptureHistoryTap(history: h, from: 0, device: "memory", sampleRate: 2000, channels: 1)
        XCTAssertEqual(same.recordingFrames(3001), 3001)
    }

    func testOneTapEndsWhereTheNextBeginsAndNoFrameIsLostOrRepeated() {
        let h = CaptureHistory(format: format, seconds: 5)
        let first = CaptureHistoryTap(history: h, from: 0, device: "memory", sampleRate: 1000, channels: 1)
        let second = CaptureHistoryTap(history: h, from: 1000, device: "memory", sampleRate: 1000, channels: 1)
        write(h, from: 0, count: 1500)
        first.end(at: 1000)
        let a = drain(first).samples
        write(h, from: 1500, count: 500)
        second.end(at: 2000)
        XCTAssertEqual(a + drain(second).samples, (0..<2000).map { Int16($0) })
    }

    func testATapThatFellBehindTheHistoryCountsWhatWasOverwritten() {
        let h = CaptureHistory(format: format, seconds: 1)
        write(h, from: 0, count: 2500)
        let tap = CaptureHistoryTap(history: h, from: 0, device: "memory", sampleRate: 1000, channels: 1)
        tap.end(at: 2500)
        XCTAssertEqual(drain(tap).samples.count, 1000)
        XCTAssertEqual(tap.stats.overrunFrames, 1500)
    }

    func testTheDevicesErrorEndsATapAfterWhatWasHeld() {
        let h = CaptureHistory(format: format, seconds: 5)
        write(h, from: 0, count: 800)
        h.close(error: CaptureError.failed(device: "memory", call: "snd_pcm_readi", code: -ENODEV))
        let tap = CaptureHistoryTap(history: h, from: 300, device: "memory", sampleRate: 1000, channels: 1)
        let (samples, error) = drain(tap)
        XCTAssertEqual(samples.count, 500)
        XCTAssertNotNil(error as? CaptureError)
    }
}

/// The detector's 16 kHz: each sample the mean of the frames it spans (a box filter), at the level
/// that went in.
final class SpeechInputTests: XCTestCase {
    func convert(_ samples: [Int16], rate: Int, channels: Int) -> [Int16] {
        var input = SpeechInput(format: CaptureStreamFormat(format: .s16, rate: rate, channels: channels))
        var out: [Int16] = []
        samples.withUnsafeBytes { input.convert($0, frames: samples.count / channels, into: &out) }
        return out
    }

    func testASteadyLevelKeepsItsLevelAtAnyRateAndChannels() {
        for (rate, channels) in [(48000, 1), (48000, 2), (44100, 2), (16000, 1), (96000, 1)] {
            let out = convert([Int16](repeating: 16384, count: rate / 10 * channels), rate: rate, channels: channels)
            XCTAssertTrue(abs(out.count - 1600) <= 1, "\(rate) Hz × \(channels): \(out.count) samples")
            XCTAssertEqual(Set(out), [16384], "\(rate) Hz × \(channels)")
        }
    }

    /// 24 kHz, the top of what 48 kHz holds: decimation keeps it whole (aliased to DC: +a, +a, …);
    /// the box averages each three frames (a third of it).
    func testSoundAbove8kHzIsAveragedNotAliased() {
        let out = convert((0..<4800).map { $0 % 2 == 0 ? 9000 : -9000 }, rate: 48000, channels: 1)
        XCTAssertEqual(out.count, 1600)
        XCTAssertTrue(out.allSatisfy { abs(Int($0) - 3000) <= 1 || abs(Int($0) + 3000) <= 1 }, "\(out.prefix(8))")
    }

    func testStereoIsAveraged() {
        let out = convert((0..<9600).map { $0 % 2 == 0 ? 12000 : 4000 }, rate: 48000, channels: 2)
        XCTAssertEqual(Set(out), [8000])
    }
}

/// What the voice detector was asked, in order ("reset", or "detect N" for N samples).
final class RecordingSpeechDetector: SpeechDetector, @unchecked Sendable {
    let kind = VoiceDetectorKind.silero
    let asked = Mutex<[String]>([])
    func probabilities(_ samples: UnsafeBufferPointer<Int16>) throws -> [Double] {
        asked.withLock { $0.append("detect \(samples.count)") }
        return Array(repeating: 0, count: samples.count / VoiceDetectorWire.windowSamples)
    }
    func reset() { asked.withLock { $0.append("reset") } }
    func close() {}
}

final class ListenCaptureTests: XCTestCase {
    /// A quiet room costs no detector call: 2 s at -63 dBFS, 1 s of sound at -33, then quiet again.
    /// The detector hears the last quiet quarter just before the sound's first, and is not reset over
    /// the quiet (only where capture starts).
    func testQuietQuartersAreNotAskedAndTheDetectorHearsTheLastOneBeforeSound() async {
        let quiet = MemoryCaptureSource.tone(hz: 300, seconds: 2, amplitude: 0.001)
        let sound = MemoryCaptureSource.tone(hz: 300, seconds: 1, amplitude: 0.03)
        let detector = RecordingSpeechDetector()
        let capture = ListenCapture(source: MemoryCaptureSource(samples: quiet + sound + quiet), detector: detector,
                                    settings: UtteranceSegmenter.Settings(rate: 48000, silence: 2, preRoll: 1, min: 1, max: 600))
        let watchdog = Task { try? await Task.sleep(for: .seconds(20)); capture.stop() }
        var levels = 0
        for await message in capture.messages {
            if case .level = message { levels += 1 }
            if levels >= 18 { break }   // 4.5 s of the 5 s judged
        }
        watchdog.cancel()
        capture.stop()
        let asked = detector.asked.withLock { $0 }
        let detects = asked.filter { $0.hasPrefix("detect") }
        // Each of the 18 quarters asked without the gate; here the sound's four, and the quiet one before it.
        XCTAssertTrue((5...6).contains(detects.count), "\(asked)")
        XCTAssertEqual(asked.first, "reset", "where capture starts: \(asked)")
        XCTAssertEqual(asked.filter { $0 == "reset" }.count, 1, "\(asked)")
        XCTAssertEqual(asked.dropFirst().first?.hasPrefix("detect"), true, "no call in the first 2 s: \(asked)")
    }
}

final class ListenerTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!
    var events: EventHub!
    var log: EventLog!
    var recorder: Recorder!
    var listeners: [Listener] = []

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-listen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
        events = EventHub()
        log = EventLog(events)
    }

    override func tearDown() async throws {
        for l in listeners { await l.shutdown { } }
        await recorder?.shutdown()
        try? FileManager.default.removeItem(at: dir)
    }

    static let rate = 16_000

    /// Silence and a 440 Hz tone at -12 dBFS: (tone?, seconds) in order.
    static func script(_ parts: [(Bool, Double)]) -> [Int16] {
        parts.flatMap { tone, seconds in
            tone ? MemoryCaptureSource.tone(seconds: seconds, sampleRate: rate, amplitude: 0.35) : [Int16](repeating: 0, count: Int(seconds * Double(rate)))
        }
    }

    var config: EngineConfiguration {
        var c = EngineConfiguration(dataDirectory: dir, captureDevice: "memory", sampleRate: Self.rate, channels: 1,
                                    timeZone: TimeZone(identifier: "UTC"), minFreeBytes: 0)
        c.syncIntervalMs = 0
        return c
    }

    /// A Listener whose microphone plays `microphones` in turn (each opening the next; a failing
    /// open when they run out), with the level gate.
    func makeListener(_ microphones: [MemoryCaptureSource],
                      freeBytes: @escaping @Sendable (String) -> Int64? = { _ in 1 << 40 }) throws -> (Listener, MemorySessionFactory) {
        let config = self.config
        try config.dataDirectory.create()
        let factory = MemorySessionFactory()
        if recorder == nil {
            recorder = Recorder(config: config, catalog: catalog, events: events, logger: Logger(label: "recd.test.listen"), sessions: factory)
        }
        let left = Mutex(microphones)
        let listener = Listener(config: config, recorder: recorder, microphone: SharedMicrophone(), events: events,
                                logger: Logger(label: "recd.test.listen"),
                                openMicrophone: {
                                    guard let next = left.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                                        throw CaptureError.failed(device: "memory", call: "snd_pcm_open", code: -ENODEV)
                                    }
                                    return next
                                },
                                makeDetector: { (LevelGateDetector(), "test") }, freeBytes: freeBytes)
        listeners.append(listener)
        return (listener, factory)
    }

    func microphone(_ parts: [(Bool, Double)], failAtSecond: Double? = nil) -> MemoryCaptureSource {
        MemoryCaptureSource(sampleRate: Self.rate, samples: Self.script(parts), periodFrames: 320,
                            failAtFrame: failAtSecond.map { Int64($0 * Double(Self.rate)) })
    }

    var utterances: [ListenUtteranceEvent] { log.all.compactMap { if case .listenUtterance(let u) = $0 { u } else { nil } } }

    func eventually(_ what: String, seconds: Double = 5, _ condition: () async -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await condition() { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
        XCTFail("not within \(seconds) s: \(what)")
    }

    func testEachUtteranceIsOneSavedRecordingFromThePreRollToTheSilenceAfterIt() async throws {
        // Speech 1.0–2.5 s and 3.0–4.0 s (a pause under the 1 s silence: one utterance), a 0.2 s
        // click at 6 s (under min: dropped), speech 8.0–9.0 s.
        let (listener, factory) = try makeListener([microphone([(false, 1), (true, 1.5), (false, 0.5), (true, 1), (false, 2), (true, 0.2),
                                                                 (false, 1.8), (true, 1), (false, 2)])])
        let armed = try await listener.arm(ListenRequest(silence: 1, preRoll: 0.5, min: 0.5))
        XCTAssertEqual(armed.state, .listening)
        XCTAssertEqual(armed.detector, .level)
        await eventually("two kept, one dropped") { utterances.count == 3 }
        XCTAssertEqual(utterances.map(\.dropped), [false, true, false])
        let takes = factory.takes
        XCTAssertEqual(takes.count, 2)
        // From 0.5 s (1.0 - pre-roll) to 5.0 s (4.0 + silence): 4.5 s; then 7.5 s to 10.0 s: 2.5 s
        // (give or take a 32 ms window and the gate's edges).
        XCTAssertEqual(Double(takes[0].sink.frames) / Double(Self.rate), 4.5, accuracy: 0.1)
        XCTAssertEqual(Double(takes[1].sink.frames) / Double(Self.rate), 2.5, accuracy: 0.1)
        for u in utterances where !u.dropped {
            let r = try XCTUnwrap(try catalog.recording(id: XCTUnwrap(u.recordingID)))
            XCTAssertEqual(r.state, .ready, "nobody is there to press save: kept as saved")
            XCTAssertTrue(r.title.hasPrefix("Recording "), r.title)
        }
        let status = await listener.status
        XCTAssertEqual(status.utterances, 2)
        XCTAssertEqual(status.dropped, 1)
        let off = try await listener.disarm()
        XCTAssertEqual(off.state, .off)
        XCTAssertEqual(off.lastStop?.reason, .requested)
        XCTAssertEqual(off.utterances, 2, "the session's counts are said once it has ended")
        XCTAssertEqual(off.dropped, 1)
    }

    func testAnUtteranceLongerThanMaxIsSplitWithoutLosingAFrame() async throws {
        let (listener, factory) = try makeListener([microphone([(true, 12.5), (false, 1.5)])])
        _ = try await listener.arm(ListenRequest(silence: 1, preRoll: 0, min: 0.1, max: 5))
        await eventually("three parts") { utterances.count == 3 }
        XCTAssertEqual(utterances.map(\.split), [true, true, false])
        let frames = factory.takes.map(\.sink.frames)
        XCTAssertEqual(frames[0], 5 * Self.rate)
        XCTAssertEqual(frames[1], 5 * Self.rate)
        XCTAssertEqual(Double(frames[2]) / Double(Self.rate), 3.5, accuracy: 0.1)
    }

    func testDisarmingMidUtteranceKeepsWhatWasSaid() async throws {
        let (listener, factory) = try makeListener([microphone([(false, 0.5), (true, 3)])])
        _ = try await listener.arm(ListenRequest(silence: 1, preRoll: 0.2, min: 0.3))
        await eventually("speaking") { await listener.status.state == .speaking }
        let off = try await listener.disarm()
        XCTAssertEqual(off.state, .off)
        XCTAssertEqual(off.utterances, 1)
        XCTAssertEqual(utterances.count, 1)
        let r = try XCTUnwrap(try catalog.recording(id: XCTUnwrap(utterances.first?.recordingID)))
        XCTAssertEqual(r.state, .ready)
        XCTAssertGreaterThan(factory.takes[0].sink.frames, Self.rate)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("listen.json").path))
    }

    func testALostMicrophoneKeepsTheUtteranceAndIsOpenedAgain() async throws {
        // The first microphone is unplugged mid-speech; the second (opened 2 s later) hears a phrase.
        let (listener, factory) = try makeListener([microphone([(false, 0.5), (true, 3)], failAtSecond: 2),
                                                    microphone([(false, 0.5), (true, 1), (false, 1.5)])])
        _ = try await listener.arm(ListenRequest(silence: 1, preRoll: 0.2, min: 0.3))
        await eventually("device lost") { await listener.status.state == .deviceLost }
        // Kept: as pending when the device's fault ended it first, as saved when the utterance's end did.
        await eventually("the first take kept") {
            guard let id = log.started.first?.id, let row = try? catalog.recording(id: id) else { return false }
            return row.state == .pending || row.state == .ready
        }
        let first = log.started.first?.id
        await eventually("listening again, the second phrase kept", seconds: 8) { utterances.contains { $0.recordingID != nil && $0.recordingID != first } }
        XCTAssertEqual(factory.takes.count, 2)
        let status = await listener.status
        XCTAssertEqual(status.state, .listening)
    }

    func testARecordingStartedByHandHasTheRecorderAndListeningGoesOnAfterIt() async throws {
        let (listener, _) = try makeListener([MemoryCaptureSource(sampleRate: Self.rate, samples: Self.script([(false, 0.5), (true, 1), (false, 1.5)]),
                                                                  periodFrames: 320, paced: true)])
        _ = try await listener.arm(ListenRequest(silence: 1, preRoll: 0.2, min: 0.3))
        let manual = try await recorder.start(StartRecordingRequest(), receivedAt: DispatchTime.now().uptimeNanoseconds)
        await eventually("yielded to the manual take") { await listener.status.state == .yielded }
        _ = try await recorder.stop(StopRecordingRequest(then: .save))
        await eventually("listening again") { await listener.status.state == .listening }
        XCTAssertTrue(utterances.isEmpty)
        XCTAssertEqual(try catalog.recording(id: manual.recording.id)?.state, .ready)
    }

    func testARestartArmsListeningAgainWithItsSettings() async throws {
        let (first, _) = try makeListener([microphone([(false, 1)])])
        _ = try await first.arm(ListenRequest(silence: 3, preRoll: 2, min: 0.5, max: 60, purpose: "reflection"))
        await first.shutdown { }
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.appendingPathComponent("listen.json").path))
        let (second, _) = try makeListener([microphone([(false, 1)])])
        await second.resumeIfArmed(always: false)
        let status = await second.status
        XCTAssertEqual(status.state, .listening)
        XCTAssertTrue(status.resumedAfterRestart)
        XCTAssertEqual(status.settings?.silence, 3)
        XCTAssertEqual(status.settings?.purpose, "reflection")
        // Never armed by itself otherwise.
        _ = try await second.disarm()
        let (third, _) = try makeListener([microphone([(false, 1)])])
        await third.resumeIfArmed(always: false)
        let off = await third.status
        XCTAssertEqual(off.state, .off)
    }

    func testArmingIsRefusedWhenTheDiskHasNoRoomForATake() async throws {
        let (listener, _) = try makeListener([microphone([(false, 1)])], freeBytes: { _ in 60_000_000 })
        do {
            _ = try await listener.arm(ListenRequest())
            XCTFail("armed with 60 MB free")
        } catch {
            guard case .insufficientStorage(let path, let free, let required) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, dir.appendingPathComponent("Recordings").path)
            XCTAssertEqual(free, 60_000_000)
            XCTAssertEqual(required, Listener.diskMarginBytes, "--min-free-mb (0 here) plus the margin for a take to finish")
        }
        let status = await listener.status
        XCTAssertEqual(status.state, .off)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("listen.json").path))
    }

    func testListeningStopsWhenTheDiskFillsBeforeAnUtteranceAndMakesNoRecording() async throws {
        // Room when armed; 20 MB left by the time speech begins.
        let reads = Mutex(0)
        let (listener, factory) = try makeListener([microphone([(false, 1), (true, 1.5), (false, 2)])], freeBytes: { _ in
            reads.withLock { $0 += 1; return $0 == 1 ? 1 << 40 : 20_000_000 }
        })
        _ = try await listener.arm(ListenRequest(silence: 1, preRoll: 0.2, min: 0.3))
        await eventually("stopped for the disk") { await listener.status.state == .off }
        let status = await listener.status
        XCTAssertEqual(status.lastStop?.reason, .diskLow)
        XCTAssertTrue(status.lastStop?.message.contains("20 MB free") ?? false, status.lastStop?.message ?? "")
        XCTAssertTrue(factory.takes.isEmpty)
        XCTAssertEqual(try catalog.list(ListQuery()).total, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("listen.json").path),
                       "a restart does not arm it again on a full disk")
        XCTAssertTrue(log.all.contains { if case .listenStatus(let s) = $0 { s.state == .off && s.lastStop?.reason == .diskLow } else { false } })
    }

    func testBadSettingsAreRefusedAndChangeNothing() async throws {
        let (listener, _) = try makeListener([microphone([(false, 1)]), microphone([(false, 1)])])
        for (request, field) in [(ListenRequest(silence: 0.1), "silence"), (ListenRequest(preRoll: 11), "preRoll"),
                                 (ListenRequest(min: -1), "min"), (ListenRequest(max: 1), "max"), (ListenRequest(min: 30, max: 20), "max"),
                                 (ListenRequest(until: Date(timeIntervalSinceNow: -60)), "until"), (ListenRequest(silence: .nan), "silence")] {
            do {
                _ = try await listener.arm(request)
                XCTFail("\(request) was accepted")
            } catch {
                guard case .invalidValue(let f, _) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(f, field)
            }
        }
        do { _ = try await listener.arm(ListenRequest(format: "mp3")); XCTFail("mp3 accepted") } catch {}
        let off = await listener.status
        XCTAssertEqual(off.state, .off)
        do { _ = try await listener.disarm(); XCTFail("disarmed while off") } catch {
            guard case .notListening = error else { return XCTFail("\(error)") }
        }
        _ = try await listener.arm(ListenRequest())
        do { _ = try await listener.arm(ListenRequest()); XCTFail("armed twice") } catch {
            guard case .alreadyListening = error else { return XCTFail("\(error)") }
        }
    }
}

