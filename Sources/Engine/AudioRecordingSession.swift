// One audio recording in progress: ALSA capture thread → ring → encoder thread → fragmented .m4a.
import Capture
import Foundation
import Media
import Metering
import RecdAPI
import Synchronization

/// Ties a capture source to a file writer for one recording.
///
/// Threads: the capture thread (owned by `AlsaCaptureSource`) writes periods into the ring; the
/// encoder thread (owned here) reads 1024-frame blocks from it and feeds `AudioFileWriter`. When
/// either side fails (device gone, disk full), `onFault` is called once so the owner can end the
/// recording cleanly with what was captured.
final class AudioRecordingSession: @unchecked Sendable {
    let path: String
    let device: String
    private let source: AlsaCaptureSource
    private let ring: PCMRingBuffer
    private let writer: AudioFileWriter
    private let encoderDone = DispatchSemaphore(value: 0)
    private let firstBuffer = DispatchSemaphore(value: 0)
    private let firstBufferAt = Atomic<UInt64>(0)
    private let writerError = Mutex<(any Error)?>(nil)
    private let startError = Mutex<(any Error)?>(nil)
    private let faultReported = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let onFault: @Sendable (any Error) -> Void
    /// Runs on the capture thread, on the captured buffers themselves.
    private let meter: LevelMeter
    private let onMeter: @Sendable (LevelReading) -> Void
    /// Runs on the encoder thread, on exactly what goes into the file.
    private let waveformBuilder: WaveformBuilder

    /// How long start waits for the first captured buffer before giving up on the device.
    static let firstBufferTimeoutMs = 5000

    /// Opens the device and the file; nothing runs yet. Blocking: call through `runBlocking`.
    init(path: String, capture: AlsaCaptureSettings, encoding: AudioEncoding, meterIntervalMs: Int = 50,
         onMeter: @escaping @Sendable (LevelReading) -> Void = { _ in },
         onFault: @escaping @Sendable (any Error) -> Void) throws {
        self.path = path
        self.device = capture.device
        self.onFault = onFault
        self.onMeter = onMeter
        meter = LevelMeter(LevelMeterSettings(sampleRate: capture.sampleRate, channels: capture.channels,
                                              intervalMs: meterIntervalMs))
        waveformBuilder = WaveformBuilder(sampleRate: capture.sampleRate, channels: capture.channels)
        source = try AlsaCaptureSource(settings: capture)
        do {
            writer = try AudioFileWriter(path: path, encoding: encoding)
        } catch {
            source.stop()
            throw error
        }
        // Two seconds of slack between capture and encoder: absorbs a disk stall without an overrun.
        ring = PCMRingBuffer(capacityFrames: capture.sampleRate * 2, channels: capture.channels)
    }

    /// Starts both threads and waits (blocking) for the first captured buffer.
    /// Returns its arrival time (`DispatchTime` nanoseconds). Throws the capture error if the device
    /// fails before delivering anything, `CaptureError.noData` if it stays silent too long.
    func start() throws -> UInt64 {
        let encoderThread = Thread { [self] in self.encodeLoop() }
        encoderThread.name = "recd-encoder"
        encoderThread.start()
        source.start(deliver: { [self] samples, frames in
            self.ring.write(samples, frames: frames)
            self.meter.process(samples, frames: frames, self.onMeter)
            if self.firstBufferAt.load(ordering: .relaxed) == 0 {
                self.firstBufferAt.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
                self.firstBuffer.signal()
            }
        }, onEnd: { [self] error in
            self.ring.close()
            if let error {
                if self.firstBufferAt.load(ordering: .relaxed) == 0 {
                    // Failed before the first buffer: that is start's error, not a fault.
                    self.startError.withLock { $0 = error }
                    self.firstBuffer.signal()
                } else {
                    self.reportFault(error)
                }
            }
        })
        let waited = firstBuffer.wait(timeout: .now() + .milliseconds(Self.firstBufferTimeoutMs))
        if waited == .timedOut || firstBufferAt.load(ordering: .relaxed) == 0 {
            let error: any Error = startError.withLock { $0 } ?? CaptureError.noData(device: device, waitedMs: Self.firstBufferTimeoutMs)
            _ = stop()
            throw error
        }
        return firstBufferAt.load(ordering: .relaxed)
    }

    private func encodeLoop() {
        defer { encoderDone.signal() }
        let channels = ring.channels
        // Blocks of 4096 frames (85 ms at 48 kHz): the encoder thread wakes about 12 times a second.
        var block = [Int16](repeating: 0, count: 4096 * channels)
        do {
            while true {
                let frames = block.withUnsafeMutableBufferPointer { ring.read(into: $0, minFrames: 4096) }
                if frames == 0 { break }
                try block.withUnsafeBufferPointer {
                    try writer.append(interleaved: $0, frames: frames)
                    waveformBuilder.append($0, frames: frames)
                }
            }
            try writer.finish()
        } catch {
            writerError.withLock { $0 = error }
            // Keep what is on disk: close the file as well as possible, then stop capturing.
            try? writer.finish()
            reportFault(error)
            ring.close()
            // Drain so that the capture side never waits on us (it does not, but stay tidy).
            while block.withUnsafeMutableBufferPointer({ ring.read(into: $0, minFrames: 1) }) > 0 {}
        }
    }

    private func reportFault(_ error: any Error) {
        guard !stopped.load(ordering: .relaxed),
              !faultReported.exchange(true, ordering: .relaxed) else { return }
        onFault(error)
    }

    /// Stops capture, lets the encoder write out everything captured, closes the file.
    /// Blocking; idempotent. Returns the capture counters and the writer's error, if it had one
    /// (the file then holds what was written before it).
    func stop() -> (CaptureStats, (any Error)?) {
        stopped.store(true, ordering: .relaxed)
        source.stop()
        ring.close()
        encoderDone.wait()
        encoderDone.signal()
        return (stats, writerError.withLock { $0 })
    }

    /// The waveform of what was written. Call after `stop()` (the encoder thread has ended).
    func waveform() -> WaveformData { waveformBuilder.finish() }

    /// Counters so far (for status).
    var stats: CaptureStats {
        let c = source.stats
        return CaptureStats(framesCaptured: c.framesCaptured, overruns: c.overruns,
                            droppedFrames: c.overrunFrames + ring.droppedFrames)
    }
}
