// What the Recorder drives: one recording in progress, audio or video.
import Capture
import Foundation
import Logging
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Storage

/// One recording in progress, made by a `RecordingSessionFactory`. Its making opens the devices and
/// the file (nothing runs yet); `start` starts the threads and waits for the first captured data;
/// `stop` ends capture and closes the file; `finalize` turns that file into the one kept. All four
/// block: the Recorder calls them through `runBlocking`; the other members do not block.
package protocol RecordingSession: AnyObject, Sendable {
    /// The file being written.
    var path: String { get }
    /// Starts capturing; returns once the first data arrived (see `SessionStart`).
    func start() throws -> SessionStart
    /// Stops capture, writes out what was captured, closes the file. Idempotent. Returns the counters
    /// and the writer's error, if it had one (the file then holds what was written before it).
    func stop() -> (CaptureStats, (any Error)?)
    /// Counters so far (for status).
    var stats: CaptureStats { get }
    /// The waveform of the sound written; nil for a silent video. After `stop()`.
    func waveform() -> WaveformData?
    /// EBU R128 loudness of the sound written (measured as it was encoded); nil for a silent video.
    /// After `stop()`.
    func loudness() -> Loudness?
    /// JPEG of the first video frame; nil for audio. After `stop()`.
    var poster: Data? { get }
    /// The camera and its encoding, for the start reply and the log; nil for audio.
    var video: VideoCaptureInfo? { get }
    /// After `stop()`, unless the take is discarded: makes the file written while recording the
    /// file that is kept (a remux), and says what it holds. Never fails: a file that cannot be
    /// finalized is kept as it was written.
    func finalize(data: DataDirectory, logger: Logger) -> FinishedFile
    /// What the microphone delivers and what is recorded; nil for a silent video.
    var audioFormats: (device: AudioFormatInfo, recorded: AudioFormatInfo)? { get }
    /// Pauses (true) or resumes (false) the recording: the devices go on, what they capture meanwhile
    /// is left out of the file. Does not block.
    func setPaused(_ paused: Bool)
    /// Blocks until what was recorded before the last pause is in the file (at most `timeoutMs`);
    /// returns whether it is.
    func waitUntilPauseWritten(timeoutMs: Int) -> Bool
}

/// What a session's start says.
package struct SessionStart: Sendable {
    /// When the first data arrived (DispatchTime nanoseconds): the file's first sample.
    let firstAt: UInt64
    /// The file's writer had caught up on what capture gathered while it started. False when it had
    /// not within the ring's seconds (a machine slower than real time): until it does, that sound is
    /// in memory only, and the Recorder says so in the log.
    package var caughtUp = true
}

/// An audio recording: the microphone into a fragmented .m4a.
package final class AudioRecordingSession: RecordingSession, @unchecked Sendable {
    package let path: String
    private let audio: AudioPipeline
    private let faults: FaultLatch
    /// Makes the file durable while it is written (nil: `syncIntervalMs` 0, off).
    private let dataSync: PeriodicDataSync?

    /// How long start waits for the first captured buffer before giving up on the device.
    static let firstBufferTimeoutMs = 5000

    /// `source` into the sink `sink` makes (on the pipeline's encoder thread), which calls its
    /// argument after each write that reached the file (nil when the file is not synced).
    package init(path: String, source: any CaptureSource, sink: @escaping (_ onOutputWritten: (() -> Void)?) throws -> any AudioSink,
         meterIntervalMs: Int = 50, syncIntervalMs: Int = EngineConfiguration.defaultSyncIntervalMs,
         onMeter: @escaping @Sendable (LevelReading) -> Void = { _ in },
         onFault: @escaping @Sendable (any Error) -> Void) {
        self.path = path
        let faults = FaultLatch(onFault)
        self.faults = faults
        let dataSync = PeriodicDataSync(path: path, intervalMs: syncIntervalMs) { faults.report($0) }
        self.dataSync = dataSync
        let written: (() -> Void)? = dataSync.map { sync in { sync.written() } }
        // The writer (in a media worker) is made by the pipeline's encoder thread, while the
        // capture thread already fills the ring: ten seconds of it, more than a worker's slowest start.
        audio = AudioPipeline(source: source, sink: { try sink(written) },
                              meterIntervalMs: meterIntervalMs, ringSeconds: Self.ringSeconds, onMeter: onMeter, faults: faults)
    }

    /// Seconds of sound the ring holds between capture and the file: a disk stall, or the start of
    /// the media worker that writes the file, passes without losing any (1.9 MB at 48 kHz stereo).
    static let ringSeconds = 10

    /// How long start waits for the file's writer (a media worker's start) before giving up.
    static let writerTimeoutMs = 30_000

    /// Starts capture at once, then waits for its first buffer, for the file's writer, and for the
    /// writer to catch up on what capture gathered while it started: the reply comes when all three
    /// are there, the sound is kept from the first buffer on. Why the third: until the writer has
    /// written it, the ring holds sound no file does — seconds where a worker starts slowly (a loaded
    /// or emulated machine: 6.5 s) — and a crash or power cut right after the reply lost it (2.65 s
    /// in the power-cut test). From the reply on, a take loses what it would in its steady state.
    package func start() throws -> SessionStart {
        audio.start()
        do {
            let first = try audio.first.wait(ms: Self.firstBufferTimeoutMs) {
                CaptureError.noData(device: audio.device, waitedMs: Self.firstBufferTimeoutMs)
            }
            _ = try audio.sinkReady.wait(ms: Self.writerTimeoutMs) {
                MediaWorkerError.failed("the media worker that writes \(path) did not start in \(Self.writerTimeoutMs / 1000) s")
            }
            dataSync?.start()   // the file exists once its writer does
            // Not an error when it does not: the writer's fault, if any, comes through the latch,
            // and a writer slower than real time has the ring's seconds before frames are dropped.
            let caughtUp = (try? audio.caughtUp.wait(ms: Self.ringSeconds * 1000) { MediaWorkerError.failed("") }) != nil
            return SessionStart(firstAt: first, caughtUp: caughtUp)
        } catch {
            _ = stop()
            throw error
        }
    }

    package func stop() -> (CaptureStats, (any Error)?) {
        faults.stop()
        let error = audio.stop()
        // After the writer has closed the file: its last fdatasync puts all of it on the disk
        // before the finalizer starts.
        dataSync?.stop()
        return (stats, error)
    }

    package var stats: CaptureStats { audio.stats }
    package func setPaused(_ paused: Bool) { audio.pause.set(paused: paused) }
    package func waitUntilPauseWritten(timeoutMs: Int) -> Bool { audio.pause.flushes.wait(timeoutMs: timeoutMs) }
    package func waveform() -> WaveformData? { audio.waveform() }
    package func loudness() -> Loudness? { audio.loudness() }
    package var poster: Data? { nil }
    package var video: VideoCaptureInfo? { nil }
    package func finalize(data: DataDirectory, logger: Logger) -> FinishedFile {
        RecordingFinalizer.finalize(path: path, data: data, logger: logger)
    }
    package var audioFormats: (device: AudioFormatInfo, recorded: AudioFormatInfo)? { audio.formats }
}
