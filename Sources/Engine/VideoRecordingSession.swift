// A video recording: V4L2 camera (+ ALSA microphone) → H.264 (+ AAC) in a fragmented .mov.
import Capture
import Foundation
import Logging
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Storage
import Synchronization

/// Camera frames handed from the capture thread to the video thread, still in their driver buffers.
/// Never longer than the camera's buffer count (each entry holds one buffer), so it needs no bound.
final class FrameQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var frames: [V4L2Frame] = []
    private var closed = false

    func push(_ frame: V4L2Frame) {
        condition.lock(); defer { condition.unlock() }
        frames.append(frame)
        condition.signal()
    }

    /// The next frame; nil once closed and empty.
    func pop() -> V4L2Frame? {
        condition.lock(); defer { condition.unlock() }
        while frames.isEmpty && !closed { condition.wait() }
        return frames.isEmpty ? nil : frames.removeFirst()
    }

    func close() {
        condition.lock(); defer { condition.unlock() }
        closed = true
        condition.broadcast()
    }
}

/// A value decided once by one thread and waited for by another (or given up on at a stop).
final class Decision<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)
    private let ready = DispatchSemaphore(value: 0)
    func set(_ v: T) {
        let first = value.withLock { cur -> Bool in if cur == nil { cur = v; return true }; return false }
        if first { ready.signal() }
    }
    var current: T? { value.withLock { $0 } }
    /// Blocks until set (or `cancel()`), then returns the value (nil when cancelled).
    func wait() -> T? {
        ready.wait(); ready.signal()
        return current
    }
    func cancel() { ready.signal() }
}

/// The audio track of a `WorkerVideoWriter`, cut where the picture ends.
///
/// At a stop the sound must end where the last frame does, which is known only once the video
/// thread has drained its queue. Meanwhile the audio encoder thread is held at a point that is
/// surely before that end (`hold(at:)`: it waits there, the ring keeps capturing), then released
/// with the exact cut (`cut(at:)`), so the track neither stops short nor runs past the picture.
final class MovAudioSink: AudioSink, @unchecked Sendable {
    private let writer: WorkerVideoWriter
    private let condition = NSCondition()
    private var holdAt: Int64 = .max
    private var cutAt: Int64?
    private var written: Int64 = 0
    init(_ writer: WorkerVideoWriter) { self.writer = writer }

    func hold(at frames: Int64) {
        condition.lock(); defer { condition.unlock() }
        holdAt = max(0, frames)
    }

    func cut(at frames: Int64) {
        condition.lock(); defer { condition.unlock() }
        cutAt = max(0, frames)
        condition.broadcast()
    }

    func write(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> Int {
        var offset = 0
        while offset < frames {
            condition.lock()
            let cap = cutAt ?? holdAt
            if written >= cap {
                if cutAt != nil { condition.unlock(); return offset }   // past the cut: dropped
                condition.wait()
                condition.unlock()
                continue
            }
            condition.unlock()
            let n = Int(min(Int64(frames - offset), cap - written))
            let channels = writer.audioChannels
            try writer.appendAudio(interleaved: UnsafeBufferPointer(rebasing: samples[(offset * channels)...]), frames: n)
            written += Int64(n)
            offset += n
        }
        return frames
    }

    func finish() throws { try writer.finishAudio() }
    func flush() throws { try writer.flush() }
}

/// One video recording.
///
/// Threads: the camera's capture thread queues frames (no copy); the video thread (owned here)
/// stamps, converts and encodes them into the file, then gives each buffer back to the driver. With
/// sound, the `AudioPipeline`'s two threads write the audio track of the same file.
///
/// Sync: both streams are placed by capture time on CLOCK_MONOTONIC. Each video frame carries its
/// driver's timestamp; the audio capture anchors an `AudioClock` with ALSA's timestamps; a frame's
/// time in the file is the audio position captured at its instant. The file starts at the first
/// frame the camera delivered after the sound started (the sound before it is dropped: `leadIn`) and
/// ends at the instant `stop()` is called (later frames and sound are dropped), so both streams
/// cover the same span.
package final class VideoRecordingSession: RecordingSession, @unchecked Sendable {
    package let path: String
    let info: VideoCaptureInfo
    private let camera: any CameraSource
    private let writer: WorkerVideoWriter
    private let audio: AudioPipeline?
    private let audioSink: MovAudioSink?
    private let faults: FaultLatch
    /// Makes the file durable while it is written (nil: `syncIntervalMs` 0, off).
    private let dataSync: PeriodicDataSync?
    private let queue = FrameQueue()
    private let videoDone = DispatchSemaphore(value: 0)
    private let firstFrame = FirstArrival()
    private let posterData = Mutex<Data?>(nil)
    private let videoError = Mutex<(any Error)?>(nil)
    /// Audio frames before the file's start (decided by the video thread at the first frame).
    private let origin = Decision<Int64>()
    /// CLOCK_MONOTONIC instant of the stop: nothing captured after it goes into the file.
    private let endNs = Atomic<UInt64>(.max)
    private let stopOnce = Mutex<(CaptureStats, (any Error)?)?>(nil)
    private let rejectedFrames = Atomic<Int64>(0)
    /// Pauses of a silent video (one with sound pauses by its sound: `AudioPipeline.pause`).
    private let silentPause = MonotonicPause()
    /// The video thread has put what came before the current pause into the file (silent video).
    private var flushedForPause = false

    static let firstFrameTimeoutMs = 5000

    /// Opens the file for `camera` and `audio`'s microphone (nil: a silent video), both opened by
    /// the caller (the camera first: `DeviceSessionFactory`); closes them when it throws. `fps`: the
    /// rate asked for, for a camera that does not say its own.
    package init(path: String, camera: any CameraSource, fps: Int, video: VideoEncoding,
         audio: (source: any CaptureSource, encoding: AudioEncoding)?, meterIntervalMs: Int = 50,
         syncIntervalMs: Int = EngineConfiguration.defaultSyncIntervalMs,
         onMeter: @escaping @Sendable (LevelReading) -> Void = { _ in },
         onFault: @escaping @Sendable (any Error) -> Void) throws {
        self.path = path
        let f = camera.format
        var encoding = video
        encoding.width = f.width
        encoding.height = f.height
        encoding.fps = f.rate.fps > 0 ? f.rate.fps : Double(fps)
        let microphone = audio?.source
        let faults = FaultLatch(onFault)
        self.faults = faults
        let dataSync = PeriodicDataSync(path: path, intervalMs: syncIntervalMs) { faults.report($0) }
        self.dataSync = dataSync
        do {
            writer = try WorkerVideoWriter(path: path, video: encoding,
                                         camera: CameraFrameFormat(fourcc: f.pixelFormat.rawValue, width: f.width, height: f.height,
                                                                   bytesPerLine: f.bytesPerLine),
                                         audio: audio?.encoding, onOutputWritten: dataSync.map { sync in { sync.written() } })
        } catch {
            microphone?.stop()
            camera.close()
            throw error
        }
        self.camera = camera
        info = VideoCaptureInfo(device: camera.device, pixelFormat: f.pixelFormat.description, width: f.width,
                                height: f.height, fps: encoding.fps, encoder: encoding.summary)
        if let microphone, let audio {
            let sink = MovAudioSink(writer)
            audioSink = sink
            let origin = self.origin
            // Six seconds of ring: the sound waits there while the camera delivers its first frame
            // (start gives up after five).
            self.audio = AudioPipeline(source: microphone, sink: { sink }, meterIntervalMs: meterIntervalMs, ringSeconds: 6,
                                       clock: AudioClock(sampleRate: microphone.sampleRate),
                                       leadIn: { origin.wait() ?? 0 }, onMeter: onMeter, faults: faults)
        } else {
            self.audio = nil
            audioSink = nil
        }
    }

    package func start() throws -> SessionStart {
        let videoThread = Thread { [self] in self.videoLoop() }
        videoThread.name = "recd-video-encoder"
        videoThread.start()
        audio?.start()
        dataSync?.start()
        do {
            try camera.start(deliver: { [queue] frame in queue.push(frame) }, onEnd: { [self] error in
                self.queue.close()
                if let error {
                    if self.firstFrame.hasArrived { self.faults.report(error) } else { self.firstFrame.failed(error) }
                }
            })
            let device = camera.device
            let frameAt = try firstFrame.wait(ms: Self.firstFrameTimeoutMs) { [camera, audio] in
                // Frames came but none was written: the video thread is waiting for the first sound.
                if let audio, camera.stats.frames > 0, !audio.first.hasArrived {
                    return CaptureError.noData(device: audio.device, waitedMs: Self.firstFrameTimeoutMs)
                }
                return CaptureError.videoNoData(device: device, waitedMs: Self.firstFrameTimeoutMs)
            }
            guard let audio else { return SessionStart(firstAt: frameAt) }
            // Both are flowing once the later of the two has come (the file starts at that frame).
            let soundAt = try audio.first.wait(ms: 100) { CaptureError.noData(device: audio.device, waitedMs: 100) }
            // The sound's converter, when the microphone's format needs one, is made by its encoder thread.
            _ = try audio.sinkReady.wait(ms: AudioRecordingSession.writerTimeoutMs) {
                MediaWorkerError.failed("the media worker that converts \(audio.device)'s sound did not start in \(AudioRecordingSession.writerTimeoutMs / 1000) s")
            }
            return SessionStart(firstAt: max(frameAt, soundAt))
        } catch {
            _ = stop()
            throw error
        }
    }

    /// The video thread: stamp, convert, encode, give the buffer back.
    private func videoLoop() {
        defer { videoDone.signal() }
        var firstNs: UInt64?
        var rejectedInARow = 0
        do {
            while let frame = queue.pop() {
                defer { camera.requeue(frame.index) }
                guard frame.timestampNs <= endNs.load(ordering: .relaxed) else { continue }
                guard let pts = try stamp(frame, firstNs: &firstNs) else { continue }
                let isFirst = !firstFrame.hasArrived
                do {
                    try writer.appendVideo(frame.bytes, pts: pts, poster: isFirst ? { jpeg in self.posterData.withLock { $0 = jpeg } } : nil)
                    rejectedInARow = 0
                } catch let rejected as FrameRejected {
                    // Counted with the frames the camera dropped; a camera that sends nothing usable
                    // for a second's worth of frames is broken.
                    rejectedFrames.add(1, ordering: .relaxed)
                    rejectedInARow += 1
                    if rejectedInARow > max(5, Int(writer.video.fps)) { throw rejected }
                    continue
                }
                if isFirst { firstFrame.arrived() }
            }
            try writer.finishVideo()
            silentPause.flushes.written()
        } catch {
            silentPause.flushes.written()
            videoError.withLock { $0 = error }
            origin.cancel()
            // Before the first frame this is start's error (e.g. the microphone failed), not a fault.
            if firstFrame.hasArrived { faults.report(error) } else { firstFrame.failed(error) }
            // Give every queued buffer back; the capture side goes on until the recording is stopped.
            while let frame = queue.pop() { camera.requeue(frame.index) }
        }
    }

    /// The frame's time in the file (`VideoEncoding.timeBase`), or nil to leave it out (captured
    /// before the sound started).
    private func stamp(_ frame: V4L2Frame, firstNs: inout UInt64?) throws -> Int64? {
        let tb = Double(VideoEncoding.timeBase.den) / Double(VideoEncoding.timeBase.num)
        guard let audio, let clock = audio.clock else {
            // A silent video: time from its first frame.
            let t0 = firstNs ?? frame.timestampNs
            firstNs = t0
            guard let at = silentPause.fileTime(ofNs: frame.timestampNs) else {
                // Paused: what was encoded before goes to the disk now (with sound, the sound's
                // encoder thread does this).
                if !flushedForPause {
                    try writer.flush()
                    flushedForPause = true
                    silentPause.flushes.written()
                }
                return nil
            }
            flushedForPause = false
            let sinceFirst = max(0, Int64(bitPattern: at &- t0))
            return Int64((Double(sinceFirst) / 1e9 * tb).rounded())
        }
        let rate = Double(clock.sampleRate)
        if origin.current == nil {
            // The first frame waits for the sound's first buffer (its clock anchor).
            _ = try audio.first.wait(ms: Self.firstFrameTimeoutMs) {
                CaptureError.noData(device: audio.device, waitedMs: Self.firstFrameTimeoutMs)
            }
            guard let position = clock.position(atNs: frame.timestampNs) else { return nil }
            // A frame from before the sound started (by more than half a frame) is left out.
            let halfFrame = rate / max(1, writer.video.fps) / 2
            if position < -halfFrame { return nil }
            origin.set(max(0, Int64(position.rounded())))
        }
        guard let captured = clock.position(atNs: frame.timestampNs), let start = origin.current else { return nil }
        // A frame captured in a pause is left out; later ones move back by the pauses before them.
        // Which side of a pause's start a frame falls on is known once the sound has reached it.
        audio.pause.waitForSound(through: captured, timeoutMs: 200)
        guard let position = audio.pause.filePosition(of: captured) else { return nil }
        return max(0, Int64(((position - Double(start)) / rate * tb).rounded()))
    }

    package func stop() -> (CaptureStats, (any Error)?) {
        if let done = stopOnce.withLock({ $0 }) { return done }
        faults.stop()
        let now = MonotonicClock.nowNs()
        endNs.store(now, ordering: .relaxed)
        let rate = Double(audio?.clock?.sampleRate ?? 48_000)
        // Hold the sound two frames before the stop: the picture surely reaches that far (the last
        // frame is at most a frame old, and shown for one more).
        if let audio, let sink = audioSink, let start = origin.current, let captured = audio.clock?.position(atNs: now) {
            let position = audio.pause.clampedFilePosition(of: captured)
            sink.hold(at: Int64(position.rounded()) - start - 2 * Int64(rate / max(1, writer.video.fps)))
        }
        camera.stop()            // no frame after this; the video thread drains the queue
        queue.close()
        videoDone.wait()
        videoDone.signal()
        origin.cancel()
        // The sound ends where the picture does (its last frame shown for one frame's time): the
        // microphone goes on until it has captured that far (a period or two), and the track is cut
        // there.
        if let audio, let sink = audioSink {
            if let start = origin.current, let end = writer.videoEnd {
                let frames = Int64((Double(end) * Double(VideoEncoding.timeBase.num) / Double(VideoEncoding.timeBase.den) * rate).rounded())
                // (Stopped while paused: the sound has ended where the pause began.)
                audio.pause.waitForFile(through: Double(start + frames), timeoutMs: 500)
                sink.cut(at: frames)
            } else {
                sink.cut(at: .max)   // no picture at all: keep the sound
            }
        }
        let audioError = audio?.stop()
        var error: (any Error)? = videoError.withLock { $0 } ?? audioError
        do { try writer.close() } catch let closeError { if error == nil { error = closeError } }
        // After the file is closed: its last fdatasync puts all of it on the disk before the
        // finalizer starts.
        dataSync?.stop()
        camera.close()
        let result = (stats, error)
        stopOnce.withLock { $0 = result }
        return result
    }

    package var stats: CaptureStats {
        var s = audio?.stats ?? CaptureStats()
        let c = camera.stats
        s.videoFrames = writer.framesWritten
        s.videoDroppedFrames = c.droppedFrames + rejectedFrames.load(ordering: .relaxed) + writer.framesSkipped
        return s
    }

    package func setPaused(_ paused: Bool) {
        if let audio {
            audio.pause.set(paused: paused)
        } else {
            silentPause.set(paused: paused, atNs: MonotonicClock.nowNs())
        }
    }

    package func waitUntilPauseWritten(timeoutMs: Int) -> Bool {
        (audio?.pause.flushes ?? silentPause.flushes).wait(timeoutMs: timeoutMs)
    }

    package func waveform() -> WaveformData? { audio?.waveform() }
    package func loudness() -> Loudness? { audio?.loudness() }
    package var poster: Data? { posterData.withLock { $0 } }
    package var video: VideoCaptureInfo? { info }
    package func finalize(data: DataDirectory, logger: Logger) -> FinishedFile {
        RecordingFinalizer.finalize(path: path, data: data, logger: logger)
    }
    package var audioFormats: (device: AudioFormatInfo, recorded: AudioFormatInfo)? { audio?.formats }
}
