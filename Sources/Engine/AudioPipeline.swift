// The sound side of a recording: capture thread (a CaptureSource's) → ring → encoder thread → a file's audio track.
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
package protocol AudioSink: AnyObject {
    /// Writes up to `frames` frames; returns how many went into the file (the rest were cut).
    func write(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> Int
    /// Flushes what is buffered. For a file with no other track, also closes the file.
    func finish() throws
    /// Puts what has been written so far into the file now (the recording paused).
    func flush() throws
}

extension WorkerAudioWriter: AudioSink {
    // `flush()` is the writer's own.
    package func write(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> Int {
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

/// Ties a capture source (ALSA's, or memory in tests) to an `AudioSink`.
///
/// Threads: the capture thread (owned by the `CaptureSource`) writes periods into the ring and meters
/// them; the encoder thread (owned here) reads blocks from the ring into the sink and the waveform.
/// Faults go to the latch.
///
/// Capture never waits for a media worker (issues 36 and 46). The sink (a writer in a worker) is made
/// by the encoder thread once both threads run, while the capture thread already fills the ring. A
/// device whose format is not the recording's (most USB microphones give S24 or S32, or 44.1 kHz)
/// has its bytes put, as they are, into a second ring (`deviceRing`); a conversion thread of its own
/// converts them in a worker and does what the capture thread does otherwise (pause, meters, the
/// ring). So a take holds its sound from the first period the device delivered, however long a
/// worker takes to start (an exec of recd-media and FFmpeg's ~130 libraries: 40 ms on a quiet
/// machine, seconds on a loaded one or a cold SD card) or to answer. `sinkReady` tells when the sink
/// is there, or why it never will be.
package final class AudioPipeline: @unchecked Sendable {
    let device: String
    private let source: any CaptureSource
    private let ring: PCMRingBuffer
    /// Makes the sink on the encoder thread (`prepare`), which alone uses it.
    private let makeSink: () throws -> any AudioSink
    let sinkReady = FirstArrival()
    /// The encoder has written what was captured while its sink was made (at most a block is left
    /// waiting, as in a take's steady state), or never will (it ended).
    let caughtUp = FirstArrival()
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
    /// The device's samples → the recording's format; nil when the device delivers the recording's
    /// format itself.
    private let conversion: (format: CapturedSampleFormat, rate: Int, channels: Int, toRate: Int, toChannels: Int)?
    /// The device's bytes as captured (a frame's bytes as its channels), for the conversion thread:
    /// `deviceRingSeconds` of them, through a worker's start or a stall; beyond, dropped and counted.
    private let deviceRing: FrameRing<UInt8>?
    static let deviceRingSeconds = 5
    /// The converter, made on the encoder thread and from then on used by the conversion thread alone.
    private struct HandedOver: @unchecked Sendable { let converter: WorkerPCMConverter }
    /// Signalled once the conversion thread has put everything into `ring` (or will never run).
    private let conversionDone = DispatchSemaphore(value: 0)
    /// Pause and resume, applied on the capture thread, or the conversion thread (see `CapturePause`).
    let pause: CapturePause
    /// The delivering thread's copy of a period being faded (the captured buffer is not ours to change).
    private var fadeScratch: [Int16] = []

    /// `ringSeconds`: slack between capture and encoder (absorbs a disk stall, or a worker's start,
    /// without an overrun). `sink`: makes the sink, on the encoder thread (see above).
    init(source: any CaptureSource, sink: @escaping () throws -> any AudioSink, meterIntervalMs: Int, ringSeconds: Int = 2,
         clock: AudioClock? = nil, leadIn: (@Sendable () -> Int64)? = nil,
         onMeter: @escaping @Sendable (LevelReading) -> Void, faults: FaultLatch) {
        self.device = source.device
        self.source = source
        self.makeSink = sink
        self.faults = faults
        self.onMeter = onMeter
        self.clock = clock
        self.leadIn = leadIn
        let (rate, channels) = (source.sampleRate, source.channels)
        meter = LevelMeter(LevelMeterSettings(sampleRate: rate, channels: channels, intervalMs: meterIntervalMs))
        waveformBuilder = WaveformBuilder(sampleRate: rate, channels: channels)
        loudnessMeter = LoudnessMeter(sampleRate: rate, channels: channels)
        ring = PCMRingBuffer(capacityFrames: rate * ringSeconds, channels: channels)
        pause = CapturePause(sampleRate: rate)
        let d = source.deviceFormat
        if d.format == .s16 && d.rate == rate && d.channels == channels {
            conversion = nil
            deviceRing = nil
        } else {
            let format = CapturedSampleFormat(d.format)
            conversion = (format, d.rate, d.channels, rate, channels)
            deviceRing = FrameRing(capacityFrames: d.rate * Self.deviceRingSeconds, channels: d.channels * format.bytesPerSample)
        }
    }

    /// What the device delivers and what is recorded, for the start reply and status.
    var formats: (device: AudioFormatInfo, recorded: AudioFormatInfo) {
        let d = source.deviceFormat
        return (AudioFormatInfo(sampleFormat: d.format.rawValue, sampleRate: d.rate, channels: d.channels),
                AudioFormatInfo(sampleFormat: AlsaSampleFormat.s16.rawValue, sampleRate: source.sampleRate, channels: source.channels))
    }

    /// Starts both threads. `first` tells when the first buffer came (or why none will).
    func start() {
        let encoderThread = Thread { [self] in self.encodeLoop() }
        encoderThread.name = "recd-encoder"
        encoderThread.start()
        source.start(clock: clock, deliver: { [self] raw, frames in
            if let deviceRing = self.deviceRing {
                // Into the device ring as they are: the conversion thread takes them from there.
                deviceRing.write(raw.assumingMemoryBound(to: UInt8.self), frames: frames)
            } else {
                self.take(raw.assumingMemoryBound(to: Int16.self), frames)
            }
            self.first.arrived()
        }, onEnd: { [self] error in
            if let deviceRing = self.deviceRing {
                deviceRing.close()   // the conversion thread ends the rest once it has converted all
            } else {
                self.pause.captureEnded()
                self.ring.close()
            }
            if let error {
                // Failed before the first buffer: that is start's error, not a fault.
                if self.first.hasArrived { self.faults.report(error) } else { self.first.failed(error) }
            }
        })
    }

    /// Sound in the recording's format, from the capture thread or the conversion thread: paused or
    /// not (`CapturePause`), metered and put into the ring. Meters, waveform and file all see it.
    private func take(_ samples: UnsafeBufferPointer<Int16>, _ frames: Int) {
        guard frames > 0 else { return }
        let plan = pause.plan(frames: frames)
        switch plan {
        case .drop:
            return
        case .keep:
            ring.write(samples, frames: frames)
            meter.process(samples, frames: frames, onMeter)
        case .fadeOut, .fadeIn:
            let channels = ring.channels
            let count = if case .fadeOut(let n) = plan { n } else { frames }
            if fadeScratch.count < count * channels { fadeScratch = [Int16](repeating: 0, count: count * channels) }
            fadeScratch.withUnsafeMutableBufferPointer { scratch in
                let part = UnsafeMutableBufferPointer(rebasing: scratch[0..<(count * channels)])
                _ = part.update(fromContentsOf: UnsafeBufferPointer(rebasing: samples[0..<(count * channels)]))
                pause.fade(plan, part, frames: count, channels: channels)
                ring.write(UnsafeBufferPointer(part), frames: count)
                meter.process(UnsafeBufferPointer(part), frames: count, onMeter)
            }
            // Paused: what came before goes to the disk now, not when the next block fills.
            if case .fadeOut = plan { ring.markFlush() }
        }
    }

    /// The conversion thread: the device's bytes, as many as are there (a period, or what waited
    /// while the worker started or stalled), converted in one round trip, then `take`n. Ends the
    /// rest of the pipeline once the device ring is closed and empty.
    private func convertLoop(_ converter: WorkerPCMConverter, from deviceRing: FrameRing<UInt8>) {
        defer {
            pause.captureEnded()
            ring.close()
            conversionDone.signal()
        }
        var bytes = [UInt8](repeating: 0, count: Self.encoderBlockFrames * deviceRing.channels)
        var failed = false
        while true {
            let frames = bytes.withUnsafeMutableBufferPointer { deviceRing.read(into: $0, minFrames: 1) }
            if frames == 0 { return }
            if failed { continue }   // drained, so that capture never finds the ring full for nothing
            do {
                let converted = try bytes.withUnsafeBytes { try converter.convert($0.baseAddress!, frames: frames) }
                take(converted, converted.count / converter.output.channels)
            } catch {
                failed = true
                faults.report(EngineError.conversion(device: device, underlying: error))
            }
        }
    }

    package static let encoderBlockFrames = 16384
    /// A block's time in the device's frames (for the device ring's backlog).
    private var deviceBlockFrames: Int { Self.encoderBlockFrames * source.deviceFormat.rate / max(1, source.sampleRate) }

    /// The encoder thread's first work: the converter and its thread, then the sink (each may start
    /// a worker).
    private func prepare() throws -> any AudioSink {
        if let c = conversion, let deviceRing {
            let converter: WorkerPCMConverter
            do {
                converter = try WorkerPCMConverter(from: c.format, rate: c.rate, channels: c.channels, toRate: c.toRate, toChannels: c.toChannels)
            } catch {
                // No conversion thread will run: what it would have ended, ended here.
                pause.captureEnded()
                conversionDone.signal()
                throw error
            }
            let handed = HandedOver(converter: converter)
            let thread = Thread { [self] in self.convertLoop(handed.converter, from: deviceRing) }
            thread.name = "recd-convert"
            thread.start()
        }
        return try makeSink()
    }

    private func encodeLoop() {
        defer { caughtUp.arrived(); encoderDone.signal() }
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
                // Less than a block waiting, here and before the conversion: the reader would wait
                // for sound, not work off a backlog.
                if !caughtUp.hasArrived && ring.heldFrames < blockFrames && (deviceRing?.heldFrames ?? 0) < deviceBlockFrames {
                    caughtUp.arrived()
                }
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
        if let deviceRing {
            // What the device gave is converted to the end first (the conversion thread closes the ring).
            deviceRing.close()
            conversionDone.wait()
            conversionDone.signal()
        }
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
        // Every count in frames at the recording's rate, as the source's are: the device ring's are the
        // device's (44.1 or 96 kHz), scaled here.
        let deviceLost = deviceRing.map { source.recordingFrames($0.droppedFrames) } ?? 0
        return CaptureStats(framesCaptured: c.framesCaptured, overruns: c.overruns,
                            droppedFrames: c.overrunFrames + ring.droppedFrames + deviceLost)
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
