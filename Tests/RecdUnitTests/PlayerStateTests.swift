// The Player's state machine and the seed's play-count rules in milliseconds: its sessions come from a
// factory of in-memory playbacks that say what they were asked, its catalog is a real one in a
// temporary directory. What the decoder and the device do is the integration suite's
// (PlaybackTests, PlayCountTests, PlaybackSpeedTests).
import Catalog
import Engine
import Foundation
import Logging
import Playback
import RecdAPI
import Synchronization
import XCTest

/// A playback that plays nothing: it records the calls the Player made, and ends by itself when the
/// test says (`end`), as the playback thread would.
final class MemoryPlayback: PlayerSession, @unchecked Sendable {
    let device: String
    let duration: Double?
    private struct State {
        var calls: [String] = []
        var progress = PlaybackProgress(position: 0, paused: false, underruns: 0)
        var onEnd: (@Sendable (PlaybackEnd) -> Void)?
        var stopped = false
    }
    private let state = Mutex(State())

    init(device: String, duration: Double?) { self.device = device; self.duration = duration }

    /// What the Player called, in order.
    var calls: [String] { state.withLock { $0.calls } }
    var progress: PlaybackProgress { state.withLock { $0.progress } }
    private func call(_ name: String, _ change: (inout State) -> Void = { _ in }) {
        state.withLock { s in
            s.calls.append(name)
            if !s.stopped { change(&s) }
        }
    }

    func skip(_ stretches: [(start: Double, end: Double)]) { call("skip \(stretches.count)") }
    func startSpeed(_ speed: Double) { call("speed \(speed)") { $0.progress.speed = speed } }
    func start(at position: Double, meterIntervalMs: Int, observer: @escaping @Sendable (PlaybackObservation) -> Void,
               onEnd: @escaping @Sendable (PlaybackEnd) -> Void) throws(PlaybackError) -> UInt64 {
        call("start \(position)") { $0.progress.position = position; $0.onEnd = onEnd }
        return DispatchTime.now().uptimeNanoseconds
    }
    func setSpeed(_ speed: Double) { call("speed \(speed)") { $0.progress.speed = speed } }
    func pause() { call("pause") { $0.progress.paused = true } }
    func resume() { call("resume") { $0.progress.paused = false } }
    func seek(to seconds: Double) { call("seek \(seconds)") { $0.progress.position = min(max(seconds, 0), self.duration ?? seconds) } }
    func stop() { call("stop") { $0.stopped = true } }

    /// Ends the playback by itself (played through, or the device failed), once, unless stopped.
    func end(_ how: PlaybackEnd) {
        let onEnd: (@Sendable (PlaybackEnd) -> Void)? = state.withLock { s in
            defer { s.onEnd = nil }
            return s.stopped ? nil : s.onEnd
        }
        onEnd?(how)
    }
}

/// Makes `MemoryPlayback`s, or fails to open the device as `openError` says; keeps them for the test.
final class MemoryPlaybackFactory: PlaybackSessionFactory {
    let openError = Mutex<PlaybackError?>(nil)
    private let made = Mutex<[MemoryPlayback]>([])
    var playbacks: [MemoryPlayback] { made.withLock { $0 } }

    func makeSession(for playback: PlaybackSessionRequest) throws -> any PlayerSession {
        if let error = openError.withLock({ $0 }) { throw error }
        let session = MemoryPlayback(device: playback.device, duration: 10)
        made.withLock { $0.append(session) }
        return session
    }
}

final class PlayerStateTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!
    var events: EventHub!
    var player: Player!
    var factory: MemoryPlaybackFactory!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-player-\(UUID().uuidString)")
        var config = EngineConfiguration(dataDirectory: dir, captureDevice: "memory", timeZone: TimeZone(identifier: "UTC"),
                                         minFreeBytes: 0)
        config.playbackDevice = "memory:speaker"
        try config.dataDirectory.create()
        catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
        events = EventHub()
        factory = MemoryPlaybackFactory()
        player = Player(config: config, catalog: catalog, plays: PlayCountCommitter(catalog: catalog), events: events,
                        logger: Logger(label: "recd.test.player"), sessions: factory)
    }

    override func tearDown() async throws {
        await player?.shutdown()
        try? FileManager.default.removeItem(at: dir)
    }

    /// A recording in the catalog, with a file (the Player checks that it is there).
    func recording(_ state: RecordingState = .ready, file: Bool = true) throws -> Recording {
        let id = UUID()
        let r = Recording(id: id, type: .audio, state: state, title: "Memo", notes: "", purpose: nil, createdAt: Date(), duration: 10,
                          sizeBytes: 1, file: "Recordings/audio_\(id.uuidString).m4a", playCount: 0, lastPlayedAt: nil,
                          recovered: false, droppedFrames: 0)
        try catalog.insert(r)
        if file { XCTAssertTrue(FileManager.default.createFile(atPath: dir.appendingPathComponent(r.file).path, contents: Data())) }
        return r
    }

    func play(_ r: Recording, from position: Double? = nil, speed: Double = 1) async throws(EngineError) -> PlayResponse {
        try await player.play(r, from: position, speed: speed, receivedAt: DispatchTime.now().uptimeNanoseconds)
    }

    func plays(_ r: Recording) throws -> Int { try XCTUnwrap(try catalog.recording(id: r.id)).playCount }

    /// Waits (at most 2 s) until the Player says no playback is in progress.
    func idle() async -> PlaybackStatus {
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            let status = await player.status()
            if status.playback == nil { return status }
            try? await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("the playback did not end within 2 s")
        return await player.status()
    }

    func testAPlayCountsOnceHoweverOftenItIsPausedSeekedOrSpedUp() async throws {
        let memo = try recording()
        let started = try await play(memo, from: 2)
        XCTAssertTrue(started.playback.counts)
        XCTAssertEqual(started.playback.device, "memory:speaker")
        XCTAssertNil(started.replaced)
        for _ in 0..<3 {
            _ = try await player.pause()
            _ = try await player.resume()
        }
        _ = try await player.seek(SeekRequest(by: 3))
        let moved = try await player.seek(SeekRequest(to: 7.5))
        XCTAssertEqual(moved.playback?.position, 7.5)
        let faster = try await player.setSpeed(1.5)
        XCTAssertEqual(faster.playback?.speed, 1.5)
        let paused = try await player.pause()
        XCTAssertEqual(paused.playback?.state, .paused)
        let stopped = try await player.stop()
        XCTAssertNil(stopped.playback)
        XCTAssertEqual(stopped.lastEnded?.reason, .stopped)
        XCTAssertEqual(stopped.lastEnded?.counted, true)
        XCTAssertEqual(stopped.lastEnded?.position, 7.5, "where it was when stopped")
        XCTAssertEqual(try plays(memo), 1)
        XCTAssertEqual(factory.playbacks.map(\.calls), [["speed 1.0", "start 2.0", "pause", "resume", "pause", "resume", "pause", "resume",
                                                         "seek 5.0", "seek 7.5", "speed 1.5", "pause", "stop"]])
    }

    func testAPreviewOfAPendingRecordingNeverCounts() async throws {
        let pending = try recording(.pending)
        let started = try await play(pending)
        XCTAssertFalse(started.playback.counts)
        _ = try await player.stop()
        let ended = try await play(pending)
        factory.playbacks[1].end(.completed)
        let status = await idle()
        XCTAssertEqual(status.lastEnded?.session, ended.playback.session)
        XCTAssertEqual(status.lastEnded?.reason, .completed)
        XCTAssertEqual(status.lastEnded?.counted, false)
        XCTAssertEqual(try plays(pending), 0)
    }

    func testANewPlayReplacesTheOneInProgressAndBothCount() async throws {
        let first = try recording(), second = try recording()
        _ = try await play(first)
        let next = try await play(second)
        XCTAssertEqual(next.replaced?.recordingID, first.id)
        XCTAssertEqual(next.replaced?.reason, .replaced)
        XCTAssertEqual(next.replaced?.counted, true)
        XCTAssertEqual(factory.playbacks[0].calls.last, "stop", "the first playback's device was let go before the second opened")
        XCTAssertEqual(next.playback.recording.id, second.id)
        await player.shutdown()
        let afterShutdown = await player.status()
        XCTAssertEqual(afterShutdown.lastEnded?.reason, .shutdown)
        XCTAssertEqual(try plays(first), 1)
        XCTAssertEqual(try plays(second), 1, "a playback ended by shutdown counts")
    }

    func testAPlaybackThatEndsByItselfCountsAndAFailureSaysWhy() async throws {
        let memo = try recording()
        _ = try await play(memo)
        factory.playbacks[0].end(.completed)
        var status = await idle()
        XCTAssertEqual(status.lastEnded?.reason, .completed)
        XCTAssertEqual(try plays(memo), 1)

        _ = try await play(memo)
        factory.playbacks[1].end(.failed(.failed(device: "memory:speaker", call: "snd_pcm_writei", code: -19)))
        status = await idle()
        XCTAssertEqual(status.lastEnded?.reason, .failed)
        XCTAssertEqual(status.lastEnded?.counted, true, "every ended playback of a saved recording counts")
        XCTAssertTrue(status.lastEnded?.error?.contains("playback device 'memory:speaker' failed: snd_pcm_writei") == true,
                      status.lastEnded?.error ?? "no error")
        XCTAssertEqual(try plays(memo), 2)
    }

    /// The playback thread's own end and a stop request at the same moment: one end, one count.
    func testAnEndByItselfRacingAStopCountsOnce() async throws {
        let memo = try recording()
        for round in 1...20 {
            _ = try await play(memo)
            let session = try XCTUnwrap(factory.playbacks.last)
            let player = self.player!
            let stop = Task { try? await player.stop() }
            session.end(.completed)
            _ = await stop.value
            _ = await idle()
            XCTAssertEqual(try plays(memo), round)
        }
    }

    func testDeletingTheRecordingThatPlaysEndsItWithoutCounting() async throws {
        let memo = try recording(), other = try recording()
        _ = try await play(memo)
        await player.stopIfPlaying(other.id)
        var playing = await player.status().playback
        XCTAssertNotNil(playing, "another recording's deletion leaves it playing")
        await player.stopIfPlaying(memo.id, enhanced: true)
        playing = await player.status().playback
        XCTAssertNotNil(playing, "removing an enhanced copy stops only the copy's playback")
        await player.stopIfPlaying(memo.id)
        let status = await player.status()
        XCTAssertNil(status.playback)
        XCTAssertEqual(status.lastEnded?.reason, .deleted)
        XCTAssertEqual(status.lastEnded?.counted, false)
        XCTAssertEqual(try plays(memo), 0)
        _ = try await play(other)
        await player.stopForDeletion()
        let afterAll = await player.status()
        XCTAssertEqual(afterAll.lastEnded?.reason, .deleted)
        XCTAssertEqual(try plays(other), 0)
    }

    /// Each refusal is said with what to change, and the playback in progress plays on untouched.
    func testBadRequestsAreRefusedAndChangeNothing() async throws {
        let memo = try recording()
        do { _ = try await player.stop(); XCTFail("stop with nothing playing") } catch {
            guard case .notPlaying = error else { return XCTFail("\(error)") }
        }
        do { _ = try await player.pause(); XCTFail("pause with nothing playing") } catch {
            guard case .notPlaying = error else { return XCTFail("\(error)") }
        }
        let playing = try await play(memo)

        let recordingNow = try recording(.recording)
        let missing = try recording(file: false)
        let refusals: [(String, () async throws -> Void)] = [
            ("a take being recorded", { _ = try await self.play(recordingNow) }),
            ("a file that is gone", { _ = try await self.play(missing) }),
            ("a position past the end", { _ = try await self.play(memo, from: 10) }),
            ("a negative position", { _ = try await self.play(memo, from: -1) }),
            ("a speed of 3", { _ = try await self.play(memo, speed: 3) }),
            ("a speed change to 0.25", { _ = try await self.player.setSpeed(0.25) }),
            ("a seek with both by and to", { _ = try await self.player.seek(SeekRequest(by: 1, to: 2)) }),
            ("a seek to nowhere", { _ = try await self.player.seek(SeekRequest(to: .nan)) }),
        ]
        for (what, request) in refusals {
            do {
                try await request()
                XCTFail("\(what) was accepted")
            } catch {
                guard let error = error as? EngineError else { XCTFail("\(what): \(error)"); continue }
                switch error {
                case .invalidState(let id, .recording, "play", _): XCTAssertEqual(id, recordingNow.id, what)
                case .fileMissing(let id, _): XCTAssertEqual(id, missing.id, what)
                case .invalidValue(let field, let detail): XCTAssertFalse(field.isEmpty || detail.isEmpty, what)
                default: XCTFail("\(what): \(error)")
                }
            }
        }
        let status = await player.status()
        XCTAssertEqual(status.playback?.session, playing.playback.session, "the playback in progress plays on")
        XCTAssertEqual(factory.playbacks.count, 1, "no device was opened for a refused request")
        XCTAssertEqual(factory.playbacks[0].calls, ["speed 1.0", "start 0.0"])
        XCTAssertNil(status.lastEnded)

        // The device cannot be opened: said with its name; the playback in progress was ended
        // (replaced) first, and counts.
        factory.openError.withLock { $0 = .unavailable(device: "memory:speaker", call: "snd_pcm_open", code: -16) }
        do {
            _ = try await play(memo)
            XCTFail("a play on a busy device")
        } catch {
            guard case .playback(.unavailable(let device, "snd_pcm_open", -16)) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(device, "memory:speaker")
        }
        let afterFailure = await player.status()
        XCTAssertNil(afterFailure.playback)
        XCTAssertEqual(try plays(memo), 1)
    }
}
