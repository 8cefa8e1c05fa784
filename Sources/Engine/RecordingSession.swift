// What the Recorder drives: one recording in progress, audio or video.
import Capture
import Foundation
import MediaWire
import MediaWorker
import Metering
import RecdAPI

/// One recording in progress. `init` opens the devices and the file (nothing runs yet); `start`
/// starts the threads and waits for the first captured data; `stop` ends capture and closes the file.
/// All three block: the Recorder calls them through `runBlocking`.
protocol RecordingSession: AnyObject, Sendable {
    /// The file being written.
    var path: String { get }
    /// Starts capturing; returns when the first data arrived (DispatchTime nanoseconds).
    func start() throws -> UInt64
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
    /// What the microphone delivers and what is recorded; nil for a silent video.
    var audioFormats: (device: AudioFormatInfo, recorded: AudioFormatInfo)? { get }
    /// Pauses (true) or resumes (false) the recording: the devices go on, what they capture meanwhile
    /// is left out of the file. Does not block.
    func setPaused(_ paused: Bool)
    /// Blocks until what was recorded before the last pause is in the file (at most `timeoutMs`);
    /// returns whether it is.
    func waitUntilPauseWritten(timeoutMs: Int) -> Bool
}

/// An audio recording: the microphone into a fragmented .m4a.
final class AudioRecordingSession: RecordingSession, @unchecked Sendable {
    let path: String
    private let audio: AudioPipeline
    private let faults: FaultLatch
    /// Makes the file durable while it is written (nil: `syncIntervalMs` 0, off).
    private let dataSync: PeriodicDataSync?

    /// How long start waits for the first captured buffer before giving up on the device.
    static let firstBufferTimeoutMs = 5000

    init(path: String, capture: AlsaCaptureSettings, encoding: AudioEncoding, meterIntervalMs: Int = 50,
         syncIntervalMs: Int = EngineConfiguration.defaultSyncIntervalMs,
         onMeter: @escaping @Sendable (LevelReading) -> Void = { _ in },
         onFault: @escaping @Sendable (any Error) -> Void) throws {
        self.path = path
        let source = try AlsaCaptureSource(settings: capture)
        let faults = FaultLatch(onFault)
        self.faults = faults
        let dataSync = PeriodicDataSync(path: path, intervalMs: syncIntervalMs) { faults.report($0) }
        self.dataSync = dataSync
        let writer: WorkerAudioWriter
        do {
            writer = try WorkerAudioWriter(path: path, encoding: encoding, onOutputWritten: dataSync.map { sync in { sync.written() } })
        } catch {
            source.stop()
            throw error
        }
        do {
            audio = try AudioPipeline(source: source, sink: writer, meterIntervalMs: meterIntervalMs, onMeter: onMeter, faults: faults)
        } catch {
            source.stop()
            try? writer.finish()
            throw error
        }
    }

    func start() throws -> UInt64 {
        audio.start()
        dataSync?.start()
        do {
            return try audio.first.wait(ms: Self.firstBufferTimeoutMs) {
                CaptureError.noData(device: audio.device, waitedMs: Self.firstBufferTimeoutMs)
            }
        } catch {
            _ = stop()
            throw error
        }
    }

    func stop() -> (CaptureStats, (any Error)?) {
        faults.stop()
        let error = audio.stop()
        // After the writer has closed the file: its last fdatasync puts all of it on the disk
        // before the finalizer starts.
        dataSync?.stop()
        return (stats, error)
    }

    var stats: CaptureStats { audio.stats }
    func setPaused(_ paused: Bool) { audio.pause.set(paused: paused) }
    func waitUntilPauseWritten(timeoutMs: Int) -> Bool { audio.pause.flushes.wait(timeoutMs: timeoutMs) }
    func waveform() -> WaveformData? { audio.waveform() }
    func loudness() -> Loudness? { audio.loudness() }
    var poster: Data? { nil }
    var audioFormats: (device: AudioFormatInfo, recorded: AudioFormatInfo)? { audio.formats }
}
