// Where the Recorder's sessions come from: the devices (ALSA, V4L2) and media workers in recd, an
// in-memory stand-in in the unit tests of its state machine.
import Capture
import Foundation
import MediaWire
import Metering
import RecdAPI

/// One take the Recorder asks a factory for: what to record, where, and whom to tell.
struct RecordingSessionRequest: Sendable {
    /// `.audio`, or `.video` (with sound when `audio`).
    var type: RecordingType
    var audio: Bool
    var format: RecordingFormat
    /// The file to write (absolute).
    var path: String
    /// Each level reading of the sound captured, on the capture thread; must not block.
    var onMeter: @Sendable (LevelReading) -> Void
    /// The first fault of the take once it runs (device lost, the writer or the disk failed), on
    /// whichever thread saw it; must not block. Not called after the session's `stop()`.
    var onFault: @Sendable (any Error) -> Void
}

/// Makes the Recorder's sessions.
protocol RecordingSessionFactory: Sendable {
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

    func makeSession(for take: RecordingSessionRequest) throws -> any RecordingSession {
        let capture = AlsaCaptureSettings(device: config.captureDevice, sampleRate: config.sampleRate,
                                          channels: config.channels)
        let encoding = config.encoding(take.format, channels: config.channels)
        let (interval, syncInterval) = (config.meterIntervalMs, config.syncIntervalMs)
        switch take.type {
        case .audio:
            return try AudioRecordingSession(path: take.path, capture: capture, encoding: encoding, meterIntervalMs: interval,
                                             syncIntervalMs: syncInterval, onMeter: take.onMeter, onFault: take.onFault)
        case .video:
            let v = config.video
            let camera = V4L2CaptureSettings(device: v.device, width: v.width, height: v.height, fps: v.fps,
                                             rawFormats: CameraFrameFormat.rawFourCCs.map { FourCC(rawValue: $0) })
            let h264 = VideoEncoding(width: v.width, height: v.height, fps: Double(v.fps), preset: v.preset, crf: v.crf, bitRate: v.bitRate)
            return try VideoRecordingSession(path: take.path, camera: camera, video: h264, audio: take.audio ? (capture, encoding) : nil,
                                             meterIntervalMs: interval, syncIntervalMs: syncInterval,
                                             onMeter: take.onMeter, onFault: take.onFault)
        }
    }
}
