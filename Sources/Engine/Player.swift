// The playback state machine: idle ⇄ playing (paused is a flag of playing), one playback at a time.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import Playback
import RecdAPI
import Storage

/// Owns the one playback of the playback device and counts plays by the seed's rules: a playback
/// of a `ready` recording adds exactly one to its play count when it ends (completed, stopped,
/// replaced, shut down, failed), however often it was paused or seeked; a preview of a `pending`
/// recording never counts; a playback ended because its recording is being deleted never counts.
///
/// Transport operations run one at a time (`exclusive`): each may wait on the device (open, close,
/// join the playback thread) off the actor, and none may see another's half-done change.
public actor Player {
    struct Active: Sendable {
        let sessionID: UUID
        let session: any PlayerSession
        let recording: Recording
        let counts: Bool
        let startedAt: Date
        /// dB applied (level-matched playback).
        let gain: Double
        /// Pauses skipped (Skip Silence).
        let skipSilence: Bool
        /// Its enhanced copy plays.
        let enhanced: Bool
    }

    enum State: Sendable {
        case idle
        case playing(Active)
        /// Between `end`'s first step and its last: the thread stopped, the play being counted. Still
        /// shown by `status`, so no one sees neither the playback nor how it ended.
        case ending(Active)
    }

    private var state: State = .idle
    /// The last playback that ended since the daemon started.
    private var lastEnded: PlaybackEnded?
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private let config: EngineConfiguration
    private let catalog: Catalog
    private let events: EventHub
    private let logger: Logger
    /// Plays counted with group commit (shared with the library's `played`).
    private let plays: PlayCountCommitter
    /// Where each playback's decoder and device come from.
    private let sessions: any PlaybackSessionFactory

    package init(config: EngineConfiguration, catalog: Catalog, plays: PlayCountCommitter, events: EventHub, logger: Logger,
         sessions: any PlaybackSessionFactory = DevicePlaybackFactory()) {
        self.config = config; self.catalog = catalog; self.plays = plays; self.events = events; self.logger = logger
        self.sessions = sessions
    }

    /// Runs `body` while no other transport operation runs (FIFO).
    private func exclusive<T: Sendable>(_ body: () async throws(EngineError) -> T) async throws(EngineError) -> T {
        if busy {
            await withCheckedContinuation { waiters.append($0) }   // `busy` is handed over by release
        } else {
            busy = true
        }
        defer {
            if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
        }
        return try await body()
    }

    /// Plays `recording` (ready: counts; pending: a preview that never counts), ending the playback
    /// in progress first. `receivedAt` is when the request arrived (uptime ns): the reply's latency
    /// runs from it to the first audio written to the device.
    /// `normalize` false plays it as recorded; else at `--playback-loudness` (`LevelMatch`).
    /// `skipping`: the pauses to skip (Skip Silence), nil: none. `speed`: 0.5-2, the pitch kept.
    /// `enhanced`: its enhanced copy is played instead (the same timeline; the play counts alike).
    public func play(_ recording: Recording, from position: Double?, normalize: Bool = true, skipping: [Silence]? = nil,
                     speed: Double = 1, enhanced: EnhancedCopy? = nil, receivedAt: UInt64) async throws(EngineError) -> PlayResponse {
        try await exclusive { () async throws(EngineError) -> PlayResponse in
            guard recording.state == .ready || recording.state == .pending else {
                throw .invalidState(id: recording.id, state: recording.state, action: "play", allowed: [.ready, .pending])
            }
            if let position, !(position.isFinite && position >= 0) {
                throw .invalidValue(field: "position", detail: "\(position) is not a number of seconds from the start")
            }
            try Self.check(speed: speed)
            // Nothing would be heard, yet the play would count: refused, as trim refuses such a time.
            if let position, let duration = recording.duration, duration > 0, position >= duration {
                throw .invalidValue(field: "position", detail: "\(position) is past the end of the recording (0 to "
                                    + String(format: "%.3f s", duration) + ")")
            }
            let path = try storageCall(enhanced == nil ? config.dataDirectory.recordingPath(recording.file) : config.dataDirectory.enhancedPath(recording.id))
            // Checked before the current playback is ended: a missing file must change nothing.
            guard FileManager.default.fileExists(atPath: path) else {
                if enhanced != nil { throw .noMedia(id: recording.id, detail: EnhancedCopies.fileGone) }
                throw .fileMissing(id: recording.id, file: recording.file)
            }
            // So is a video without sound (nothing to play here; a GUI's player shows it from /media).
            // The worker that probed it decodes it too: its job's process is walled in to this file,
            // and a second lease would need a second worker while this one is held.
            var probed: (lease: MediaWorkerLease, streams: [MediaInfo.Stream])?
            if recording.type == .video {
                probed = try? await runBlocking {
                    let lease = try MediaWorkerLease(reading: [path])
                    return (lease, try WorkerMedia.probe(path, lease: lease).streams)
                }
                if let streams = probed?.streams, !streams.contains(where: { $0.kind == "audio" }) {
                    throw .playback(.noSound(file: path))
                }
            }
            let worker = probed?.lease
            var replaced: PlaybackEnded?
            if case .playing(let current) = state { replaced = await end(current, .replaced) }
            let device = config.playbackDevice
            let sessionID = UUID()
            let events = self.events
            let interval = config.meterIntervalMs
            let recordingID = recording.id
            let gate = EventGate()
            let loudness = enhanced.map { Loudness(integrated: $0.loudness, range: nil, truePeak: $0.truePeak) } ?? recording.loudness
            let gain = normalize ? LevelMatch.gain(loudness, target: config.playbackLoudness) : 0
            let session: any PlayerSession
            let firstWriteAt: UInt64
            let sessions = self.sessions
            do {
                (session, firstWriteAt) = try await runBlocking {
                    let s = try sessions.makeSession(for: PlaybackSessionRequest(path: path, device: device, gainDB: gain, lease: worker))
                    if let skipping { s.skip(skipping.map { ($0.start, $0.end) }) }
                    s.startSpeed(speed)
                    let duration = s.duration
                    let at = try s.start(at: position ?? 0, meterIntervalMs: interval, observer: { observation in
                        guard gate.isOpen else { return }
                        switch observation {
                        case .meter(let time, let reading):
                            guard events.wantsMeters else { return }
                            events.publish(.meter(MeterEvent(source: .playback, recordingID: recordingID, time: time,
                                                             intervalMs: interval, channels: ChannelLevel.from(reading))))
                        case .progress(let p):
                            events.publish(.playbackProgress(PlaybackProgressEvent(
                                session: sessionID, recordingID: recordingID, state: p.paused ? .paused : .playing,
                                position: p.position, duration: duration)))
                        }
                    }) { end in
                        Task { await self.sessionEnded(sessionID, end) }
                    }
                    return (s, at)
                }
            } catch let e as PlaybackError {
                if case .fileMissing = e { throw .fileMissing(id: recording.id, file: recording.file) }
                throw .playback(e)
            } catch {
                throw .playback(.media(file: path, detail: "\(error)"))
            }
            let active = Active(sessionID: sessionID, session: session, recording: recording,
                                counts: recording.state == .ready, startedAt: Date(), gain: gain, skipSilence: skipping != nil,
                                enhanced: enhanced != nil)
            state = .playing(active)
            let latencyMs = Double(firstWriteAt &- receivedAt) / 1e6
            logger.info("playing \(recording.id) on \(device)\(active.counts ? "" : " (preview, not counted)")\(gain == 0 ? "" : String(format: " at %+.1f dB", gain)) from \(String(format: "%.2f", position ?? 0)) s (\(String(format: "%.1f", latencyMs)) ms to first audio)")
            let started = info(active)
            events.publish(.playbackStarted(started))
            gate.openGate()
            return PlayResponse(playback: started, startLatencyMs: latencyMs, replaced: replaced)
        }
    }

    /// Plays on at `speed` (0.5-2, the pitch kept) from what is heard now.
    public func setSpeed(_ speed: Double) async throws(EngineError) -> PlaybackStatus {
        try Self.check(speed: speed)
        return try await control { s in s.setSpeed(speed) }
    }

    static func check(speed: Double) throws(EngineError) {
        guard speed.isFinite, SpeedRequest.range.contains(speed) else {
            throw .invalidValue(field: "speed", detail: "\(speed) is not between 0.5 and 2 (1: as recorded)")
        }
    }

    public func pause() async throws(EngineError) -> PlaybackStatus {
        try await control { s in s.pause() }
    }

    public func resume() async throws(EngineError) -> PlaybackStatus {
        try await control { s in s.resume() }
    }

    /// Moves by `by` seconds or to `to` seconds, clamped to the recording.
    public func seek(_ request: SeekRequest) async throws(EngineError) -> PlaybackStatus {
        let valid = { (v: Double?) in v.map { $0.isFinite } ?? true }
        guard (request.by == nil) != (request.to == nil), valid(request.by), valid(request.to) else {
            throw .invalidValue(field: "seek", detail: "give exactly one of 'by' (± seconds) and 'to' (seconds), as numbers")
        }
        return try await control { s in
            let target = request.to ?? (s.progress.position + (request.by ?? 0))
            s.seek(to: target)
        }
    }

    /// Ends the playback in progress (it counts, unless it is a preview).
    public func stop() async throws(EngineError) -> PlaybackStatus {
        try await exclusive { () async throws(EngineError) -> PlaybackStatus in
            guard case .playing(let active) = state else { throw .notPlaying }
            _ = await end(active, .stopped)
            return status()
        }
    }

    /// Applies a transport command to the playback in progress (on the playback thread, which
    /// acknowledges it: the reply shows its effect).
    private func control(_ command: @escaping @Sendable (any PlayerSession) -> Void) async throws(EngineError) -> PlaybackStatus {
        try await exclusive { () async throws(EngineError) -> PlaybackStatus in
            guard case .playing(let active) = state else { throw .notPlaying }
            let session = active.session
            _ = try? await runBlocking { command(session) }
            return status()
        }
    }

    /// If `recordingID` is playing, ends the playback without counting it (its recording is being
    /// deleted or discarded).
    public func stopIfPlaying(_ recordingID: UUID, enhanced: Bool = false) async {
        await endCurrent(.deleted) { $0.recording.id == recordingID && (!enhanced || $0.enhanced) }
    }

    /// Ends any playback without counting it ("Delete All Data").
    public func stopForDeletion() async { await endCurrent(.deleted) }

    /// On daemon shutdown: the playback in progress ends and counts (unless a preview).
    public func shutdown() async { await endCurrent(.shutdown) }

    /// Ends the playback in progress, if `matches` it, as `reason`.
    private func endCurrent(_ reason: PlaybackEnded.Reason, if matches: (Active) -> Bool = { _ in true }) async {
        _ = try? await exclusive { () async throws(EngineError) -> Bool in
            guard case .playing(let active) = state, matches(active) else { return false }
            _ = await end(active, reason)
            return true
        }
    }

    /// Called (through a Task) when a playback ended by itself: played to the end, or failed.
    func sessionEnded(_ sessionID: UUID, _ how: PlaybackEnd) async {
        _ = try? await exclusive { () async throws(EngineError) -> Bool in
            guard case .playing(let active) = state, active.sessionID == sessionID else { return false }
            switch how {
            case .completed, .stopped: _ = await end(active, .completed)
            case .failed(let e):
                logger.error("playback of \(active.recording.id) failed: \(e)")
                _ = await end(active, .failed, error: e.description)
            }
            return true
        }
    }

    /// Ends `active`: stops its thread and device, counts it when the rules say so, and records how
    /// it ended.
    private func end(_ active: Active, _ reason: PlaybackEnded.Reason, error: String? = nil) async -> PlaybackEnded {
        // Not yet idle: the awaits below let `status` in, and it must still show this playback until
        // `lastEnded` says how it ended (recctl play --wait polls for exactly that hand-over).
        state = .ending(active)
        let session = active.session
        _ = try? await runBlocking { session.stop() }
        let position = session.progress.position
        var counted = false
        if active.counts && reason != .deleted {
            do {
                _ = try await plays.count(id: active.recording.id)
                counted = true
            } catch {
                // Deleted or discarded meanwhile, or the catalog failed: the play is lost, the recording is not.
                logger.warning("playback of \(active.recording.id) ended (\(reason.rawValue)) but was not counted: \(error)")
            }
        }
        let ended = PlaybackEnded(session: active.sessionID, recordingID: active.recording.id, title: active.recording.title,
                                  reason: reason, position: position, counted: counted, at: Date(), error: error)
        state = .idle
        lastEnded = ended
        events.publish(.playbackEnded(ended))
        if counted { events.publish(.libraryChanged(LibraryChangedEvent(recordingID: active.recording.id, change: .played))) }
        logger.info("playback of \(active.recording.id) \(reason.rawValue) at \(String(format: "%.2f", position)) s\(counted ? ", counted" : "")")
        return ended
    }

    private func info(_ a: Active) -> PlaybackInfo {
        let p = a.session.progress
        return PlaybackInfo(session: a.sessionID, recording: a.recording, state: p.paused ? .paused : .playing,
                            position: p.position, duration: a.session.duration, counts: a.counts,
                            device: a.session.device, underruns: p.underruns, startedAt: a.startedAt, gain: a.gain,
                            skipSilence: a.skipSilence, speed: p.speed, enhanced: a.enhanced)
    }

    /// What is playing now, and how the last playback ended.
    public func status() -> PlaybackStatus {
        PlaybackStatus(playback: current, lastEnded: lastEnded)
    }

    /// The recording playing now, if any.
    public var current: PlaybackInfo? {
        switch state {
        case .idle: return nil
        case .playing(let a), .ending(let a): return info(a)
        }
    }
}
