// The recording state machine: idle → starting → recording → stopping → idle.
import Capture
import Catalog
import Foundation
import Logging
import Media
import RecdAPI

/// Settings the engine runs with.
public struct EngineConfiguration: Sendable {
    public var dataDirectory: DataDirectory
    public var captureDevice: String
    public var playbackDevice: String
    public var sampleRate: Int
    public var channels: Int
    public var bitRate: Int
    public var timeZone: TimeZone

    public init(dataDirectory: URL, captureDevice: String = "default", playbackDevice: String = "default",
                sampleRate: Int = 48_000, channels: Int = 1, bitRate: Int = 128_000, timeZone: TimeZone = .current) {
        self.dataDirectory = DataDirectory(root: dataDirectory)
        self.captureDevice = captureDevice; self.playbackDevice = playbackDevice
        self.sampleRate = sampleRate; self.channels = channels; self.bitRate = bitRate; self.timeZone = timeZone
    }
}

/// Owns the one active recording of the capture device. All state is in `state`; every method
/// re-checks it after each `await`, because other requests may run in between.
public actor Recorder {
    struct Active: Sendable {
        var session: AudioRecordingSession
        var id: UUID
        var startedAt: ContinuousClock.Instant
    }

    enum State: Sendable {
        case idle
        case starting(UUID)
        case recording(Active)
        case stopping(UUID)
    }

    private var state: State = .idle
    private let config: EngineConfiguration
    private let catalog: Catalog
    private let logger: Logger

    init(config: EngineConfiguration, catalog: Catalog, logger: Logger) {
        self.config = config; self.catalog = catalog; self.logger = logger
    }

    private func refuseIfBusy() throws(EngineError) {
        let busy: UUID
        switch state {
        case .idle: return
        case .starting(let id), .stopping(let id): busy = id
        case .recording(let a): busy = a.id
        }
        let title = (try? catalog.recording(id: busy))??.title ?? "(starting)"
        throw .alreadyRecording(active: busy, title: title)
    }

    /// Starts a recording. `receivedAt` is when the request arrived: the reply's latency is measured
    /// from it to the first buffer the device delivered.
    public func start(_ request: StartRecordingRequest, receivedAt: UInt64) async throws(EngineError) -> StartRecordingResponse {
        try refuseIfBusy()
        let change = try MetadataRules.validate(request.metadata)
        let id = UUID()
        state = .starting(id)
        let now = Date()
        let relative = DataDirectory.relativePath(id: id, type: .audio)
        let path = config.dataDirectory.absolute(relative)
        var recording = Recording(id: id, type: .audio, state: .recording, title: "", notes: "", purpose: nil,
                                  createdAt: now, duration: nil, sizeBytes: nil, file: relative, playCount: 0,
                                  lastPlayedAt: nil, recovered: false, droppedFrames: 0)
        var withTitle = change
        if withTitle.title == nil { withTitle.title = .some(nil) }
        MetadataRules.apply(withTitle, to: &recording, timeZone: config.timeZone)
        // The row goes in first: if the daemon dies mid-recording, start-up recovery finds the row and
        // salvages its file.
        do {
            try catalogCall { try catalog.insert(recording) }
        } catch {
            state = .idle
            throw error
        }
        let capture = AlsaCaptureSettings(device: config.captureDevice, sampleRate: config.sampleRate,
                                          channels: config.channels)
        let encoding = AudioEncoding(sampleRate: config.sampleRate, channels: config.channels, bitRate: config.bitRate)
        let session: AudioRecordingSession
        let firstBufferAt: UInt64
        do {
            (session, firstBufferAt) = try await runBlocking { [logger] in
                let s = try AudioRecordingSession(path: path, capture: capture, encoding: encoding) { error in
                    logger.error("recording \(id) ended by a fault: \(error)")
                    Task { await self.endAfterFault(id: id, error: error) }
                }
                return (s, try s.start())
            }
        } catch {
            try? FileOps.remove(path)
            _ = try? catalog.delete(id: id)
            state = .idle
            throw Self.map(error, file: path)
        }
        state = .recording(Active(session: session, id: id, startedAt: .now))
        let latencyMs = Double(firstBufferAt &- receivedAt) / 1e6
        logger.info("recording \(id) started on \(config.captureDevice) (\(String(format: "%.1f", latencyMs)) ms to first buffer)")
        return StartRecordingResponse(recording: recording, device: config.captureDevice, startLatencyMs: latencyMs)
    }

    static func map(_ error: any Error, file: String) -> EngineError {
        switch error {
        case let e as EngineError: return e
        case let e as CaptureError: return .device(e)
        case let e as FFmpegError: return e.isDiskFull ? .storage(file: file, operation: "write", underlying: e.description)
                                                       : .media(file: file, underlying: e.description)
        default: return .media(file: file, underlying: "\(error)")
        }
    }

    /// Stops the active recording, finalizes its file and keeps, saves or discards it.
    public func stop(_ request: StopRecordingRequest) async throws(EngineError) -> StopRecordingResponse {
        guard case .recording(let active) = state else { throw .notRecording }
        // Validate before anything changes: a bad title leaves the recording running.
        let change = try MetadataRules.validate(request.metadata)
        return try await finish(active, then: request.then, change: change, reason: "stopped")
    }

    private func finish(_ active: Active, then: StopDisposition, change: MetadataChange,
                        reason: String) async throws(EngineError) -> StopRecordingResponse {
        state = .stopping(active.id)
        defer { state = .idle }
        let session = active.session
        let data = config.dataDirectory
        let logger = self.logger
        let (stats, finished, writeError): (CaptureStats, FinishedFile, String?)
        do {
            (stats, finished, writeError) = try await runBlocking {
                var writeError: String?
                var stats = session.stats
                do { stats = try session.stop() } catch { writeError = "\(error)" }
                let finished = RecordingFinalizer.finalize(path: session.path, data: data, logger: logger)
                return (stats, finished, writeError)
            }
        } catch {
            throw Self.map(error, file: session.path)
        }
        if let writeError { logger.warning("recording \(active.id): the writer failed: \(writeError)") }
        if then == .discard {
            try catalogCall { try catalog.delete(id: active.id) }
            try FileOps.remove(session.path)
            logger.info("recording \(active.id) \(reason) and discarded")
            return StopRecordingResponse(recording: nil, discarded: true, capture: stats)
        }
        let tz = config.timeZone
        let recording = try catalogCall {
            try catalog.modify(id: active.id) { r in
                r.state = then == .save ? .ready : .pending
                r.duration = finished.duration
                r.sizeBytes = finished.sizeBytes
                r.droppedFrames = Int(stats.droppedFrames)
                MetadataRules.apply(change, to: &r, timeZone: tz)
            }
        }
        logger.info("recording \(active.id) \(reason): \(recording.state.rawValue), \(finished.duration.map { String(format: "%.2f s", $0) } ?? "unknown duration"), \(stats.overruns) overruns")
        return StopRecordingResponse(recording: recording, discarded: false, capture: stats)
    }

    /// Called when the device or the disk failed mid-recording: ends it, keeping what was captured.
    func endAfterFault(id: UUID, error: any Error) async {
        guard case .recording(let active) = state, active.id == id else { return }
        _ = try? await finish(active, then: .keep, change: MetadataChange(), reason: "ended by a fault (\(error))")
    }

    /// On daemon shutdown: an active recording is finalized and kept as pending.
    public func shutdown() async {
        if case .recording(let active) = state {
            _ = try? await finish(active, then: .keep, change: MetadataChange(), reason: "stopped at shutdown")
        }
    }

    /// The active recording, if any, with its elapsed time and counters.
    public func active() -> (id: UUID, elapsed: Double, stats: CaptureStats)? {
        guard case .recording(let a) = state else { return nil }
        let d = ContinuousClock.now - a.startedAt
        let elapsed = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        return (a.id, elapsed, a.session.stats)
    }

    /// Whether `id` is the recording in progress (it cannot be saved, discarded or deleted yet).
    public func isActive(_ id: UUID) -> Bool {
        switch state {
        case .recording(let a): return a.id == id
        case .stopping(let s): return s == id
        default: return false
        }
    }
}
