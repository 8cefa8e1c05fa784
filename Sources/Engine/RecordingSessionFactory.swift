// Where the Recorder's sessions come from: the devices (ALSA, V4L2) and media workers in recd, an
// in-memory stand-in in the unit tests of its state machine.
import Capture
import Foundation
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Synchronization

/// One take the Recorder asks a factory for: what to record, where, and whom to tell.
package struct RecordingSessionRequest: Sendable {
    /// `.audio`, or `.video` (with sound when `audio`).
    var type: RecordingType
    var audio: Bool
    var format: RecordingFormat
    /// The file to write (absolute).
    package var path: String
    /// Each level reading of the sound captured, on the capture thread; must not block.
    package var onMeter: @Sendable (LevelReading) -> Void
    /// The first fault of the take once it runs (device lost, the writer or the disk failed), on
    /// whichever thread saw it; must not block. Not called after the session's `stop()`.
    package var onFault: @Sendable (any Error) -> Void
    /// The sound's source when it is not the device the factory opens: a tap of the microphone
    /// listening holds (issue 49). Audio takes only.
    package var source: (any CaptureSource)? = nil
}

/// Makes the Recorder's sessions.
package protocol RecordingSessionFactory: Sendable {
    /// Opens what `take` records from and writes to (the devices, the file's writer); nothing runs
    /// until the session's `start()`. Blocking: the Recorder calls it through `runBlocking`, off its
    /// actor. Throws the device's `CaptureError` (missing, busy, unusable), a `FrameRejected` camera,
    /// or the writer's error; nothing stays open when it throws.
    func makeSession(for take: RecordingSessionRequest) throws -> any RecordingSession
}

/// recd's sessions: the ALSA microphone and the V4L2 camera from `config`, into files written by
/// media workers (`AudioRecordingSession`, `VideoRecordingSession`).
struct DeviceSessionFactory: RecordingSessionFactory {
    let config: EngineConfiguration
    /// While listening holds the microphone open, an audio take started by hand records from it too
    /// (from the moment it starts) rather than open the device a second time (a hw: device is busy).
    let microphone: SharedMicrophone

    func makeSession(for take: RecordingSessionRequest) throws -> any RecordingSession {
        let capture = AlsaCaptureSettings(device: config.captureDevice, sampleRate: config.sampleRate,
                                          channels: config.channels)
        let encoding = config.encoding(take.format, channels: config.channels)
        let (interval, syncInterval) = (config.meterIntervalMs, config.syncIntervalMs)
        switch take.type {
        case .audio:
            let source: any CaptureSource = try take.source ?? microphone.tap() ?? AlsaCaptureSource(settings: capture)
            return AudioRecordingSession(path: take.path, source: source,
                                         sink: { written in try WorkerAudioWriter(path: take.path, encoding: encoding, onOutputWritten: written) },
                                         meterIntervalMs: interval, syncIntervalMs: syncInterval, onMeter: take.onMeter, onFault: take.onFault)
        case .video:
            let v = config.video
            let camera = V4L2CaptureSettings(device: v.device, width: v.width, height: v.height, fps: v.fps,
                                             rawFormats: CameraFrameFormat.rawFourCCs.map { FourCC(rawValue: $0) })
            let h264 = VideoEncoding(width: v.width, height: v.height, fps: Double(v.fps), preset: v.preset, crf: v.crf, bitRate: v.bitRate)
            // The camera first, then the microphone: a missing camera is said before a busy microphone.
            let source = try V4L2CaptureSource(settings: camera)
            let microphone: AlsaCaptureSource?
            do { microphone = take.audio ? try AlsaCaptureSource(settings: capture) : nil } catch {
                source.close()
                throw error
            }
            return try VideoRecordingSession(path: take.path, camera: source, fps: v.fps, video: h264,
                                             audio: microphone.map { ($0, encoding) },
                                             meterIntervalMs: interval, syncIntervalMs: syncInterval,
                                             onMeter: take.onMeter, onFault: take.onFault)
        }
    }
}

/// The microphone listening holds open, if any (set and cleared by the `Listener`).
package final class SharedMicrophone: Sendable {
    private struct Held { var history: CaptureHistory; var device: String; var sampleRate: Int; var channels: Int }
    private let held = Mutex<Held?>(nil)

    package init() {}

    func hold(_ history: CaptureHistory, device: String, sampleRate: Int, channels: Int) {
        held.withLock { $0 = Held(history: history, device: device, sampleRate: sampleRate, channels: channels) }
    }
    func release() { held.withLock { $0 = nil } }

    /// A tap from now on, or nil when listening is off.
    func tap() -> CaptureHistoryTap? {
        held.withLock { h in
            h.map { CaptureHistoryTap(history: $0.history, from: $0.history.position, device: $0.device, sampleRate: $0.sampleRate, channels: $0.channels) }
        }
    }
}
