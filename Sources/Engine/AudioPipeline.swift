// The sound side of a recording: ALSA capture thread → ring → encoder thread → a file's audio track.
import Alsa
import Capture
import Foundation
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Storage
import Synchronization

/// Where an `AudioPipeline`'s encoder thread puts the sound: an audio file, or the audio track of a
/// video file. Called on that thread only.
protocol AudioSink: AnyObject {
    /// Writes up to `frames` frames; returns how many went into the file (the rest were cut).
    func write(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> Int
    /// Flushes what is buffered. For a file with no other track, also closes the file.
    func finish() throws
    /// Puts what has been written so far into the file now (the recording paused).
    func flush() throws
}

extension WorkerAudioWriter: AudioSink {
    // `flush()` is the writer's own.
    func write(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> Int {
        try append(interleaved: samples, frames: frames)
        return frames
    }
}

/// Reports the first fault of a recording (device gone, disk full) once, and none after a stop was
/// asked for: the owner ends the recording cleanly with what was captured.
final class FaultLatch: Sendable {
    private let reported = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let onFault: @Sendable (any Error) -> Void
    init(_ onFault: @escaping @Sendable (any Error) -> Void) { self.onFault = onFault }
    func report(_ error: any Error) {
        guard !stopped.load(ordering: .relaxed), !reported.exchange(true, ordering: .relaxed) else { return }
        onFault(error)
    }
    func stop() { stopped.store(true, ordering: .relaxed) }
}

/// Waits (blocking) for the first item of a capture, or for the error that prevented it.
final class FirstArrival: Sendable {
    private let at = Atomic<UInt64>(0)
    private let failure = Mutex<(any Error)?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    /// Records the arrival time (DispatchTime nanoseconds) the first time; later calls do nothing.
    func arrived() {
        if at.compareExchange(expected: 0, desired: DispatchTime.now().uptimeNanoseconds, ordering: .relaxed).exchanged {
            signal.signal()
        }
    }
    var hasArrived: Bool { at.load(ordering: .relaxed) != 0 }
    /// The capture failed before its first item.
    func failed(_ error: any Error) {
        failure.withLock { $0 = error }
        signal.signal()
    }
    /// The arrival time, or the failure, or `timeout()` when nothing came in `ms`.
    func wait(ms: Int, timeout: () -> any Error) throws -> UInt64 {
        _ = signal.wait(timeout: .now() + .milliseconds(ms))
        signal.signal()   // later waiters pass at once
        let t = at.load(ordering: .relaxed)
        if t != 0 { return t }
        if let e = failure.withLock({ $0 }) { throw e }
        throw timeout()
    }
}

/// Ties an ALSA capture source to an `AudioSink`.
///
/// Threads: the capture thread (owned by `AlsaCaptureSource`) writes periods into the ring and meters
/// them; the encoder thread (owned here) reads blocks from the ring into the sink and the waveform.
/// Faults go to the latch.
///
/// Capture never waits for a media worker (issue 36): the sink (a writer in a worker) and the
/// converter (when the device's format is not the recording's) are made by the encoder thread once
/// both threads run, while the capture thread already fills the ring — or, before the converter is
/// there, keeps the device's own bytes aside (`backlog`) and converts them first once it is. So a
/// take holds its sound from the first period the device delivered, however long a worker takes to
/// start (an exec of recd-media and FFmpeg's ~130 libraries: 40 ms on a quiet machine, seconds on a
/// loaded one or a cold SD card). `sinkReady` tells when the sink is there, or why it never will be.
final class AudioPipeline: @unchecked Sendable {
    let device: String
    private let source: AlsaCaptureSource
    private let ring: PCMRingBuffer
    /// Makes the sink on the encoder thread (`prepare`), which alone uses it.
    private let makeSink: () throws -> any AudioSink
    let sinkReady = FirstArrival()
    private let faults: FaultLatch
    private let encoderDone = DispatchSemaphore(value: 0)
    let first = FirstArrival()
    private let writerError = Mutex<(any Error)?>(nil)
    /// Runs on the capture thread, on the captured buffers themselves.
    private let meter: LevelMeter
    private let onMeter: @Sendable (LevelReading) -> Void
    /// Run on the encoder thread, on exactly what goes into the file.
    private let waveformBuilder: WaveformBuilder
    private let loudnessMeter: LoudnessMeter?
    /// Anchored by the capture thread when the recording has video to line up with.
    let clock: AudioClock?
    /// Frames to drop before the first one written, decided by the video side (see
    /// `VideoRecordingSession`); nil when the sound starts the file.
    private let leadIn: (@Sendable () -> Int64)?
    /// The device's samples → the recording's format, on the capture thread; nil when the device
    /// delivers the recording's format itself. Made on the encoder thread, taken by the capture thread.
    private let conversion: (format: CapturedSampleFormat, rate: Int, channels: Int, toRate: Int, toChannels: Int)?
    private let converter = Mutex<HandedOver?>(nil)
    /// The converter, made on the encoder thread and from then on used by the capture thread alone.
    private struct HandedOver: @unchecked Sendable { let converter: WorkerPCMConverter }
    /// The capture thread's: device bytes captured before the converter was there, and how many more
    /// frames it may hold (the ring's length of device frames); frames beyond are dropped, counted.
    private var backlog: [UInt8] = []
    private var backlogRoom: Int
    private let backlogDropped = Atomic<Int>(0)
    /// Pause and resume, applied on the capture thread (see `CapturePause`).
    let pause: CapturePause
    /// The capture thread's copy of a period being faded (the captured buffer is not ours to change).
    private var fadeScratch: [Int16] = []

    /// `ringSeconds`: slack between capture and encoder (absorbs a disk stall, or a worker's start,
    /// without an overrun). `sink`: makes the sink, on the encoder thread (see above).
    init(source: AlsaCaptureSource, sink: @escaping () throws -> any AudioSink, meterIntervalMs: Int, ringSeconds: Int = 2,
         clock: AudioClock? = nil, leadIn: (@Sendable () -> Int64)? = nil,
         onMeter: @escaping @Sendable (LevelReading) -> Void, faults: FaultLatch) {
        let capture = source.settings
        self.device = capture.device
        self.source = source
        self.makeSink = sink
        self.faults = faults
        self.onMeter = onMeter
        self.clock = clock
        self.leadIn = leadIn
        meter = LevelMeter(LevelMeterSettings(sampleRate: capture.sampleRate, channels: capture.channels,
                                              intervalMs: meterIntervalMs))
        waveformBuilder = WaveformBuilder(sampleRate: capture.sampleRate, channels: capture.channels)
        loudnessMeter = LoudnessMeter(sampleRate: capture.sampleRate, channels: capture.channels)
        ring = PCMRingBuffer(capacityFrames: capture.sampleRate * ringSeconds, channels: capture.channels)
        pause = CapturePause(sampleRate: capture.sampleRate)
        let d = source.deviceFormat
        if d.format == .s16 && d.rate == capture.sampleRate && d.channels == capture.channels {
            conversion = nil
        } else {
            conversion = (CapturedSampleFormat(d.format), d.rate, d.channels, capture.sampleRate, capture.channels)
        }
        backlogRoom = d.rate * ringSeconds
    }

    /// What the device delivers and what is recorded, for the start reply and status.
    var formats: (device: AudioFormatInfo, recorded: AudioFormatInfo) {
        let d = source.deviceFormat, c = source.settings
        return (AudioFormatInfo(sampleFormat: d.format.rawValue, sampleRate: d.rate, channels: d.channels),
                AudioFormatInfo(sampleFormat: AlsaSampleFormat.s16.rawValue, sampleRate: c.sampleRate, channels: c.channels))
    }

    /// Starts both threads. `first` tells when the first buffer came (or why none will).
    func start() {
        let encoderThread = Thread { [self] in self.encodeLoop() }
        encoderThread.name = "recd-encoder"
        encoderThread.start()
        source.start(clock: clock, deliver: { [self] raw, frames in
            // Meters, waveform and file all see the recording's format.
            // While paused nothing is written or metered; the joins are faded (`CapturePause`).
            func take(_ samples: UnsafeBufferPointer<Int16>, _ frames: Int) {
                guard frames > 0 else { return }
                let plan = self.pause.plan(frames: frames)
                switch plan {
                case .drop:
                    return
                case .keep:
                    self.ring.write(samples, frames: frames)
                    self.meter.process(samples, frames: frames, self.onMeter)
                case .fadeOut, .fadeIn:
                    let channels = self.ring.channels
                    let count = if case .fadeOut(let n) = plan { n } else { frames }
                    if self.fadeScratch.count < count * channels { self.fadeScratch = [Int16](repeating: 0, count: count * channels) }
                    self.fadeScratch.withUnsafeMutableBufferPointer { scratch in
                        let part = UnsafeMutableBufferPointer(rebasing: scratch[0..<(count * channels)])
                        _ = part.update(fromContentsOf: UnsafeBufferPointer(rebasing: samples[0..<(count * channels)]))
                        self.pause.fade(plan, part, frames: count, channels: channels)
                        self.ring.write(UnsafeBufferPointer(part), frames: count)
                        self.meter.process(UnsafeBufferPointer(part), frames: count, self.onMeter)
                    }
                    // Paused: what came before goes to the disk now, not when the next block fills.
                    if case .fadeOut = plan { self.ring.markFlush() }
                }
            }
            if let conversion = self.conversion {
                let frameBytes = conversion.channels * conversion.format.bytesPerSample
                guard let converter = self.converter.withLock({ $0 })?.converter else {
                    // No converter yet (its worker is starting): the device's bytes wait here.
                    let kept = min(frames, self.backlogRoom)
                    self.backlog.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<(kept * frameBytes)]))
                    self.backlogRoom -= kept
                    if kept < frames { self.backlogDropped.add(frames - kept, ordering: .relaxed) }
                    self.first.arrived()
                    return
                }
                do {
                    if !self.backlog.isEmpty {
                        let waiting = self.backlog
                        self.backlog = []
                        let converted = try waiting.withUnsafeBytes { try converter.convert($0.baseAddress!, frames: $0.count / frameBytes) }
                        take(converted, converted.count / converter.output.channels)
                    }
                    let converted = try converter.convert(raw.baseAddress!, frames: frames)
                    take(converted, converted.count / converter.output.channels)
                } catch {
                    self.faults.report(EngineError.conversion(device: self.device, underlying: error))
                }
            } else {
                take(raw.assumingMemoryBound(to: Int16.self), frames)
            }
            self.first.arrived()
        }, onEnd: { [self] error in
            self.pause.captureEnded()
            self.ring.close()
            if let error {
                // Failed before the first buffer: that is start's error, not a fault.
                if self.first.hasArrived { self.faults.report(error) } else { self.first.failed(error) }
            }
        })
    }

    static let encoderBlockFrames = 16384

    /// The encoder thread's first work: the converter and the sink (each may start a worker).
    private func prepare() throws -> any AudioSink {
        if let c = conversion {
            let made = try WorkerPCMConverter(from: c.format, rate: c.rate, channels: c.channels, toRate: c.toRate, toChannels: c.toChannels)
            converter.withLock { $0 = HandedOver(converter: made) }
        }
        return try makeSink()
    }

    private func encodeLoop() {
        defer { encoderDone.signal() }
        let sink: any AudioSink
        do {
            sink = try prepare()
            sinkReady.arrived()
        } catch {
            writerError.withLock { $0 = error }
            pause.flushes.written()
            sinkReady.failed(error)
            ring.close()
            return
        }
        let channels = ring.channels
        // Blocks of 16384 frames (341 ms at 48 kHz): the encoder thread wakes about 3 times a second,
        // and each block is one round trip to the media worker. Fewer, larger blocks cost less CPU
        // (recd and its worker, 10 s of AAC, interleaved runs: median 0.245 s against 0.285-0.320 with
        // 8192, 4096 cost FLAC 10% more than 8192); the price is what recd's ring holds when it is
        // killed, up to one block more on top of the fragment the muxer holds (docs/storage.md).
        let blockFrames = Self.encoderBlockFrames
        var block = [Int16](repeating: 0, count: blockFrames * channels)
        do {
            if let leadIn {
                var skip = leadIn()
                while skip > 0 {
                    let n = Int(min(skip, Int64(blockFrames))) * channels
                    let frames = block.withUnsafeMutableBufferPointer { ring.read(into: .init(rebasing: $0[0..<n]), minFrames: 1) }
                    if frames == 0 { break }
                    skip -= Int64(frames)
                }
            }
            while true {
                let (frames, flush) = block.withUnsafeMutableBufferPointer { ring.readBlock(into: $0, minFrames: blockFrames) }
                if frames == 0 && !flush { break }
                try block.withUnsafeBufferPointer {
                    // The waveform is of what is in the file.
                    let written = try sink.write(interleaved: UnsafeBufferPointer(rebasing: $0[0..<(frames * channels)]), frames: frames)
                    if written > 0 {
                        waveformBuilder.append($0, frames: written)
                        loudnessMeter?.add($0, frames: written)
                    }
                }
                if flush {
                    try sink.flush()
                    pause.flushes.written()
                }
            }
            try sink.finish()
        } catch {
            writerError.withLock { $0 = error }
            pause.flushes.written()   // nothing more will be written: a pause waits no longer
            // Keep what is on disk: close the file as well as possible, then stop capturing.
            try? sink.finish()
            faults.report(error)
            ring.close()
            // Drain so that the capture side never waits on us (it does not, but stay tidy).
            while block.withUnsafeMutableBufferPointer({ ring.read(into: $0, minFrames: 1) }) > 0 {}
        }
    }

    /// Stops capture, lets the encoder write out everything captured and finish the sink.
    /// Blocking; idempotent. Returns the sink's error, if it had one.
    func stop() -> (any Error)? {
        source.stop()
        ring.close()
        encoderDone.wait()
        encoderDone.signal()
        return writerError.withLock { $0 }
    }

    /// The waveform of what was written. Call after `stop()` (the encoder thread has ended).
    func waveform() -> WaveformData { waveformBuilder.finish() }

    /// EBU R128 loudness of what was written. Call after `stop()`.
    func loudness() -> Loudness? { loudnessMeter?.result() }

    /// Counters so far.
    var stats: CaptureStats {
        let c = source.stats
        return CaptureStats(framesCaptured: c.framesCaptured, overruns: c.overruns,
                            droppedFrames: c.overrunFrames + ring.droppedFrames + Int64(backlogDropped.load(ordering: .relaxed)))
    }
}

extension CapturedSampleFormat {
    /// The converter's name for an ALSA sample format.
    init(_ alsa: AlsaSampleFormat) {
        switch alsa {
        case .s16: self = .s16
        case .s32: self = .s32
        case .float: self = .float
        case .s24Packed: self = .s24Packed
        case .s24In32: self = .s24In32
        }
    }
}
