// What the engine runs with: set once from recd's options, read by the Recorder, the Player and the Library.
import Foundation
import MediaWire
import RecdAPI
import Storage

/// Settings the engine runs with.
public struct EngineConfiguration: Sendable {
    public var dataDirectory: DataDirectory
    public var captureDevice: String
    public var playbackDevice: String
    public var sampleRate: Int
    public var channels: Int
    /// AAC's bit rate (`--bitrate`).
    public var bitRate: Int
    /// How audio recordings and encoded imports are stored unless a request says (`--default-format`).
    public var defaultFormat: RecordingFormat = .aac
    /// Opus's bit rate (`--opus-bitrate`, 24–64 kbit/s: speech-grade).
    public var opusBitRate: Int = 32_000
    /// The zone of auto titles; nil (the default): the system's, read through libc when a title is
    /// made. (Not Foundation's `TimeZone.current`: resolving it loads ICU's zone data at start-up,
    /// 3 MB of an idle daemon's memory.)
    public var timeZone: TimeZone?
    /// A start is refused when the filesystem of `Recordings/` has less free space than this.
    public var minFreeBytes: Int64
    /// `--listen`: arm listening (its default settings) when recd starts. Off by default: listening
    /// never starts by itself otherwise (it is armed again only if recd stopped while armed).
    public var listenAtStart = false
    /// Meter readings (events) every this many milliseconds, 10–1000.
    public var meterIntervalMs: Int
    /// Level-matched playback's target loudness in LUFS (`--playback-loudness`); nil: off.
    public var playbackLoudness: Double? = LevelMatch.defaultTarget
    /// The largest file an import takes (`--max-import-mb`).
    public var maxImportBytes: Int64 = 2_048_000_000
    /// Video recordings: the camera and what to ask it for, and the H.264 settings.
    public var video: VideoSettings
    /// A recording's file is fdatasynced about this often while it is written
    /// (`--sync-interval-ms`, see `PeriodicDataSync`): a power cut loses about this much and the
    /// fragment being built. 0: off (only kill -9 is survived with at most a fragment lost).
    public var syncIntervalMs: Int = Self.defaultSyncIntervalMs
    public static let defaultSyncIntervalMs = 1000
    /// An idle media worker (the process that runs FFmpeg: MediaWorker) is ended this long after its
    /// last use (`--ffmpeg-idle-unload`); nil: kept once started.
    public var ffmpegIdleUnloadSeconds: Double? = Self.defaultFFmpegIdleUnloadSeconds
    public static let defaultFFmpegIdleUnloadSeconds: Double = 30
    public static let syncIntervalRange = 0...60_000
    /// The transcriber and its model (`--transcribe`, `--transcriber`): base from where recd looks.
    public var transcription = TranscriptionSettings(directory: TranscriptionSettings.defaultDirectory(), model: "base")
    /// Backups to a restic repository (`--backup`); nil: off.
    public var backup: BackupSettings?

    public init(dataDirectory: URL, captureDevice: String = "default", playbackDevice: String = "default",
                sampleRate: Int = 48_000, channels: Int = 1, bitRate: Int = 128_000, timeZone: TimeZone? = nil,
                minFreeBytes: Int64 = 200_000_000, meterIntervalMs: Int = 50, video: VideoSettings = VideoSettings()) {
        self.dataDirectory = DataDirectory(root: dataDirectory)
        self.captureDevice = captureDevice; self.playbackDevice = playbackDevice
        self.sampleRate = sampleRate; self.channels = channels; self.bitRate = bitRate; self.timeZone = timeZone
        self.minFreeBytes = minFreeBytes
        self.meterIntervalMs = meterIntervalMs
        self.video = video
    }
}

extension EngineConfiguration {
    /// The encoder settings of sound stored in `format`, `channels` channels at the capture rate.
    func encoding(_ format: RecordingFormat, channels: Int) -> AudioEncoding {
        AudioEncoding(codec: AudioCodec(format), sampleRate: sampleRate, channels: channels,
                      bitRate: format == .opus ? opusBitRate : bitRate)
    }

    /// The format a request asks for (nil: the default), or why it cannot be had.
    public func format(_ requested: String?, video: Bool) throws(EngineError) -> RecordingFormat {
        guard let requested else { return video ? .aac : defaultFormat }
        guard let format = RecordingFormat(rawValue: requested) else {
            throw .invalidValue(field: "format", detail: "'\(requested)' is not a format; one of \(RecordingFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if video && format != .aac {
            throw .invalidValue(field: "format", detail: "a video's sound is AAC (what players of QuickTime and MP4 video play); \(format.rawValue) is for audio recordings")
        }
        if !AudioCodec(format).accepts(sampleRate: sampleRate) {
            throw .invalidValue(field: "format", detail: "Opus codes 8, 12, 16, 24 or 48 kHz sound; recd captures at \(sampleRate) Hz (--sample-rate)")
        }
        return format
    }
}

extension AudioCodec {
    init(_ format: RecordingFormat) {
        switch format {
        case .aac: self = .aac
        case .opus: self = .opus
        case .flac: self = .flac
        }
    }
}

/// How video recordings capture and encode.
public struct VideoSettings: Sendable {
    /// V4L2 device node.
    public var device: String
    /// Asked of the camera; it gives the nearest size it has and the rate it can.
    public var width: Int
    public var height: Int
    public var fps: Int
    /// x264 preset, CRF, or an average bit rate instead of CRF.
    public var preset: String
    public var crf: Int
    public var bitRate: Int?

    /// x264's presets, fastest first.
    public static let presets = VideoEncoding.presets

    public init(device: String = "/dev/video0", width: Int = 1280, height: Int = 720, fps: Int = 30,
                preset: String = "veryfast", crf: Int = 23, bitRate: Int? = nil) {
        self.device = device; self.width = width; self.height = height; self.fps = fps
        self.preset = preset; self.crf = crf; self.bitRate = bitRate
    }
}
