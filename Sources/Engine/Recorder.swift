// The recording state machine: idle → starting → recording → stopping → idle, and held (a delete-all
// or a repair running on BlockingPool) from idle or recording back to where it was.
import Capture
import Catalog
import Foundation
import Logging
import MediaWire
import Metering
import RecdAPI
import Storage

/// Owns the one active recording of the capture device. All state is in `state`; every method
/// re-checks it after each `await`, because other requests may run in between.
public actor Recorder {
    struct Active: Sendable {
        var session: any RecordingSession
        /// The take's file and row (Storage's protocol for them).
        var take: NewTake
        var id: UUID { take.recording.id }
        var startedAt: ContinuousClock.Instant
        /// When the pause under way began; nil while recording.
        var pausedAt: ContinuousClock.Instant?
        /// Pauses that have ended.
        var pausedBefore: Duration = .zero

        func pauseState(at now: ContinuousClock.Instant = .now) -> RecordingPauseState {
            let current = pausedAt.map { now - $0 }
            let total = pausedBefore + (current ?? .zero)
            return RecordingPauseState(recordingID: id, paused: pausedAt != nil, elapsed: (now - startedAt - total).seconds,
                                       pausedFor: current?.seconds, pausedTotal: total.seconds)
        }
    }

    enum State: Sendable {
        case idle
        /// The row is being written to the catalog, then the device opened. A fault reported now is
        /// kept and acted on as soon as the recording is running. `title`: the new row's, for a start
        /// refused meanwhile (the row may not be written yet).
        case starting(UUID, title: String, fault: String?)
        case recording(Active)
        /// Capture is ending and the file is being finalized; `done` completes when it is.
        case stopping(UUID, done: Task<Void, Never>?)
        /// A delete-all or a repair runs on `BlockingPool`: no recording starts or stops until it has
        /// ended (they wait for `done`), while status and every other request are answered.
        case held(Hold)
    }

    struct Hold: Sendable {
        /// "delete all", "repair": for the log.
        var operation: String
        /// The recording in progress while a repair runs (a repair leaves it alone; delete-all holds
        /// only an idle recorder).
        var recording: Active?
        /// A device or disk fault of that recording reported meanwhile, acted on when the hold ends.
        var fault: String?
        var done: Task<Void, Never>
    }

    private var state: State = .idle {
        didSet { resumeStateWaiters() }
    }
    /// Callers waiting out a start or a stop under way (`nextStateChange`), resumed at every change of
    /// `state`; each looks again at what it is now.
    private var stateWaiters: [CheckedContinuation<Void, Never>] = []
    /// The last recording that ended by itself (device or disk fault), for status.
    public private(set) var lastFault: FaultReport?
    private let config: EngineConfiguration
    private let catalog: Catalog
    private let events: EventHub
    private let logger: Logger
    /// Makes each take's session: the devices and media workers in recd (`DeviceSessionFactory`),
    /// memory in the unit tests.
    private let sessions: any RecordingSessionFactory
    /// Meters of the recording being started wait for its `recording.started`.
    private var gate: EventGate?

    package init(config: EngineConfiguration, catalog: Catalog, events: EventHub, logger: Logger, sessions: any RecordingSessionFactory) {
        self.config = config; self.catalog = catalog; self.events = events; self.logger = logger; self.sessions = sessions
    }

    private func refuseIfBusy() throws(EngineError) {
        let busy: UUID
        switch state {
        case .idle: return
        case .starting(let id, let title, _): throw .alreadyRecording(active: id, title: title)
        case .stopping(let id, _): busy = id
        case .recording(let a): busy = a.id
        case .held(let h):
            guard let a = h.recording else { return }
            busy = a.id
        }
        let title = (try? catalog.recording(id: busy))??.title ?? "(being stopped)"
        throw .alreadyRecording(active: busy, title: title)
    }

    /// Starts a recording. `receivedAt` is when the request arrived: the reply's latency is measured
    /// from it to the first buffer the device delivered.
    public func start(_ request: StartRecordingRequest, receivedAt: UInt64) async throws(EngineError) -> StartRecordingResponse {
        try await start(request, receivedAt: receivedAt, source: nil)
    }

    /// Starts a take of listening's (issue 49) from `source`, a tap of the microphone listening holds
    /// open (its pre-roll already captured), instead of the device.
    func startUtterance(_ request: StartRecordingRequest, source: any CaptureSource) async throws(EngineError) -> Recording {
        try await start(request, receivedAt: DispatchTime.now().uptimeNanoseconds, source: source).recording
    }

    private func start(_ request: StartRecordingRequest, receivedAt: UInt64, source: (any CaptureSource)?) async throws(EngineError) -> StartRecordingResponse {
        await waitWhileHeld()
        try refuseIfBusy()
        let change = try storageCall(MetadataRules.validate(request.metadata))
        if request.type == .audio && !request.audio {
            throw .invalidValue(field: "audio", detail: "false is for a silent video (type \"video\"); an audio recording records sound")
        }
        let format = try config.format(request.format, video: request.type == .video)
        try storageCall(FileOps.requireFree(config.minFreeBytes, in: config.dataDirectory.recordings.path))
        let recording = newRow(request, change: change, format: format, source: source == nil ? .record : .listen)
        let id = recording.id
        state = .starting(id, title: recording.title, fault: nil)
        let take = try await begin(recording)
        let (session, started) = try await openSession(request, format: format, take: take, source: source)
        let firstBufferAt = started.firstAt
        guard case .starting(id, _, let fault) = state else {
            preconditionFailure("Recorder state changed during start: \(state)")
        }
        // Elapsed time counts from the first buffer, the file's first sample: capture runs while the
        // encoder's worker starts (seconds on a loaded or emulated machine), and what it captured
        // meanwhile is in the file, so a clock started now would show less than the file holds.
        let sinceFirstBuffer = Duration.nanoseconds(Int64(bitPattern: DispatchTime.now().uptimeNanoseconds &- firstBufferAt))
        let active = Active(session: session, take: take, startedAt: .now - max(.zero, sinceFirstBuffer))
        state = .recording(active)
        let latencyMs = Double(firstBufferAt &- receivedAt) / 1e6
        let video = session.video
        let audioDevice = request.audio ? config.captureDevice : nil
        logStarted(id, audioDevice: audioDevice, video: video, latencyMs: latencyMs)
        if !started.caughtUp {
            logger.warning("recording \(id): its writer had not caught up with capture \(AudioRecordingSession.ringSeconds) s after the start (this machine encodes slower than real time?): what was captured meanwhile is in memory only until it does, and frames are dropped once the ring is full")
        }
        events.publish(.recordingStarted(recording))
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: id, change: .created)))
        gate?.openGate()
        if let fault { beginFinish(active, reason: .fault, error: fault) }
        let formats = session.audioFormats
        return StartRecordingResponse(recording: recording, device: audioDevice, deviceFormat: formats?.device,
                                      recordedFormat: formats?.recorded, video: video, startLatencyMs: latencyMs)
    }

    /// The new take's row, in the `recording` state, with the metadata asked for (else the automatic title).
    private func newRow(_ request: StartRecordingRequest, change: MetadataChange, format: RecordingFormat, source: RecordingSource) -> Recording {
        let id = UUID()
        let relative = DataDirectory.relativePath(id: id, type: request.type)
        var recording = Recording(id: id, type: request.type, state: .recording, title: "", notes: "", purpose: nil,
                                  createdAt: Date(), duration: nil, sizeBytes: nil, file: relative, playCount: 0,
                                  lastPlayedAt: nil, recovered: false, droppedFrames: 0, format: request.audio ? format : nil,
                                  source: source)
        var withTitle = change
        if withTitle.title == nil { withTitle.title = .some(nil) }
        MetadataRules.apply(withTitle, to: &recording, timeZone: config.timeZone)
        return recording
    }

    /// Writes the new take's row before anything is captured (`NewTake.begin`); back to idle when
    /// that fails.
    private func begin(_ recording: Recording) async throws(EngineError) -> NewTake {
        do {
            let (catalog, data) = (self.catalog, config.dataDirectory)
            return try await blockingCatalogCall { try NewTake.begin(recording, catalog: catalog, data: data) }
        } catch {
            state = .idle
            throw error
        }
    }

    /// Makes the take's session and starts it: the session and when its first buffer came. When that
    /// fails, the take's file and row are removed (`NewTake.abandon`) and the recorder is idle again.
    private func openSession(_ request: StartRecordingRequest, format: RecordingFormat, take: NewTake,
                             source: (any CaptureSource)?) async throws(EngineError) -> (any RecordingSession, SessionStart) {
        do {
            let gate = EventGate()
            self.gate = gate
            var asked = sessionRequest(request, format: format, id: take.recording.id, path: take.path, gate: gate)
            asked.source = source
            let (sessions, request) = (self.sessions, asked)
            return try await runBlocking {
                let s = try sessions.makeSession(for: request)
                return (s, try s.start())
            }
        } catch {
            let logger = self.logger
            _ = try? await runBlocking { take.abandon(logger: logger) }
            state = .idle
            throw map(error, file: take.path, request: request)
        }
    }

    private func logStarted(_ id: UUID, audioDevice: String?, video: VideoCaptureInfo?, latencyMs: Double) {
        let from = [audioDevice, video.map { "\($0.device) (\($0.width)x\($0.height) \($0.pixelFormat) at \(String(format: "%g", $0.fps)) fps, \($0.encoder))" }]
            .compactMap { $0 }.joined(separator: " + ")
        logger.info("recording \(id) started on \(from) (\(String(format: "%.1f", latencyMs)) ms to first buffer)")
    }

    /// What the factory is asked for: the take, its meters (held back until `gate` opens) and
    /// where its fault goes (this actor).
    private func sessionRequest(_ request: StartRecordingRequest, format: RecordingFormat, id: UUID, path: String,
                                gate: EventGate) -> RecordingSessionRequest {
        let events = self.events
        let interval = config.meterIntervalMs
        let rate = Double(config.sampleRate)
        let logger = self.logger
        let onMeter: @Sendable (LevelReading) -> Void = { reading in
            guard gate.isOpen, events.wantsMeters else { return }
            events.publish(.meter(MeterEvent(source: .recording, recordingID: id, time: Double(reading.endFrame) / rate,
                                             intervalMs: interval, channels: ChannelLevel.from(reading))))
        }
        let onFault: @Sendable (any Error) -> Void = { error in
            logger.error("recording \(id) ended by a fault: \(error)")
            Task { await self.fault(id: id, error: error) }
        }
        return RecordingSessionRequest(type: request.type, audio: request.audio, format: format, path: path,
                                       onMeter: onMeter, onFault: onFault)
    }

    /// A device error of a video recording says what can be recorded instead (the seed's Screen 5.2:
    /// no camera → audio only; no microphone → a silent video).
    func map(_ error: any Error, file: String, request: StartRecordingRequest) -> EngineError {
        var error = error
        // A camera whose first frames do not decode is a camera problem, not an internal error.
        if let rejected = error as? FrameRejected {
            error = CaptureError.videoUnsupported(device: config.video.device, detail: "its frames cannot be used: \(rejected.reason)")
        }
        guard request.type == .video, let e = error as? CaptureError else { return Self.map(error, file: file) }
        if e.isVideo {
            return .device(e, hint: "Camera required for video recordings: record audio-only instead (recctl record start, without --video).")
        }
        return .device(e, hint: "Microphone required for recordings with sound: you can still record video-only, a silent video (recctl record start --video-only).")
    }

    static func map(_ error: any Error, file: String) -> EngineError {
        switch error {
        case let e as EngineError: return e
        case let e as StorageError: return EngineError(e)
        case let e as CaptureError: return .device(e, hint: nil)
        case let e as FFmpegError: return e.isDiskFull ? .storage(file: file, operation: "write", underlying: e.description)
                                                       : .media(file: file, underlying: e)
        default: return .media(file: file, underlying: error)
        }
    }

    /// Pauses the recording in progress (`true`) or resumes it (`false`). The devices stay open and
    /// go on capturing; what they capture while paused is left out of the file (see `CapturePause`).
    /// Asking for the state the recording is already in changes nothing and says where it stands.
    /// Works while a repair holds the recorder (a pause starts or stops nothing).
    public func setPaused(_ paused: Bool) async throws(EngineError) -> RecordingPauseState {
        let (reply, session) = try applyPause(paused)
        // The reply says "paused" once what was recorded before the pause is on the disk: a kill
        // right after it keeps all of it. (Half a second at most: the capture applies the pause at
        // its next period, the encoder writes the open fragment.)
        if paused, let session {
            let written = await Self.onBlockingPool { session.waitUntilPauseWritten(timeoutMs: 500) }
            if !written { logger.warning("recording \(reply.recordingID): what came before the pause was not written within 500 ms") }
        }
        return reply
    }

    /// The state change of `setPaused`, in one actor turn; returns the session when it changed.
    private func applyPause(_ paused: Bool) throws(EngineError) -> (RecordingPauseState, (any RecordingSession)?) {
        var active: Active
        switch state {
        case .recording(let a): active = a
        case .held(let h) where h.recording != nil: active = h.recording!
        default: throw .notRecording
        }
        let now = ContinuousClock.now
        guard paused != (active.pausedAt != nil) else { return (active.pauseState(at: now), nil) }
        let ended = active.pausedAt.map { now - $0 }
        if paused {
            active.pausedAt = now
        } else {
            active.pausedBefore += ended ?? .zero
            active.pausedAt = nil
        }
        active.session.setPaused(paused)
        switch state {
        case .recording: state = .recording(active)
        case .held(var h): h.recording = active; state = .held(h)
        default: break
        }
        var reply = active.pauseState(at: now)
        if paused {
            events.publish(.recordingPaused(reply))
            logger.info("recording \(active.id) paused at \(String(format: "%.2f", reply.elapsed)) s")
        } else {
            reply.pausedFor = ended?.seconds
            events.publish(.recordingResumed(reply))
            logger.info("recording \(active.id) resumed after a pause of \(String(format: "%.2f", ended?.seconds ?? 0)) s")
        }
        return (reply, active.session)
    }

    /// Stops the active recording, finalizes its file and keeps, saves or discards it.
    public func stop(_ request: StopRecordingRequest) async throws(EngineError) -> StopRecordingResponse {
        try await stop(request, reason: .stopped)
    }

    /// Stops the recording `id` if it is the one in progress (listening's end of an utterance: a
    /// take started by hand meanwhile is left alone); nil when it is not (it ended by a fault).
    func stopIfActive(_ id: UUID, then: StopDisposition) async throws(EngineError) -> StopRecordingResponse? {
        await waitWhileHeld()
        guard case .recording(let active) = state, active.id == id else { return nil }
        return try await stop(StopRecordingRequest(then: then), reason: .stopped)
    }

    private func stop(_ request: StopRecordingRequest, reason: RecordingStoppedEvent.Reason) async throws(EngineError) -> StopRecordingResponse {
        await waitWhileHeld()
        guard case .recording(let active) = state else { throw .notRecording }
        // Validate before anything changes: a bad title leaves the recording running.
        let change = try storageCall(MetadataRules.validate(request.metadata))
        let work = Task { () -> Result<StopRecordingResponse, EngineError> in
            do { return .success(try await self.finish(active, then: request.then, change: change, reason: reason)) }
            catch { return .failure(error as? EngineError ?? .unexpected("\(error)")) }
        }
        state = .stopping(active.id, done: Task { _ = await work.value })
        let result = await work.value
        finished(active.id)
        return try result.get()
    }

    /// Ends capture, finalizes (unless discarding) and writes the outcome into the catalog.
    /// The caller has set `.stopping` (with a task shutdown can wait for) and sets `.idle` afterwards.
    /// Every end is told: when a step fails (a discard that cannot remove the take, a catalog write
    /// that does not go through), `recording.stopped` is still published — with the recording as it
    /// was kept and what failed — so listeners and systemd's STATUS= do not go on saying "recording".
    private func finish(_ active: Active, then: StopDisposition, change: MetadataChange,
                        reason: RecordingStoppedEvent.Reason, error: String? = nil) async throws(EngineError) -> StopRecordingResponse {
        do {
            return try await finishSteps(active, then: then, change: change, reason: reason, error: error)
        } catch let failure {
            let kept = try? catalog.recording(id: active.id)
            let what = [error, "the stop did not complete: \(failure)"].compactMap { $0 }.joined(separator: "; ")
            events.publish(.recordingStopped(RecordingStoppedEvent(recordingID: active.id, reason: reason, recording: kept,
                                                                   discarded: kept == nil, error: what,
                                                                   capture: active.session.stats)))
            if kept != nil {
                events.publish(.libraryChanged(LibraryChangedEvent(recordingID: active.id, change: .edited)))
            }
            throw failure
        }
    }

    /// A take's end in three steps: capture stopped (and the file finalized unless it is thrown
    /// away), then the take discarded, or kept with its outcome, waveform and poster.
    private func finishSteps(_ active: Active, then: StopDisposition, change: MetadataChange,
                             reason: RecordingStoppedEvent.Reason, error: String?) async throws(EngineError) -> StopRecordingResponse {
        let why: String
        switch reason {
        case .stopped: why = "stopped"
        case .fault: why = "ended by a fault (\(error ?? "unknown"))"
        case .shutdown: why = "stopped at shutdown"
        case .deleted: why = "deleted while recording"
        }
        let (stats, finished) = try await stopCapture(active, finalize: then != .discard)
        guard let finished else {
            try await discard(active, stats: stats)
            logger.info("recording \(active.id) \(why) and discarded")
            events.publish(.recordingStopped(RecordingStoppedEvent(recordingID: active.id, reason: reason, recording: nil,
                                                                   discarded: true, error: error, capture: stats)))
            events.publish(.libraryChanged(LibraryChangedEvent(recordingID: active.id, change: reason == .deleted ? .deleted : .discarded)))
            return StopRecordingResponse(recording: nil, discarded: true, capture: stats)
        }
        let recording = try await keep(active, finished, stats: stats, state: then == .save ? .ready : .pending, change: change)
        events.publish(.recordingStopped(RecordingStoppedEvent(recordingID: active.id, reason: reason, recording: recording,
                                                               discarded: false, error: error, capture: stats)))
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: active.id, change: recording.state == .ready ? .saved : .edited)))
        logger.info("recording \(active.id) \(why): \(recording.state.rawValue), \(finished.duration.map { String(format: "%.2f s", $0) } ?? "unknown duration"), \(stats.overruns) overruns, \(stats.droppedFrames) frames lost")
        return StopRecordingResponse(recording: recording, discarded: false, capture: stats)
    }

    /// Stops the take's capture and writer, then (`finalize`) makes its file the one kept.
    private func stopCapture(_ active: Active, finalize: Bool) async throws(EngineError) -> (CaptureStats, FinishedFile?) {
        let (session, data, logger) = (active.session, config.dataDirectory, self.logger)
        do {
            return try await runBlocking {
                let (stats, writeError) = session.stop()
                if let writeError { logger.warning("recording \(active.id): the writer failed: \(writeError)") }
                // A take being thrown away is not worth a remux.
                return (stats, finalize ? session.finalize(data: data, logger: logger) : nil)
            }
        } catch {
            throw Self.map(error, file: session.path)
        }
    }

    /// Throws the stopped take away. When that fails, capture has ended and the take cannot be
    /// thrown away: it is kept (pending) rather than left a stopped recording in `recording`, and
    /// the error says why.
    private func discard(_ active: Active, stats: CaptureStats) async throws(EngineError) {
        do {
            try await blockingCatalogCall { try active.take.discard() }
        } catch {
            logger.error("recording \(active.id): discard failed, keeping it as pending: \(error)")
            let (session, data, logger) = (active.session, config.dataDirectory, self.logger)
            let kept = try? await runBlocking { session.finalize(data: data, logger: logger) }
            _ = try? await settle(active.take) { r in
                r.state = .pending
                kept?.apply(to: &r)
                r.droppedFrames = Int(stats.droppedFrames)
            }
            throw error
        }
    }

    /// Writes the stopped take's outcome into its row (`state`, what the file holds, its loudness, the
    /// metadata asked for at stop), then its waveform and poster: losing either is not losing the
    /// recording (each is made from the file when first asked for).
    private func keep(_ active: Active, _ finished: FinishedFile, stats: CaptureStats, state: RecordingState,
                      change: MetadataChange) async throws(EngineError) -> Recording {
        let session = active.session
        let tz = config.timeZone
        let loudness = session.loudness()
        let recording = try await settle(active.take) { r in
            r.state = state
            finished.apply(to: &r)
            r.droppedFrames = Int(stats.droppedFrames)
            r.loudness = loudness
            MetadataRules.apply(change, to: &r, timeZone: tz)
        }
        do {
            if let waveform = session.waveform() {
                let dat = waveform.dat()
                try await blockingCatalogCall { [catalog] in try catalog.storeWaveform(id: active.id, data: dat) }
            }
        } catch {
            logger.warning("recording \(active.id): its waveform was not stored (\(error)); it will be computed from the file")
        }
        do {
            if let poster = session.poster {
                try await blockingCatalogCall { [catalog] in try catalog.storePoster(id: active.id, data: poster) }
            }
        } catch {
            logger.warning("recording \(active.id): its poster was not stored (\(error)); it will be made from the file")
        }
        return recording
    }

    /// The take's last catalog write (`NewTake.settle`: retried; if it still fails, the row stays
    /// `recording` and the next start-up salvages it, so the file is never lost).
    private func settle(_ take: NewTake, _ change: @escaping @Sendable (inout Recording) -> Void) async throws(EngineError) -> Recording {
        let logger = self.logger
        return try await blockingCatalogCall { try take.settle(logger: logger, change) }
    }

    /// Called (through a Task) when the device or the disk failed mid-recording.
    func fault(id: UUID, error: any Error) {
        switch state {
        case .starting(id, let title, nil): state = .starting(id, title: title, fault: "\(error)")
        case .recording(let active) where active.id == id: beginFinish(active, reason: .fault, error: "\(error)")
        case .held(var h) where h.recording?.id == id && h.fault == nil:
            h.fault = "\(error)"
            state = .held(h)
        default: return   // already stopping, or another recording by now
        }
        lastFault = FaultReport(recordingID: id, reason: "\(error)", at: Date())
    }

    /// If `id` is the recording in progress, stops and discards it and returns true; waits out a
    /// start or a stop of it that is under way first. Returns false when `id` is not (or no longer)
    /// in progress. One actor call, so no other recording can be mistaken for it.
    public func discardIfActive(_ id: UUID) async throws(EngineError) -> Bool {
        while true {
            switch state {
            case .recording(let a) where a.id == id:
                return try await stop(StopRecordingRequest(then: .discard), reason: .deleted).discarded
            case .stopping(id, let done?):
                await done.value
            case .starting(id, _, _), .stopping(id, nil):
                await nextStateChange()
            case .held(let h) where h.recording?.id == id:
                await h.done.value
            default:
                return false
            }
        }
    }

    /// `check --repair`: runs `body` (recovery) on `BlockingPool` with the id of the recording in
    /// progress, if any, while no recording starts or stops; status and other requests go on.
    public func repair<T: Sendable>(_ body: @escaping @Sendable (UUID?) -> T) async -> T {
        await settle()
        return await hold("repair") { id in body(id) }
    }

    /// "Delete All Data": the recording in progress is stopped and discarded, then every recording
    /// goes, files and rows, all or nothing (`DeleteAll`, on `BlockingPool`), held so that no
    /// recording can start meanwhile.
    public func deleteAll() async throws(EngineError) -> DeleteAllResponse {
        var discarded = 0
        for _ in 0..<200 {
            await settle()
            switch state {
            case .idle:
                let (catalog, data, logger) = (self.catalog, config.dataDirectory, self.logger)
                let result = await hold("delete all") { _ in
                    Result { () throws(EngineError) in try storageCall(DeleteAll.run(catalog: catalog, data: data, logger: logger)) }
                }
                var reply = try result.get()
                reply.deletedRecordings += discarded
                events.publish(.libraryChanged(LibraryChangedEvent(recordingID: nil, change: .deletedAll)))
                return reply
            case .recording:
                let stopped = try await stop(StopRecordingRequest(then: .discard), reason: .deleted)
                if stopped.discarded { discarded += 1 }
            default:
                continue
            }
        }
        throw .alreadyRecording(active: active()?.id ?? UUID(), title: "(a recording that would not stop)")
    }

    /// Waits until the recorder is idle or recording: a start, a stop or a hold under way ends first.
    private func settle() async {
        while true {
            switch state {
            case .idle, .recording: return
            case .held(let h): await h.done.value
            case .stopping(_, let done?): await done.value
            case .stopping(_, nil), .starting: await nextStateChange()
            }
        }
    }

    /// Suspends until `state` next changes (no polling: a waiter costs nothing until then).
    private func nextStateChange() async {
        await withCheckedContinuation { stateWaiters.append($0) }
    }

    private func resumeStateWaiters() {
        guard !stateWaiters.isEmpty else { return }
        let waiters = stateWaiters
        stateWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func waitWhileHeld() async {
        while case .held(let h) = state { await h.done.value }
    }

    /// Holds the recorder (idle or recording, as `settle` left it; no `await` before the state is
    /// set) while `body` runs on `BlockingPool`, then puts back what was there: the recording goes on,
    /// or ends now if its device failed meanwhile.
    private func hold<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (UUID?) -> T) async -> T {
        let recording: Active? = if case .recording(let a) = state { a } else { nil }
        let work = Task { await Self.onBlockingPool { body(recording?.id) } }
        state = .held(Hold(operation: operation, recording: recording, fault: nil, done: Task { _ = await work.value }))
        logger.debug("\(operation) holds the recorder")
        let result = await work.value
        guard case .held(let h) = state else { preconditionFailure("Recorder state changed during \(operation): \(state)") }
        if let active = h.recording {
            state = .recording(active)
            if let fault = h.fault { beginFinish(active, reason: .fault, error: fault) }
        } else {
            state = .idle
        }
        return result
    }

    /// `runBlocking` for work that does not throw (its pool is never shut down while recd runs).
    private static func onBlockingPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        do { return try await runBlocking(body) } catch { return body() }
    }

    /// Ends `active` in the background, keeping what was captured as pending. Shutdown waits for it.
    private func beginFinish(_ active: Active, reason: RecordingStoppedEvent.Reason, error: String? = nil) {
        let done = Task {
            _ = try? await self.finish(active, then: .keep, change: MetadataChange(), reason: reason, error: error)
            self.finished(active.id)
        }
        state = .stopping(active.id, done: done)
    }

    private func finished(_ id: UUID) {
        if case .stopping(id, _) = state { state = .idle }
    }

    /// On daemon shutdown: an active recording is finalized and kept as pending; a stop already under
    /// way is waited for.
    public func shutdown() async {
        switch state {
        case .recording(let active):
            beginFinish(active, reason: .shutdown)
            if case .stopping(_, let done?) = state { await done.value }
        case .stopping(_, let done?):
            await done.value
        case .held(let h):
            await h.done.value
            await shutdown()
        case .starting:
            // The device is being opened: let the start finish, then stop what it started.
            await nextStateChange()
            await shutdown()
        default:
            break
        }
    }

    /// The recording in progress (starting, recording or stopping), with its elapsed time and counters.
    public func active() -> ActiveReport? {
        switch state {
        case .idle: return nil
        case .starting(let id, _, _): return ActiveReport(id: id, activity: .starting)
        case .stopping(let id, _): return ActiveReport(id: id, activity: .stopping)
        case .held(let h): return h.recording.map(Self.report)
        case .recording(let a): return Self.report(a)
        }
    }

    private static func report(_ a: Active) -> ActiveReport {
        ActiveReport(id: a.id, activity: .recording, pause: a.pauseState(), stats: a.session.stats, formats: a.session.audioFormats)
    }

    /// The recording in progress, for status.
    public struct ActiveReport: Sendable {
        public var id: UUID
        public var activity: DaemonStatus.Activity
        /// Time recorded and paused; nil while starting or stopping.
        public var pause: RecordingPauseState?
        public var stats: CaptureStats?
        public var formats: (device: AudioFormatInfo, recorded: AudioFormatInfo)?
    }
}

extension Duration {
    /// In seconds, as a Double.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
