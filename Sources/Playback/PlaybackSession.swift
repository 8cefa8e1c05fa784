// One playback of one file: decoder → device on a thread of its own, with transport controls.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MediaWire
import MediaWorker
import Metering
import Synchronization

/// How a playback ended.
public enum PlaybackEnd: Sendable {
    /// The whole file was heard.
    case completed
    /// `stop()` ended it.
    case stopped
    /// The device or the file failed mid-way.
    case failed(PlaybackError)
}

/// What the playback thread reports while it plays (on that thread; must not block).
public enum PlaybackObservation: Sendable {
    /// Levels of what is heard now: `time` is the position (seconds) at the end of the interval.
    case meter(time: Double, LevelReading)
    /// About four times a second while playing, and at each pause, resume and seek.
    case progress(PlaybackProgress)
}

/// Where a playback is, as the playback thread last saw it.
public struct PlaybackProgress: Sendable, Equatable {
    /// Seconds from the start of the file of what is being heard now.
    public var position: Double
    public var paused: Bool
    /// Underruns (the device ran dry and was restarted).
    public var underruns: Int
    /// How fast it plays (1: as recorded; 0.5-2, the pitch kept).
    public var speed: Double = 1

    public init(position: Double, paused: Bool, underruns: Int, speed: Double = 1) {
        self.position = position; self.paused = paused; self.underruns = underruns; self.speed = speed
    }
}

/// Plays one file through one ALSA device. `init` opens both (so a missing file or device is reported
/// at once); `start` spawns the playback thread and returns when the first audio is written to the
/// device. `pause`, `resume`, `seek` and `stop` are applied by that thread; each returns once it
/// has been. A session is used once.
///
/// Pause holds the device's queue (`snd_pcm_pause`) where the device can; where it cannot (the call
/// is optional in ALSA), and for every seek, the queue is dropped and decoding continues at the exact
/// position heard.
public final class PlaybackSession: @unchecked Sendable {
    public let path: String
    public let device: String
    /// Seconds; nil when the file does not say (playback still works; seeks are not clamped at the end).
    public let duration: Double?

    // fileprivate: the playback thread's steps (PlaybackLoop, below) use them.
    fileprivate enum Command { case pause, resume, seek(Double), speed(Double), stop }
    fileprivate struct Mailbox { var commands: [(Command, DispatchSemaphore)] = [] }

    fileprivate let decoder: WorkerAudioDecoder
    fileprivate let sink: AlsaPlaybackSink
    fileprivate let mailbox = Mutex(Mailbox())
    fileprivate let progressState: Mutex<PlaybackProgress>
    fileprivate let wakePipe: (read: Int32, write: Int32)
    private let ended = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    /// The device must take audio within this long, or the playback fails.
    static let stallLimitMs = 10_000

    /// Linear gain applied to every decoded sample (level-matched playback); 1 = as recorded.
    let gain: Float
    /// Stretches skipped (Skip Silence): when what is heard enters one, playback moves to its end.
    /// Only silence is in the device's queue then, so dropping it is not heard.
    fileprivate let skipped = Mutex<[(start: Double, end: Double)]>([])

    /// Skips `stretches` (seconds, earliest first) from now on; an empty list skips nothing.
    public func skip(_ stretches: [(start: Double, end: Double)]) { skipped.withLock { $0 = stretches } }

    /// The speeds a playback takes (speech stays intelligible across them, its pitch kept).
    public static let speeds: ClosedRange<Double> = 0.5...2
    /// The speed to start at (before `start`).
    public func startSpeed(_ speed: Double) { progressState.withLock { $0.speed = speed } }
    /// Plays on at `speed` (in `speeds`) from what is heard now, without a gap.
    public func setSpeed(_ speed: Double) { send(.speed(speed)) }

    /// Opens `path` and the device; `gainDB` is applied to what is played (and metered: the meter
    /// shows the level heard). `lease`: the worker that already probed `path` for this play (a
    /// video's), or none: a job's worker of its own. Blocking (file and device I/O): call it off the
    /// cooperative pool.
    public init(path: String, device: String, gainDB: Double = 0, lease: MediaWorkerLease? = nil) throws(PlaybackError) {
        self.path = path
        self.device = device
        gain = Float(pow(10, gainDB / 20))
        let decoder: WorkerAudioDecoder
        do {
            decoder = try WorkerAudioDecoder(path: path, lease: lease)
        } catch let e as FFmpegError where e.isFileMissing {
            throw .fileMissing(file: path)
        } catch MediaError.noStream {
            throw .noSound(file: path)
        } catch {
            throw .media(file: path, detail: "\(error)")
        }
        let sink = try AlsaPlaybackSink(AlsaPlaybackSettings(device: device, sampleRate: decoder.sourceSampleRate,
                                                             channels: decoder.sourceChannels))
        do {
            try decoder.setOutput(rate: sink.rate, channels: sink.channels)
        } catch {
            throw .media(file: path, detail: "\(error)")
        }
        var fds: [Int32] = [0, 0]
        // A pipe wakes the playback thread's poll(2) when a command arrives (pipe2 needs _GNU_SOURCE).
        guard pipe(&fds) == 0 else { throw .failed(device: device, call: "pipe", code: -errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        self.decoder = decoder
        self.sink = sink
        wakePipe = (fds[0], fds[1])
        duration = decoder.duration
        progressState = Mutex(PlaybackProgress(position: 0, paused: false, underruns: 0))
    }

    deinit {
        close(wakePipe.read)
        close(wakePipe.write)
    }

    public var progress: PlaybackProgress { progressState.withLock { $0 } }

    /// Starts playing from `position` seconds. Returns the uptime (ns) at which the first audio was
    /// written to the device. `onEnd` is called once, on the playback thread, when the playback ends
    /// by itself (completed or failed); not after `stop()`.
    /// Blocking: call it off the cooperative pool.
    /// `observer` receives meters (every `meterIntervalMs`, when the audio measured is heard) and
    /// progress on the playback thread.
    public func start(at position: Double, meterIntervalMs: Int = 50,
                      observer: @escaping @Sendable (PlaybackObservation) -> Void = { _ in },
                      onEnd: @escaping @Sendable (PlaybackEnd) -> Void) throws(PlaybackError) -> UInt64 {
        precondition(!started.exchange(true, ordering: .relaxed), "PlaybackSession.start called twice")
        let firstWrite = Mutex<Result<UInt64, PlaybackError>?>(nil)
        let firstWriteDone = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            var loop = PlaybackLoop(session: self, meterIntervalMs: meterIntervalMs, observer: observer) { result in
                firstWrite.withLock { $0 = result }
                firstWriteDone.signal()
            }
            let end = loop.run(from: position)
            finished.store(true, ordering: .relaxed)
            if case .stopped = end {} else { onEnd(end) }
            ended.signal()
        }
        thread.name = "recd-playback \(device)"
        thread.qualityOfService = .userInteractive
        thread.start()
        firstWriteDone.wait()
        switch firstWrite.withLock({ $0 })! {
        case .success(let at): return at
        case .failure(let e):
            ended.wait(); ended.signal()
            throw e
        }
    }

    public func pause() { send(.pause) }
    public func resume() { send(.resume) }
    /// Moves to `seconds`, clamped to the file; keeps a paused playback paused.
    public func seek(to seconds: Double) { send(.seek(seconds)) }

    /// Ends the playback and waits for its thread. Idempotent. Blocking.
    public func stop() {
        if started.load(ordering: .relaxed) && !finished.load(ordering: .relaxed) { send(.stop) }
        if started.load(ordering: .relaxed) { ended.wait(); ended.signal() }
    }

    /// Hands a command to the playback thread and waits until it has been applied (or the thread
    /// has ended).
    private func send(_ command: Command) {
        guard started.load(ordering: .relaxed), !finished.load(ordering: .relaxed) else { return }
        let done = DispatchSemaphore(value: 0)
        mailbox.withLock { $0.commands.append((command, done)) }
        var byte: UInt8 = 1
        _ = Glibc.write(wakePipe.write, &byte, 1)
        // Wait for the thread to apply it, or to end (then the command no longer matters).
        while done.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            if finished.load(ordering: .relaxed) { return }
        }
    }
}

/// The playback thread's state and its steps: commands, a pause, the drain at the end of the file,
/// decoding, writing. `run` is the loop that calls them. Used on the playback thread only.
private struct PlaybackLoop {
    let session: PlaybackSession
    let observer: (PlaybackObservation) -> Void
    let firstWrite: (Result<UInt64, PlaybackError>) -> Void
    let rate: Double
    let channels: Int
    var sink: AlsaPlaybackSink { session.sink }

    var reportedStart = false
    var buffer: [Int16] = []
    /// Decoded frames not yet written, and where they start in `buffer`.
    var pending = 0, offset = 0
    /// Frames written since the last reset, and where in the recording they come from: from frame
    /// `frame` on, at `time`, each frame `speed` frames of the recording (one entry after a reset;
    /// one more at each pause skipped and each change of speed).
    var written = 0
    var segments: [(frame: Int, time: Double, speed: Double)] = [(0, 0, 1)]
    /// The speed, and its SpeechTempo (none at 1 until another speed was asked: as recorded, bit for bit).
    var speed = 1.0
    var tempo: SpeechTempo?
    /// The tempo let out what it held at the end of the file.
    var tempoFlushed = false
    var paused = false, pausedAt = 0.0
    /// Paused with the device's queue held (snd_pcm_pause).
    var held = false
    var draining = false, drainDeadline: UInt64 = 0
    var lastProgress = DispatchTime.now().uptimeNanoseconds
    /// Meters are measured on the samples written and reported when they are heard (the device holds
    /// up to its buffer's length): readings wait here with the position they end at.
    let meter: LevelMeter
    var meterQueue: [(time: Double, reading: LevelReading)] = []
    var lastProgressReport: UInt64 = 0
    let stallLimitNs = UInt64(PlaybackSession.stallLimitMs) * 1_000_000

    init(session: PlaybackSession, meterIntervalMs: Int, observer: @escaping (PlaybackObservation) -> Void,
         firstWrite: @escaping (Result<UInt64, PlaybackError>) -> Void) {
        self.session = session; self.observer = observer; self.firstWrite = firstWrite
        rate = Double(session.sink.rate); channels = session.sink.channels
        meter = LevelMeter(LevelMeterSettings(sampleRate: session.sink.rate, channels: channels, intervalMs: meterIntervalMs))
    }

    mutating func run(from start: Double) -> PlaybackEnd {
        do throws(PlaybackError) {
            speed = session.progress.speed
            if speed != 1 { try useTempo() }
            segments = [(0, 0, speed)]
            let from = clamp(start)
            if from > 0 { try restart(at: from) }
            while true {
                if let end = try applyCommands() { return end }
                if paused {
                    _ = try sink.wait(wake: session.wakePipe.read, timeoutMs: 1000)
                } else if draining {
                    if let end = drain() { return end }
                } else {
                    // (A block that was all pause to skip leaves nothing pending: decode the next.)
                    if pending == 0, !(try decodeNext()) || pending == 0 { continue }
                    if let end = try writePending() { return end }
                }
            }
        } catch {
            return fail(error)
        }
    }

    mutating func fail(_ e: PlaybackError) -> PlaybackEnd {
        if !reportedStart { reportedStart = true; firstWrite(.failure(e)) }
        return .failed(e)
    }

    mutating func reportStart(at uptime: UInt64) {
        guard !reportedStart else { return }
        reportedStart = true
        firstWrite(.success(uptime))
    }

    /// Where in the recording the `frame`th frame written since the last reset comes from (within
    /// the tempo's few tens of milliseconds at another speed).
    func time(ofFrame frame: Int) -> Double {
        let s = segments.last { $0.frame <= frame } ?? segments[0]
        return s.time + Double(frame - s.frame) * s.speed / rate
    }

    /// A SpeechTempo at `speed` (a new one: what an old one held is not wanted).
    mutating func useTempo() throws(PlaybackError) {
        guard let t = SpeechTempo(rate: Int(rate), channels: channels, speed: speed) else {
            throw .media(file: session.path, detail: "no speed change for \(rate) Hz, \(channels) channel(s)")
        }
        tempo = t
        tempoFlushed = false
    }

    /// The position heard now: what was written less what the device still holds.
    func heard() -> Double {
        let queued = min(written, sink.delayFrames)
        return time(ofFrame: written - queued)
    }

    func clamp(_ t: Double) -> Double { min(max(0, t), session.duration ?? .greatestFiniteMagnitude) }

    /// Continues from `t`: the decoder moves there and the device's queue is emptied.
    mutating func restart(at t: Double) throws(PlaybackError) {
        try sink.discardQueued()
        do { try session.decoder.seek(to: t) } catch { throw .media(file: session.path, detail: "\(error)") }
        segments = [(0, t, speed)]; written = 0; pending = 0; offset = 0; draining = false
        if tempo != nil { try useTempo() }
        meterQueue.removeAll(keepingCapacity: true)   // those will never be heard
        lastProgress = DispatchTime.now().uptimeNanoseconds
    }

    /// Playing out the queue at the end may take its length, and a little more.
    mutating func armDrainDeadline() {
        drainDeadline = DispatchTime.now().uptimeNanoseconds + UInt64(Double(sink.bufferFrames) / rate * 1e9) + 2_000_000_000
    }

    /// Position and pause state for readers; the meters whose audio has been heard by now; progress
    /// to the observer every 250 ms (or now, with `force`).
    mutating func publish(force: Bool = false) {
        let position = min(paused ? pausedAt : heard(), session.duration ?? .greatestFiniteMagnitude)
        let paused = self.paused
        let progress = session.progressState.withLock { p -> PlaybackProgress in
            p.position = position; p.paused = paused
            return p
        }
        if !paused, !meterQueue.isEmpty {
            var due = 0
            while due < meterQueue.count && meterQueue[due].time <= position + 0.001 { due += 1 }
            for entry in meterQueue[..<due] { observer(.meter(time: entry.time, entry.reading)) }
            meterQueue.removeFirst(due)
        }
        let now = DispatchTime.now().uptimeNanoseconds
        if force || now &- lastProgressReport >= 250_000_000 {
            lastProgressReport = now
            observer(.progress(progress))
        }
    }

    /// Applies the commands that have arrived, each acknowledged once applied. `.stopped` ends the loop.
    mutating func applyCommands() throws(PlaybackError) -> PlaybackEnd? {
        var drainPipe = [UInt8](repeating: 0, count: 64)
        while Glibc.read(session.wakePipe.read, &drainPipe, drainPipe.count) > 0 {}
        let commands = session.mailbox.withLock { m in defer { m.commands.removeAll() }; return m.commands }
        for (command, done) in commands {
            defer { done.signal() }
            switch command {
            case .stop:
                try? sink.discardQueued()
                for (_, other) in commands { other.signal() }
                return .stopped
            case .pause where !paused:
                pausedAt = heard()
                paused = true
                // Hold the queue where the device allows it (resuming is then instant, even through a
                // sound server); otherwise drop it and decode again from pausedAt.
                if sink.isRunning && sink.hold(true) {
                    held = true
                } else {
                    try sink.discardQueued()
                    pending = 0; draining = false
                }
            case .resume where paused:
                paused = false
                if held {
                    held = false
                    if !sink.hold(false) { try restart(at: pausedAt) } else if draining { armDrainDeadline() }
                } else {
                    try restart(at: pausedAt)
                }
            case .speed(let x) where x != speed:
                // What is already decoded (and sped) plays out at the old speed; what follows at the new.
                segments.append((written + pending, time(ofFrame: written + pending), x))
                speed = x
                if let tempo { tempo.set(speed: x) } else { try useTempo() }
                session.progressState.withLock { $0.speed = x }
            case .seek(let t):
                if paused {
                    // The held queue is stale now: resuming decodes from the new place.
                    if held { held = false; try sink.discardQueued(); pending = 0; draining = false }
                    pausedAt = clamp(t)
                } else {
                    try restart(at: clamp(t))
                }
            default:
                break   // pause while paused, resume while playing: nothing to do
            }
            publish(force: true)
        }
        return nil
    }

    /// The file has ended: lets the device play what it holds, then ends (`.completed`).
    mutating func drain() -> PlaybackEnd? {
        publish()
        if !sink.isRunning || sink.delayFrames == 0 || DispatchTime.now().uptimeNanoseconds > drainDeadline {
            // The end is the end of the file, whatever the encoder padded it with.
            let end = min(time(ofFrame: written), session.duration ?? .greatestFiniteMagnitude)
            session.progressState.withLock { $0.position = end }
            return .completed
        }
        var wake = pollfd(fd: session.wakePipe.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&wake, 1, 20)
        return nil
    }

    /// Decodes the next block into `buffer`; at the end of the file starts draining and returns false.
    mutating func decodeNext() throws(PlaybackError) -> Bool {
        let block: (start: Double, frames: Int)?
        do { block = try session.decoder.read(into: &buffer) } catch { throw .media(file: session.path, detail: "\(error)") }
        guard let block else {
            // At another speed, the tempo lets out what it holds first.
            if let tempo, !tempoFlushed {
                tempoFlushed = true
                tempo.flush()
                pending = tempo.read(into: &buffer); offset = 0
                if pending > 0 { return true }
            }
            sink.startIfPrepared()
            draining = true
            armDrainDeadline()
            reportStart(at: DispatchTime.now().uptimeNanoseconds)   // an empty file: nothing was ever written
            return false
        }
        pending = block.frames; offset = 0
        let skipTo = try skipSilence(blockStart: block.start)
        applyGain()
        if let tempo {
            guard buffer.withUnsafeMutableBufferPointer({ tempo.write($0, frames: pending) }) else {
                throw .media(file: session.path, detail: "the speed change refused a block of \(pending) frames")
            }
            pending = tempo.read(into: &buffer)
        }
        if let skipTo { segments.append((written + pending, skipTo, speed)) }
        return true
    }

    /// Level-matched playback's gain, on the decoded frames pending.
    mutating func applyGain() {
        let gain = session.gain
        if gain != 1 {
            // The true-peak ceiling keeps a raised level below full scale; clamping only guards
            // against a measurement the file does not match.
            let n = pending * channels
            buffer.withUnsafeMutableBufferPointer { b in
                for i in 0..<n { b[i] = Int16(clamping: Int((Float(b[i]) * gain).rounded())) }
            }
        }
    }

    /// Skip Silence, in the stream written (the device's queue is never dropped, so the sound goes on
    /// without a restart): a block that reaches into a stretch to skip is cut where it begins, and
    /// the decoder moves to where it ends; the frames written after it come from there.
    /// Returns where the recording goes on from (the stretch's end) when one was skipped.
    mutating func skipSilence(blockStart: Double) throws(PlaybackError) -> Double? {
        let blockEnd = blockStart + Double(pending) / rate
        guard let stretch = session.skipped.withLock({ $0.first { $0.start < blockEnd && $0.end - 0.05 > max(blockStart, $0.start) } }) else { return nil }
        pending = max(0, min(pending, Int(((stretch.start - blockStart) * rate).rounded())))
        do { try session.decoder.seek(to: stretch.end) } catch { throw .media(file: session.path, detail: "\(error)") }
        return stretch.end
    }

    /// Offers the pending frames to the device; meters what it took. Fails the playback when the device
    /// has taken nothing for `stallLimitMs`.
    mutating func writePending() throws(PlaybackError) -> PlaybackEnd? {
        let (offset, pending, channels) = (self.offset, self.pending, self.channels)
        let result = try buffer.withUnsafeBufferPointer { b throws(PlaybackError) in
            try sink.write(UnsafeBufferPointer(rebasing: b[(offset * channels)...]), frames: pending)
        }
        switch result {
        case .wrote(let n):
            let startTime = time(ofFrame: written)
            let startFrame = meter.framesProcessed
            var readings: [(time: Double, reading: LevelReading)] = []
            let rate = self.rate
            buffer.withUnsafeBufferPointer { b in
                meter.process(UnsafeBufferPointer(rebasing: b[(offset * channels)...]), frames: n) { reading in
                    readings.append((startTime + Double(reading.endFrame - startFrame) / rate, reading))
                }
            }
            meterQueue += readings
            self.pending -= n; self.offset += n; written += n
            lastProgress = DispatchTime.now().uptimeNanoseconds
            reportStart(at: lastProgress)
            publish()
        case .underrun:
            // What was queued has been heard; the position stays right (delay is 0 now).
            session.progressState.withLock { $0.underruns += 1 }
        case .full:
            if DispatchTime.now().uptimeNanoseconds &- lastProgress > stallLimitNs {
                return fail(.stalled(device: session.device, waitedMs: PlaybackSession.stallLimitMs))
            }
            _ = try sink.wait(wake: session.wakePipe.read, timeoutMs: 200)
        }
        return nil
    }
}
