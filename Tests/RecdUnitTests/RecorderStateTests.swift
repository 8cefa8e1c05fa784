// The Recorder's state machine in milliseconds: its sessions come from a factory of in-memory takes
// (the real AudioRecordingSession and AudioPipeline threads, fed by a MemoryCaptureSource, writing
// raw samples into the take's file), its catalog is a real one in a temporary directory. What the
// devices and media workers do is the integration suite's (RecordingTests, PauseTests, ...).
import Capture
import Catalog
import Engine
import Foundation
import Logging
import MediaWire
import Metering
import RecdAPI
import Storage   // FinishedFile's memberwise initializer
import Synchronization
import XCTest

/// What a `FileSink` received, read by the test.
final class SinkLog: Sendable {
    struct Counts { var frames = 0, flushes = 0, finishes = 0 }
    let counts = Mutex(Counts())
    var frames: Int { counts.withLock { $0.frames } }
}

/// The sound's sink of an in-memory take: the samples appended to the take's file as they are (a
/// worker would append them encoded). With `failAfterFrames`, a write past it fails as one does when
/// the media worker writing the file dies.
final class FileSink: AudioSink {
    private let file: FileHandle
    private let log: SinkLog
    private let failAfterFrames: Int?
    private var closed = false

    init(path: String, log: SinkLog, failAfterFrames: Int?) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw MediaWorkerError.failed("cannot create \(path)")
        }
        file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        self.log = log
        self.failAfterFrames = failAfterFrames
    }

    func write(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> Int {
        if let failAfterFrames, log.frames + frames > failAfterFrames {
            throw MediaWorkerError.died(pid: 0, operation: "appendAudio", status: "was killed by signal 9")
        }
        try file.write(contentsOf: Data(buffer: samples))
        log.counts.withLock { $0.frames += frames }
        return frames
    }

    func flush() throws { log.counts.withLock { $0.flushes += 1 } }

    func finish() throws {
        // Called again after a failed write (the pipeline closes the file as well as it can).
        guard !closed else { return }
        closed = true
        try file.close()
        log.counts.withLock { $0.finishes += 1 }
    }
}

/// One in-memory take: `AudioRecordingSession` over a `MemoryCaptureSource` and a `FileSink`. It
/// records what the Recorder asked of it; finalizing says what the sink got instead of remuxing the
/// file in a media worker.
final class MemoryTake: RecordingSession, @unchecked Sendable {
    let source: any CaptureSource
    let sink: SinkLog
    private let session: AudioRecordingSession
    private let calls = Mutex<[String]>([])

    init(source: any CaptureSource, sink: SinkLog, session: AudioRecordingSession) {
        self.source = source; self.sink = sink; self.session = session
    }

    /// What the Recorder called, in order: start, pause, resume, stop, finalize.
    var called: [String] { calls.withLock { $0 } }
    private func record(_ call: String) { calls.withLock { $0.append(call) } }

    var path: String { session.path }
    func start() throws -> SessionStart { record("start"); return try session.start() }
    func stop() -> (CaptureStats, (any Error)?) { record("stop"); return session.stop() }
    var stats: CaptureStats { session.stats }
    func waveform() -> WaveformData? { session.waveform() }
    func loudness() -> Loudness? { session.loudness() }
    var poster: Data? { nil }
    var video: VideoCaptureInfo? { nil }
    func finalize(data: DataDirectory, logger: Logger) -> FinishedFile {
        record("finalize")
        return FinishedFile(duration: Double(sink.frames) / Double(source.sampleRate), sizeBytes: FileOps.size(path), packets: nil)
    }
    var audioFormats: (device: AudioFormatInfo, recorded: AudioFormatInfo)? { session.audioFormats }
    func setPaused(_ paused: Bool) { record(paused ? "pause" : "resume"); session.setPaused(paused) }
    func waitUntilPauseWritten(timeoutMs: Int) -> Bool { session.waitUntilPauseWritten(timeoutMs: timeoutMs) }
}

/// Makes `MemoryTake`s as `plan` says, and keeps them for the test.
final class MemorySessionFactory: RecordingSessionFactory {
    struct Plan: Sendable {
        /// Periods at the pace of a device (10 ms each), or all at once.
        var paced = false
        /// The device cannot be opened.
        var openError: CaptureError?
        /// The device is lost after this many frames.
        var failAtFrame: Int64?
        /// The worker writing the file dies at the write that would pass this many frames.
        var sinkFailsAfterFrames: Int?
    }

    /// Two seconds of 440 Hz at 48 kHz mono: what every take "captures".
    static let tone = MemoryCaptureSource.tone(seconds: 2)
    static let toneFrames = tone.count

    let plan: Plan
    private let made = Mutex<[MemoryTake]>([])
    init(_ plan: Plan = Plan()) { self.plan = plan }

    var takes: [MemoryTake] { made.withLock { $0 } }

    func makeSession(for take: RecordingSessionRequest) throws -> any RecordingSession {
        if let openError = plan.openError { throw openError }
        // Listening's takes come with their source (a tap of its microphone); the others "capture" the tone.
        let source = take.source ?? MemoryCaptureSource(samples: Self.tone, periodFrames: 480, paced: plan.paced, failAtFrame: plan.failAtFrame)
        let log = SinkLog()
        let path = take.path, failAfter = plan.sinkFailsAfterFrames
        let session = AudioRecordingSession(path: path, source: source,
                                            sink: { _ in try FileSink(path: path, log: log, failAfterFrames: failAfter) },
                                            syncIntervalMs: 0, onMeter: take.onMeter, onFault: take.onFault)
        let memory = MemoryTake(source: source, sink: log, session: session)
        made.withLock { $0.append(memory) }
        return memory
    }
}

/// Every event the hub publishes but meters, kept in order.
final class EventLog: Sendable {
    private final class Received: Sendable { let payloads = Mutex<[EventPayload]>([]) }
    private let received = Received()
    private let listener: Task<Void, Never>

    init(_ hub: EventHub) {
        let (_, stream) = hub.subscribe(types: Set(EventType.allCases).subtracting([.meter]), heartbeats: false)
        listener = Task { [received] in
            for await delivery in stream {
                if case .event(let e) = delivery { received.payloads.withLock { $0.append(e.payload) } }
            }
        }
    }
    deinit { listener.cancel() }

    var all: [EventPayload] { received.payloads.withLock { $0 } }
    var stopped: [RecordingStoppedEvent] { all.compactMap { if case .recordingStopped(let e) = $0 { e } else { nil } } }
    var libraryChanges: [LibraryChangedEvent.Change] { all.compactMap { if case .libraryChanged(let e) = $0 { e.change } else { nil } } }
    var started: [Recording] { all.compactMap { if case .recordingStarted(let r) = $0 { r } else { nil } } }
    /// Pauses (true) and resumes (false), in order.
    var pauses: [Bool] {
        all.compactMap {
            switch $0 {
            case .recordingPaused: true
            case .recordingResumed: false
            default: nil
            }
        }
    }
}

final class RecorderStateTests: XCTestCase {
    var dir: URL!
    var catalog: Catalog!
    var events: EventHub!
    var log: EventLog!
    var recorder: Recorder?

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-recorder-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        catalog = try Catalog(path: dir.appendingPathComponent("catalog.sqlite").path)
        events = EventHub()
        log = EventLog(events)
    }

    override func tearDown() async throws {
        // A test that failed half-way leaves no capture threads behind.
        await recorder?.shutdown()
        try? FileManager.default.removeItem(at: dir)
    }

    func makeRecorder(_ plan: MemorySessionFactory.Plan = .init()) throws -> (Recorder, MemorySessionFactory) {
        var config = EngineConfiguration(dataDirectory: dir, captureDevice: "memory", timeZone: TimeZone(identifier: "UTC"),
                                         minFreeBytes: 0)
        config.syncIntervalMs = 0
        try config.dataDirectory.create()
        let factory = MemorySessionFactory(plan)
        let recorder = Recorder(config: config, catalog: catalog, events: events,
                                logger: Logger(label: "recd.test.recorder"), sessions: factory)
        self.recorder = recorder
        return (recorder, factory)
    }

    func start(_ recorder: Recorder) async throws(EngineError) -> StartRecordingResponse {
        try await recorder.start(StartRecordingRequest(), receivedAt: DispatchTime.now().uptimeNanoseconds)
    }

    /// Waits (at most 2 s) until `condition` holds.
    func eventually(_ what: String, _ condition: () async -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            if await condition() { return }
            try? await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("not within 2 s: \(what)")
    }

    func row(_ id: UUID) throws -> Recording? { try catalog.recording(id: id) }
    func fileExists(_ r: Recording) -> Bool { FileManager.default.fileExists(atPath: dir.appendingPathComponent(r.file).path) }
    func rows() throws -> Int { try catalog.countsByState().values.reduce(0, +) }

    func testAStartRecordsOneTakeAndRefusesASecondWhileItRuns() async throws {
        let (recorder, factory) = try makeRecorder()
        let started = try await start(recorder)
        let id = started.recording.id
        XCTAssertEqual(started.recording.state, .recording)
        XCTAssertEqual(started.device, "memory")
        XCTAssertEqual(started.deviceFormat, AudioFormatInfo(sampleFormat: "S16_LE", sampleRate: 48_000, channels: 1))
        XCTAssertEqual(try row(id)?.state, .recording, "the row is written before the device opens")
        await eventually("recording.started") { self.log.started.map(\.id) == [id] }
        let active = await recorder.active()
        XCTAssertEqual(active?.id, id)
        XCTAssertEqual(active?.activity, .recording)

        do {
            _ = try await start(recorder)
            XCTFail("a second start while recording")
        } catch {
            guard case .alreadyRecording(let busy, let title) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(busy, id)
            XCTAssertEqual(title, started.recording.title)
        }
        XCTAssertEqual(factory.takes.count, 1, "the refused start opened no device")
        XCTAssertEqual(try rows(), 1)
        XCTAssertEqual(factory.takes[0].called, ["start"])
    }

    func testStopAndSaveWritesWhatWasCapturedIntoTheCatalog() async throws {
        let (recorder, factory) = try makeRecorder()
        let id = try await start(recorder).recording.id
        let take = factory.takes[0]
        // Unpaced: the whole tone is captured at once; the stop writes it all out.
        await eventually("all the tone captured") { take.source.stats.framesCaptured == Int64(MemorySessionFactory.toneFrames) }
        let title = MetadataPatch(title: .value("Kept"))
        let reply = try await recorder.stop(StopRecordingRequest(then: .save, metadata: title))

        XCTAssertFalse(reply.discarded)
        XCTAssertEqual(reply.capture.framesCaptured, Int64(MemorySessionFactory.toneFrames))
        XCTAssertEqual(reply.capture.droppedFrames, 0)
        XCTAssertEqual(take.sink.frames, MemorySessionFactory.toneFrames, "every frame captured is in the file")
        let saved = try XCTUnwrap(try row(id))
        XCTAssertEqual(saved, reply.recording)
        XCTAssertEqual(saved.state, .ready)
        XCTAssertEqual(saved.title, "Kept")
        XCTAssertEqual(try XCTUnwrap(saved.duration), 2.0, accuracy: 1e-9)
        XCTAssertEqual(saved.sizeBytes, Int64(MemorySessionFactory.toneFrames * 2))
        XCTAssertNotNil(saved.loudness, "measured as it was written")
        XCTAssertNotNil(try catalog.waveform(id: id), "the waveform of what was written is stored")
        XCTAssertEqual(take.called, ["start", "stop", "finalize"])
        XCTAssertEqual(take.sink.counts.withLock { $0.finishes }, 1)
        await eventually("recording.stopped") { self.log.stopped.count == 1 }
        let stopped = try XCTUnwrap(log.stopped.last)
        XCTAssertEqual(stopped.reason, .stopped)
        XCTAssertEqual(stopped.recording?.state, .ready)
        XCTAssertNil(stopped.error)
        await eventually("the library told") { self.log.libraryChanges == [.created, .saved] }
        let idle = await recorder.active()
        XCTAssertNil(idle)

        do {
            _ = try await recorder.stop(StopRecordingRequest())
            XCTFail("a stop with nothing recording")
        } catch {
            guard case .notRecording = error else { return XCTFail("\(error)") }
        }
    }

    func testAPauseIsLeftOutOfElapsedTimeAndOutOfTheFile() async throws {
        let (recorder, factory) = try makeRecorder(.init(paced: true))
        let id = try await start(recorder).recording.id
        let take = factory.takes[0]
        let began = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(40))

        let paused = try await recorder.setPaused(true)
        XCTAssertEqual(paused.recordingID, id)
        XCTAssertTrue(paused.paused)
        XCTAssertGreaterThanOrEqual(paused.elapsed, 0.03)
        // The reply came once what was recorded before the pause was written (a flush of the sink).
        XCTAssertGreaterThanOrEqual(take.sink.counts.withLock { $0.flushes }, 1)
        let again = try await recorder.setPaused(true)
        XCTAssertTrue(again.paused, "asking twice changes nothing")
        try await Task.sleep(for: .milliseconds(100))
        let during = await recorder.active()?.pause
        XCTAssertEqual(during?.paused, true)
        XCTAssertGreaterThanOrEqual(during?.pausedFor ?? 0, 0.1)
        XCTAssertEqual(during?.elapsed ?? -1, paused.elapsed, accuracy: 0.01, "elapsed time stands still while paused")

        let resumed = try await recorder.setPaused(false)
        XCTAssertFalse(resumed.paused)
        XCTAssertGreaterThanOrEqual(resumed.pausedFor ?? 0, 0.1)
        XCTAssertGreaterThanOrEqual(resumed.pausedTotal, 0.1)
        try await Task.sleep(for: .milliseconds(40))
        let report = await recorder.active()
        let status = try XCTUnwrap(report?.pause)
        let wall = (ContinuousClock.now - began).seconds
        XCTAssertLessThanOrEqual(status.elapsed, wall - status.pausedTotal + 0.05, "the pause is not counted")
        XCTAssertGreaterThanOrEqual(status.elapsed, 0.07)

        let reply = try await recorder.stop(StopRecordingRequest())
        XCTAssertEqual(reply.recording?.state, .pending)
        XCTAssertEqual(take.called, ["start", "pause", "resume", "stop", "finalize"])
        // The file holds the capture less the pause (less a period and a fade): at least 70 ms less.
        let captured = Int(reply.capture.framesCaptured)
        XCTAssertLessThan(take.sink.frames, captured - 48_000 * 7 / 100)
        XCTAssertGreaterThan(take.sink.frames, 48_000 * 7 / 100)
        XCTAssertEqual(try XCTUnwrap(try row(id)?.duration), Double(take.sink.frames) / 48_000, accuracy: 1e-9)
        await eventually("one pause and one resume told") { self.log.pauses == [true, false] }

        do {
            _ = try await recorder.setPaused(true)
            XCTFail("a pause with nothing recording")
        } catch {
            guard case .notRecording = error else { return XCTFail("\(error)") }
        }
    }

    func testADiscardRemovesTheTakesFileAndRow() async throws {
        let (recorder, factory) = try makeRecorder()
        let started = try await start(recorder)
        let take = factory.takes[0]
        await eventually("the file written") { take.sink.frames > 0 }
        XCTAssertTrue(fileExists(started.recording))

        let reply = try await recorder.stop(StopRecordingRequest(then: .discard))
        XCTAssertTrue(reply.discarded)
        XCTAssertNil(reply.recording)
        XCTAssertNil(try row(started.recording.id))
        XCTAssertFalse(fileExists(started.recording))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("Recordings").path), [])
        XCTAssertEqual(take.called, ["start", "stop"], "a take thrown away is not finalized")
        await eventually("recording.stopped, discarded") { self.log.stopped.map(\.discarded) == [true] }
        await eventually("the library told") { self.log.libraryChanges == [.created, .discarded] }
        let idle = await recorder.active()
        XCTAssertNil(idle)
    }

    func testALostDeviceEndsTheTakeAndKeepsWhatItCapturedAsPending() async throws {
        let (recorder, factory) = try makeRecorder(.init(paced: true))
        let id = try await start(recorder).recording.id
        let take = factory.takes[0]
        await eventually("some sound captured") { take.source.stats.framesCaptured >= 2400 }
        (take.source as! MemoryCaptureSource).fail()   // unplugged

        await eventually("the take ended by itself") { self.log.stopped.count == 1 }
        await eventually("the recorder idle") { await recorder.active() == nil }
        let stopped = try XCTUnwrap(log.stopped.first)
        XCTAssertEqual(stopped.reason, .fault)
        XCTAssertFalse(stopped.discarded)
        XCTAssertTrue(stopped.error?.contains("capture device 'memory' failed") ?? false, stopped.error ?? "no error")
        let kept = try XCTUnwrap(try row(id))
        XCTAssertEqual(kept.state, .pending, "kept for the user to save or discard")
        XCTAssertTrue(fileExists(kept))
        let captured = Int(take.source.stats.framesCaptured)
        XCTAssertEqual(take.sink.frames, captured, "all that was captured before the loss is in the file")
        XCTAssertEqual(try XCTUnwrap(kept.duration), Double(captured) / 48_000, accuracy: 1e-9)
        let fault = await recorder.lastFault
        XCTAssertEqual(fault?.recordingID, id)
        XCTAssertEqual(take.called, ["start", "stop", "finalize"])

        // The recorder takes the next recording.
        let next = try await start(recorder)
        XCTAssertNotEqual(next.recording.id, id)
        XCTAssertEqual(factory.takes.count, 2)
    }

    func testADeviceLostAtAGivenFrameKeepsExactlyWhatCameBefore() async throws {
        // Unpaced, the loss may come while the start is still being answered (`starting`): it is
        // then acted on as soon as the take runs.
        let (recorder, factory) = try makeRecorder(.init(failAtFrame: 24_000))
        let id = try await start(recorder).recording.id
        await eventually("the take ended by itself") { self.log.stopped.count == 1 }
        await eventually("the recorder idle") { await recorder.active() == nil }
        XCTAssertEqual(log.stopped.first?.reason, .fault)
        let kept = try XCTUnwrap(try row(id))
        XCTAssertEqual(kept.state, .pending)
        XCTAssertEqual(try XCTUnwrap(kept.duration), 0.5, accuracy: 1e-9)
        XCTAssertEqual(factory.takes[0].sink.frames, 24_000)
    }

    func testALostWorkerEndsTheTakeAndKeepsWhatReachedTheFile() async throws {
        // The encoder writes blocks of 16384 frames: two reach the file, the third write fails.
        let written = 2 * AudioPipeline.encoderBlockFrames
        let (recorder, factory) = try makeRecorder(.init(sinkFailsAfterFrames: written))
        let id = try await start(recorder).recording.id
        await eventually("the take ended by itself") { self.log.stopped.count == 1 }
        await eventually("the recorder idle") { await recorder.active() == nil }
        let stopped = try XCTUnwrap(log.stopped.first)
        XCTAssertEqual(stopped.reason, .fault)
        XCTAssertTrue(stopped.error?.contains("the media worker (pid 0) was killed by signal 9") ?? false, stopped.error ?? "no error")
        let kept = try XCTUnwrap(try row(id))
        XCTAssertEqual(kept.state, .pending)
        XCTAssertEqual(try XCTUnwrap(kept.duration), Double(written) / 48_000, accuracy: 1e-9)
        XCTAssertEqual(factory.takes[0].sink.frames, written)
        XCTAssertEqual(factory.takes[0].sink.counts.withLock { $0.finishes }, 1, "the file closed as well as it could be")
        let fault = await recorder.lastFault
        XCTAssertEqual(fault?.recordingID, id)
    }

    func testShutdownDuringATakeKeepsItAsPending() async throws {
        let (recorder, factory) = try makeRecorder(.init(paced: true))
        let id = try await start(recorder).recording.id
        let take = factory.takes[0]
        await eventually("some sound captured") { take.source.stats.framesCaptured >= 2400 }

        await recorder.shutdown()
        let idle = await recorder.active()
        XCTAssertNil(idle, "shutdown returns once the take is finished")
        await eventually("recording.stopped at shutdown") { self.log.stopped.map(\.reason) == [.shutdown] }
        let kept = try XCTUnwrap(try row(id))
        XCTAssertEqual(kept.state, .pending)
        XCTAssertEqual(take.called, ["start", "stop", "finalize"])
        XCTAssertEqual(try XCTUnwrap(kept.duration), Double(take.sink.frames) / 48_000, accuracy: 1e-9)
        XCTAssertEqual(Int64(take.sink.frames), take.source.stats.framesCaptured)
        let fault = await recorder.lastFault
        XCTAssertNil(fault, "a shutdown is no fault")
    }

    func testAStartThatFailsAtTheDeviceLeavesTheRecorderIdleAndTheCatalogEmpty() async throws {
        // The device cannot be opened.
        let missing = CaptureError.unavailable(device: "memory", call: "snd_pcm_open", code: -ENOENT)
        let (recorder, factory) = try makeRecorder(.init(openError: missing))
        do {
            _ = try await start(recorder)
            XCTFail("a start on a missing device")
        } catch {
            guard case .device(.unavailable(let device, "snd_pcm_open", _), .none) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(device, "memory")
        }
        XCTAssertTrue(factory.takes.isEmpty)
        try await assertNothingRecorded(recorder)
    }

    func testAStartWhoseDeviceFailsBeforeItsFirstBufferLeavesNothingBehind() async throws {
        // The device opens, then fails at once: the sink had made the file; the start removes it.
        let (recorder, factory) = try makeRecorder(.init(failAtFrame: 0))
        do {
            _ = try await start(recorder)
            XCTFail("a start on a device that delivers nothing")
        } catch {
            guard case .device(.failed(let device, "snd_pcm_readi", _), .none) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(device, "memory")
        }
        XCTAssertEqual(factory.takes.first?.called, ["start"])
        try await assertNothingRecorded(recorder)
        // Capture had not begun: a failed start is the start's error, no fault.
        let fault = await recorder.lastFault
        XCTAssertNil(fault)
    }

    func assertNothingRecorded(_ recorder: Recorder, file: StaticString = #filePath, line: UInt = #line) async throws {
        let active = await recorder.active()
        XCTAssertNil(active, "idle", file: file, line: line)
        XCTAssertEqual(try rows(), 0, "no row left", file: file, line: line)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("Recordings").path), [],
                       "no file left", file: file, line: line)
        // Everything published so far has reached the log once a marker published now has.
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: nil, change: .recovered)))
        await eventually("the log caught up") { self.log.libraryChanges.contains(.recovered) }
        XCTAssertTrue(log.started.isEmpty, "nothing announced", file: file, line: line)
        XCTAssertTrue(log.stopped.isEmpty, file: file, line: line)
    }
}

final class AudioRecordingSessionTests: XCTestCase {
    /// A take's start answers once its writer has caught up on what capture gathered while the writer
    /// started: with a slow worker start the ring held seconds no file did, and a power cut right
    /// after the reply lost them (2.65 s in the emulated guest). Here the writer takes 0.6 s to come
    /// while a paced device delivers; when start returns, at most a block (and a period) is unwritten.
    func testAStartAnswersOnceTheWriterHasCaughtUpOnWhatCaptureGatheredMeanwhile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recd-session-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("take.raw").path
        let source = MemoryCaptureSource(samples: MemoryCaptureSource.tone(seconds: 5), periodFrames: 480, paced: true)
        let log = SinkLog()
        let session = AudioRecordingSession(path: path, source: source, sink: { _ in
            Thread.sleep(forTimeInterval: 0.6)   // a media worker that is slow to start
            return try FileSink(path: path, log: log, failAfterFrames: nil)
        }, syncIntervalMs: 0, onFault: { XCTFail("fault: \($0)") })
        let started = try session.start()
        let captured = Int(source.stats.framesCaptured)
        let written = log.frames
        _ = session.stop()
        XCTAssertTrue(started.caughtUp, "the start says the writer caught up")
        XCTAssertGreaterThan(captured, 24_000, "half a second gathered while the writer started")
        XCTAssertGreaterThanOrEqual(written, captured - AudioPipeline.encoderBlockFrames - 480, "captured \(captured)")
    }
}
