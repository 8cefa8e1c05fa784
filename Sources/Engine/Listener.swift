// Hands-free listening (issue 49): while armed, the microphone stays open, a voice detector decides
// speech, and each thing said becomes a recording of its own — a take like any other (the Recorder's:
// row first, written as it is spoken, kept through kill -9 and power cuts), from a tap of the
// microphone's history that begins `preRoll` before the first word.
import Capture
import Foundation
import Logging
import RecdAPI
import Storage

/// Owns listening: armed or off, and while armed, the microphone's capture (`ListenCapture`) and the
/// utterance being recorded. All state is in `state`; each message of the capture's detector thread
/// is handled in order, one at a time (`consume`).
public actor Listener {
    enum Phase: Sendable {
        case listening
        /// An utterance's recording is under way, from this tap.
        case speaking(UUID, CaptureHistoryTap)
        /// A take started by hand has the recorder: its recording holds what is said meanwhile.
        case yielded
        /// The microphone was lost (why); it is opened again every `retrySeconds`.
        case deviceLost(String)
    }

    struct Session: Sendable {
        var settings: ListenSettings
        var since: Date
        var resumed: Bool
        /// Nil until the microphone was opened (a restart found it missing).
        var detector: VoiceDetectorKind?
        var note: String?
        var utterances = 0
        var dropped = 0
        var phase: Phase = .listening
        var capture: ListenCapture?
        /// Counts the captures of this session: a message of an older one is ignored.
        var generation = 0
        /// Handles the capture's messages, in order (one task per capture).
        var consumer: Task<Void, Never>?
        /// The `until` timer.
        var until: Task<Void, Never>?
        /// The reopening of a lost device (one at a time: a device is lost again only once reopened).
        var retry: Task<Void, Never>?
        /// Cancels the session's timers (the capture's consumer is ended apart).
        func cancelTimers() { until?.cancel(); retry?.cancel() }
    }

    enum State: Sendable {
        /// `kept`, `dropped`: the last session's counts, still said once it has ended.
        case off(last: ListenStopped?, kept: Int = 0, dropped: Int = 0)
        case armed(Session)
        /// Being disarmed: the utterance under way is ended and kept.
        case stopping(Stopping)
    }

    /// A session being disarmed, and what it still ends.
    struct Stopping: Sendable {
        var session: Session
        /// The take under way when disarming began (its end still comes from the detector thread).
        var take: (id: UUID, tap: CaptureHistoryTap)?
        /// Utterances ended while disarming (the session's counts are its, until it is off).
        var kept = 0
        var dropped = 0
    }

    private var state: State = .off(last: nil)
    private let config: EngineConfiguration
    private let recorder: Recorder
    private let microphone: SharedMicrophone
    private let events: EventHub
    private let logger: Logger
    private let openMicrophone: @Sendable () throws -> any CaptureSource
    private let makeDetector: @Sendable () -> (any SpeechDetector, note: String?)
    /// The free bytes of the filesystem at a path (statvfs; nil when unreadable): a seam for the
    /// unit tests of a disk that fills while armed.
    private let freeBytes: @Sendable (String) -> Int64?
    /// Where an armed session's settings are kept, so that a restarted recd arms again.
    private let stateFile: URL
    static let retrySeconds = 2.0
    /// Listening stops when the disk's free space falls to recd's limit plus this (a take of its
    /// own needs room to finish: an hour of AAC at 128 kb/s is 58 MB).
    package static let diskMarginBytes: Int64 = 100_000_000

    package init(config: EngineConfiguration, recorder: Recorder, microphone: SharedMicrophone, events: EventHub, logger: Logger,
         openMicrophone: @escaping @Sendable () throws -> any CaptureSource,
         makeDetector: @escaping @Sendable () -> (any SpeechDetector, note: String?),
         freeBytes: @escaping @Sendable (String) -> Int64? = { FileOps.freeBytes($0) }) {
        self.config = config; self.recorder = recorder; self.microphone = microphone; self.events = events; self.logger = logger
        self.openMicrophone = openMicrophone; self.makeDetector = makeDetector; self.freeBytes = freeBytes
        stateFile = config.dataDirectory.root.appendingPathComponent("listen.json")
    }

    /// recd's detectors: Silero when the transcriber's environment is installed, the level gate otherwise.
    static func detectors(_ settings: TranscriptionSettings) -> @Sendable () -> (any SpeechDetector, note: String?) {
        { () -> (any SpeechDetector, note: String?) in
            do {
                return (try SileroSpeechDetector(transcriberDirectory: settings.directory), nil)
            } catch {
                return (LevelGateDetector(), "a level gate decides (it keeps any sound above -40 dBFS, not only speech): \(error)")
            }
        }
    }

    // MARK: Requests

    /// Arms listening (`POST /v1/listen`).
    public func arm(_ request: ListenRequest) async throws(EngineError) -> ListenStatus {
        try await arm(request, resumed: false, since: Date())
    }

    private func arm(_ request: ListenRequest, resumed: Bool, since: Date) async throws(EngineError) -> ListenStatus {
        switch state {
        case .armed(let s): throw .alreadyListening(since: s.since)
        case .stopping: throw .alreadyListening(since: Date())
        case .off: break
        }
        let settings = try validate(request)
        let (path, needed) = (config.dataDirectory.recordings.path, config.minFreeBytes + Self.diskMarginBytes)
        if let free = freeBytes(path), free < needed { throw .insufficientStorage(path: path, freeBytes: free, requiredBytes: needed) }
        let (open, make) = (openMicrophone, makeDetector)
        var opened: (source: any CaptureSource, detector: (any SpeechDetector, note: String?))?
        var missing: EngineError?
        do {
            opened = try await runBlocking { (try open(), make()) }
        } catch {
            // A restart that finds the microphone gone arms anyway, and waits for it.
            guard resumed else { throw Recorder.map(error, file: config.captureDevice) }
            missing = Recorder.map(error, file: config.captureDevice)
        }
        guard case .off = state else {
            opened?.source.stop()
            opened?.detector.0.close()
            throw .alreadyListening(since: Date())
        }
        var session = Session(settings: settings, since: since, resumed: resumed, detector: opened?.detector.0.kind,
                              note: opened?.detector.note)
        if let opened { start(&session, source: opened.source, detector: opened.detector.0) }
        if let until = settings.until {
            session.until = Task { [weak self] in
                try? await Task.sleep(for: .seconds(max(0, until.timeIntervalSinceNow)))
                guard !Task.isCancelled else { return }
                await self?.disarm(reason: .until, message: "listening was set to stop at \(DateText.format(until))")
            }
        }
        state = .armed(session)
        save(settings, since: since)
        if let missing { deviceLost(missing) }
        let with = session.detector.map { $0 == .silero ? "Silero VAD" : "a level gate" } ?? "its microphone not there yet"
        logger.notice("listening\(resumed ? " again after a restart" : "") on \(config.captureDevice) with \(with): each utterance becomes a recording (silence \(settings.silence) s, pre-roll \(settings.preRoll) s, min \(settings.min) s, max \(settings.max) s\(settings.until.map { ", until \(DateText.format($0))" } ?? ""))")
        if let note = session.note { logger.warning("listening: \(note)") }
        return publishStatus()
    }

    /// Disarms listening (`DELETE /v1/listen`): an utterance being recorded ends now and is kept.
    public func disarm() async throws(EngineError) -> ListenStatus {
        guard case .armed = state else { throw .notListening }
        await disarm(reason: .requested, message: "listening was stopped")
        return status
    }

    /// What listening is doing (`GET /v1/listen`).
    public var status: ListenStatus {
        switch state {
        case .off(let last, let kept, let dropped): return ListenStatus(state: .off, utterances: kept, dropped: dropped, lastStop: last)
        case .stopping(let stop):
            let s = stop.session
            return ListenStatus(state: .listening, since: s.since, settings: s.settings, detector: s.detector, detectorNote: s.note,
                                device: config.captureDevice, utterances: s.utterances + stop.kept, dropped: s.dropped + stop.dropped,
                                resumedAfterRestart: s.resumed)
        case .armed(let s):
            let (phase, id, lost): (ListenStatus.State, UUID?, ListenStopped?) = switch s.phase {
            case .listening: (.listening, nil, nil)
            case .speaking(let id, _): (.speaking, id, nil)
            case .yielded: (.yielded, nil, nil)
            case .deviceLost(let why): (.deviceLost, nil, ListenStopped(at: Date(), reason: .failed, message: why))
            }
            return ListenStatus(state: phase, since: s.since, settings: s.settings, detector: s.detector, detectorNote: s.note,
                                device: config.captureDevice, recordingID: id, utterances: s.utterances, dropped: s.dropped,
                                resumedAfterRestart: s.resumed, lastStop: lost)
        }
    }

    /// At start-up: arms again if recd stopped while armed (its settings in `listen.json`), or if
    /// `--listen` asks for it.
    public func resumeIfArmed(always: Bool) async {
        var request = ListenRequest()
        var since = Date()
        var resumed = false
        if let data = try? Data(contentsOf: stateFile), let saved = try? APIJSON.decoder().decode(SavedSession.self, from: data) {
            let s = saved.settings
            request = ListenRequest(silence: s.silence, preRoll: s.preRoll, min: s.min, max: s.max, until: s.until, format: s.format, purpose: s.purpose)
            since = saved.since
            resumed = true
        } else if !always {
            return
        }
        if let until = request.until, until <= Date() {
            removeSavedState()
            logger.info("listening was armed until \(DateText.format(until)), which has passed: not armed again")
            return
        }
        do {
            _ = try await arm(request, resumed: resumed, since: since)
        } catch {
            logger.error("listening could not be armed again at start-up: \(error)")
            state = .off(last: ListenStopped(at: Date(), reason: .failed, message: "not armed again at start-up: \(error)"))
        }
    }

    /// recd is stopping: listening makes no new recording, `stopTakes` ends the recorder's take
    /// (kept as pending, as any take at shutdown) while the microphone still delivers, then capture
    /// ends. `listen.json` stays, so the next start arms again.
    public func shutdown(stoppingTakes stopTakes: @Sendable () async -> Void) async {
        guard case .armed(let s) = state else { return await stopTakes() }
        state = .stopping(Stopping(session: s))
        s.cancelTimers()
        s.consumer?.cancel()
        microphone.release()
        await stopTakes()
        if let capture = s.capture { await Self.onBlockingPool { capture.stop() } }
        state = .off(last: ListenStopped(at: Date(), reason: .shutdown, message: "recd stopped"), kept: s.utterances, dropped: s.dropped)
        logger.notice("listening stopped with recd; it is armed again when recd starts")
    }

    // MARK: The capture's messages

    private func start(_ session: inout Session, source: any CaptureSource, detector: any SpeechDetector) {
        let l = session.settings
        let segmenter = UtteranceSegmenter.Settings(rate: source.deviceFormat.rate, silence: l.silence, preRoll: l.preRoll, min: l.min, max: l.max)
        let capture = ListenCapture(source: source, detector: detector, settings: segmenter)
        session.generation += 1
        session.capture = capture
        session.phase = .listening
        microphone.hold(capture.history, device: source.device, sampleRate: config.sampleRate, channels: config.channels)
        let generation = session.generation
        session.consumer = Task { [weak self] in
            for await message in capture.messages {
                await self?.handle(message, generation: generation, capture: capture)
            }
        }
    }

    private func handle(_ message: ListenMessage, generation: Int, capture: ListenCapture) async {
        guard case .armed(let s) = state, s.generation == generation else {
            // Being disarmed: the utterance under way still ends and is kept.
            guard case .decision(let d) = message else { return }
            if case .stopping = state { await finishUtterance(d) }
            if d.endsARecording { capture.resumeRelease() }
            return
        }
        switch message {
        case .level(let level):
            if events.wantsMeters { events.publish(.listenLevel(level)) }
            if case .yielded = s.phase, await recorder.active() == nil { update { $0.phase = .listening } }
        case .detectorChanged(let kind, let note):
            logger.warning("listening: \(note)")
            update { $0.detector = kind; $0.note = note }
        case .decision(let d):
            switch d {
            case .begin(let at): await begin(at: at, capture: capture)
            case .drop: await finishUtterance(d)
            case .end:
                await finishUtterance(d)
                capture.resumeRelease()
            case .split(let at, _):
                await finishUtterance(d)
                capture.resumeRelease()
                await begin(at: at, capture: capture)
            }
        case .ended(let error):
            guard let error else { return }
            deviceLost(error)
        }
    }

    /// Starts an utterance's recording from `at`.
    private func begin(at position: Int64, capture: ListenCapture) async {
        guard case .armed(let s) = state else { return }
        let free = freeBytes(config.dataDirectory.recordings.path) ?? .max
        if free < config.minFreeBytes + Self.diskMarginBytes {
            let message = "the disk holding \(config.dataDirectory.recordings.path) has \(free / 1_000_000) MB free; listening stops at \((config.minFreeBytes + Self.diskMarginBytes) / 1_000_000) MB (--min-free-mb plus \(Self.diskMarginBytes / 1_000_000) MB for a take to finish)"
            logger.error("listening stops: \(message)")
            // Not awaited: this runs in the capture's consumer, which the disarm waits for.
            Task { await self.disarm(reason: .diskLow, message: message) }
            return
        }
        let tap = CaptureHistoryTap(history: capture.history, from: position, device: capture.source.device,
                                    sampleRate: config.sampleRate, channels: config.channels)
        let request = StartRecordingRequest(metadata: MetadataPatch(purpose: PatchField(s.settings.purpose)), format: s.settings.format)
        do {
            let recording = try await recorder.startUtterance(request, source: tap)
            logger.info("listening: speech; recording \(recording.id) from \(String(format: "%.2f", Double(capture.history.position - position) / Double(capture.history.format.rate))) s back")
            update { $0.phase = .speaking(recording.id, tap) }
        } catch {
            tap.stop()
            if case .alreadyRecording = error {
                logger.info("listening: speech while a recording started by hand is in progress; that recording holds it")
                update { $0.phase = .yielded }
            } else {
                logger.error("listening: the utterance's recording did not start: \(error)")
            }
        }
    }

    /// Ends the utterance's recording (`end`, `split`) and saves it, or counts a dropped one.
    private func finishUtterance(_ decision: UtteranceSegmenter.Decision) async {
        let speaking: (id: UUID, tap: CaptureHistoryTap)? = switch state {
        case .armed(let s): if case .speaking(let id, let tap) = s.phase { (id, tap) } else { nil }
        case .stopping(let stop): stop.take
        case .off: nil
        }
        switch decision {
        case .drop(let speech):
            update { $0.dropped += 1 }
            if case .stopping(var stop) = state { stop.dropped += 1; state = .stopping(stop) }
            events.publish(.listenUtterance(ListenUtteranceEvent(recordingID: nil, speech: speech, duration: 0, dropped: true, split: false)))
        case .end(let at, let speech), .split(let at, let speech):
            guard let (id, tap) = speaking else {
                if case .armed(let s) = state, case .yielded = s.phase, await recorder.active() == nil { update { $0.phase = .listening } }
                return
            }
            tap.end(at: at)
            var duration = 0.0
            do {
                let stopped = try await recorder.stopIfActive(id, then: .save)
                duration = stopped?.recording?.duration ?? 0
                if stopped == nil { logger.warning("listening: recording \(id) had already ended (a fault); it is kept as pending") }
            } catch {
                logger.error("listening: recording \(id) did not stop cleanly: \(error)")
            }
            let split = if case .split = decision { true } else { false }
            update { $0.utterances += 1; $0.phase = .listening }
            if case .stopping(var stop) = state { stop.kept += 1; stop.take = nil; state = .stopping(stop) }
            events.publish(.listenUtterance(ListenUtteranceEvent(recordingID: id, speech: speech, duration: duration, dropped: false, split: split)))
            logger.info("listening: recording \(id) kept (\(String(format: "%.1f", speech)) s of speech\(split ? ", split at the maximum length" : ""))")
        case .begin:
            break
        }
    }

    private func disarm(reason: ListenStopReason, message: String) async {
        guard case .armed(let s) = state else { return }
        var stop = Stopping(session: s)
        if case .speaking(let id, let tap) = s.phase {
            stop.take = (id, tap)
            // It ends at what was captured by now, told before capture closes under it (a tap that
            // sees capture end without having been told takes it for a fault).
            if let capture = s.capture { tap.end(at: capture.history.position) }
        }
        state = .stopping(stop)
        s.cancelTimers()
        microphone.release()
        // The detector thread ends the utterance under way where capture is now; the consumer
        // handles its last messages (as `.stopping`) until the stream ends.
        if let capture = s.capture { await Self.onBlockingPool { capture.stop() } }
        await s.consumer?.value
        guard case .stopping(var stop) = state else { return }
        if let (id, tap) = stop.take {
            tap.stop()
            if (try? await recorder.stopIfActive(id, then: .save)) != nil { stop.kept += 1 }
            stop.take = nil
        }
        removeSavedState()
        let stopped = ListenStopped(at: Date(), reason: reason, message: message)
        let (kept, dropped) = (s.utterances + stop.kept, s.dropped + stop.dropped)
        state = .off(last: stopped, kept: kept, dropped: dropped)
        logger.notice("listening stopped: \(message) (\(kept) recording(s) kept, \(dropped) too short)")
        publishStatus()
    }

    /// The microphone was lost: the utterance's recording ends with the Recorder's fault handling
    /// (kept as pending); the device is opened again every `retrySeconds`.
    private func deviceLost(_ error: any Error) {
        guard case .armed(var s) = state else { return }
        let why = "\(error)"
        logger.error("listening: the microphone \(config.captureDevice) was lost (\(why)); opening it again every \(Int(Self.retrySeconds)) s")
        microphone.release()
        let capture = s.capture
        s.capture = nil
        s.phase = .deviceLost(why)
        s.retry?.cancel()
        s.retry = Task { [weak self] in
            if let capture { await Self.onBlockingPool { capture.stop() } }
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Self.retrySeconds))
                guard !Task.isCancelled, let self else { return }
                if await self.reopen() { return }
            }
        }
        state = .armed(s)
        publishStatus()
    }

    /// Opens the microphone again after it was lost; true once it is.
    private func reopen() async -> Bool {
        guard case .armed(var s) = state, case .deviceLost = s.phase else { return true }
        let (open, make) = (openMicrophone, makeDetector)
        guard let (source, detector) = try? await runBlocking({ (try open(), make()) }) else { return false }
        guard case .armed = state else { source.stop(); detector.0.close(); return true }
        if case .armed(let now) = state { s = now }
        s.detector = detector.0.kind
        s.note = detector.note
        start(&s, source: source, detector: detector.0)
        state = .armed(s)
        logger.notice("listening: the microphone \(config.captureDevice) is back; listening again")
        publishStatus()
        return true
    }

    // MARK: Helpers

    private func update(_ change: (inout Session) -> Void) {
        guard case .armed(var s) = state else { return }
        let before = status
        change(&s)
        state = .armed(s)
        if status.state != before.state || status.detector != before.detector { publishStatus() }
    }

    @discardableResult
    private func publishStatus() -> ListenStatus {
        let s = status
        events.publish(.listenStatus(s))
        return s
    }

    private func validate(_ r: ListenRequest) throws(EngineError) -> ListenSettings {
        func check(_ value: Double?, _ field: String, _ range: ClosedRange<Double>, _ fallback: Double) throws(EngineError) -> Double {
            guard let value else { return fallback }
            guard value.isFinite, range.contains(value) else {
                throw .invalidValue(field: field, detail: "must be \(range.lowerBound)...\(range.upperBound) seconds, not \(value)")
            }
            return value
        }
        let silence = try check(r.silence, "silence", ListenRequest.silenceRange, 2)
        let preRoll = try check(r.preRoll, "preRoll", ListenRequest.preRollRange, 1)
        let min = try check(r.min, "min", ListenRequest.minRange, 1)
        let max = try check(r.max, "max", ListenRequest.maxRange, 600)
        guard max > min else { throw .invalidValue(field: "max", detail: "must be longer than min (\(min) s)") }
        if let until = r.until, until <= Date() {
            throw .invalidValue(field: "until", detail: "\(DateText.format(until)) has passed")
        }
        let format = try config.format(r.format, video: false)
        // As a recording's purpose is given: a chip's name, or none (or blank) for no purpose.
        var purpose: Purpose?
        if let given = r.purpose { purpose = try storageCall(MetadataRules.validate(MetadataPatch(purpose: .value(given)))).purpose ?? nil }
        return ListenSettings(silence: silence, preRoll: preRoll, min: min, max: max, until: r.until, format: format.rawValue, purpose: purpose?.rawValue)
    }

    private struct SavedSession: Codable { var settings: ListenSettings; var since: Date }

    private func save(_ settings: ListenSettings, since: Date) {
        do {
            try APIJSON.encoder().encode(SavedSession(settings: settings, since: since)).write(to: stateFile, options: .atomic)
        } catch {
            logger.warning("listening: its settings were not saved in \(stateFile.path) (\(error)); a restart will not arm it again")
        }
    }

    private func removeSavedState() { try? FileManager.default.removeItem(at: stateFile) }

    private static func onBlockingPool(_ body: @escaping @Sendable () -> Void) async {
        do { try await runBlocking(body) } catch { body() }
    }
}
