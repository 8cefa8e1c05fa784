// The media values recd and its media workers both use (encodings, formats, what a probe, a remux
// or a trim found): plain Swift, no FFmpeg, so recd knows them without linking it.
/// The codecs recd writes. Each goes into the same fragmented MP4 while recording (see
/// `MP4Layout.fragmented`), so every one of them is written, salvaged, finalized and trimmed alike.
public enum AudioCodec: String, Sendable, CaseIterable, Codable {
    case aac, opus, flac

    /// Sample rates the encoder takes. libopus codes 8, 12, 16, 24 and 48 kHz only.
    public func accepts(sampleRate: Int) -> Bool {
        switch self {
        case .opus: return [8_000, 12_000, 16_000, 24_000, 48_000].contains(sampleRate)
        case .aac, .flac: return true
        }
    }
}

/// Encoding settings of an audio track.
public struct AudioEncoding: Sendable, Equatable, Codable {
    public var codec: AudioCodec
    public var sampleRate: Int
    public var channels: Int
    /// Bits per second (AAC, Opus); FLAC is lossless and ignores it.
    public var bitRate: Int
    public init(codec: AudioCodec = .aac, sampleRate: Int = 48_000, channels: Int = 1, bitRate: Int = 128_000) {
        self.codec = codec; self.sampleRate = sampleRate; self.channels = channels; self.bitRate = bitRate
    }
}

/// Interleaved sample formats ALSA capture devices deliver, as the converter reads them.
public enum CapturedSampleFormat: String, Sendable, CaseIterable, Codable {
    /// 16-bit signed.
    case s16
    /// 32-bit signed (24-bit interfaces usually deliver this: the sample in the top 24 bits).
    case s32
    /// 32-bit float, −1…1.
    case float
    /// 24-bit signed in the low three bytes of a 32-bit word (ALSA's S24_LE).
    case s24In32
    /// 24-bit signed packed in three bytes (ALSA's S24_3LE; many USB interfaces).
    case s24Packed

    public var bytesPerSample: Int {
        switch self {
        case .s16: return 2
        case .s32, .float, .s24In32: return 4
        case .s24Packed: return 3
        }
    }
}

/// Encoding settings of a video track.
public struct VideoEncoding: Sendable, Equatable, Codable {
    public var width: Int
    public var height: Int
    /// The camera's nominal rate: sets the keyframe interval (one a second, so each one-second
    /// fragment of the file being written starts with a keyframe) and the rate control's idea of time.
    public var fps: Double
    /// x264 preset. `veryfast` is what live encoders (OBS) default to: about a fifth of `medium`'s
    /// CPU for a few percent more bits.
    public var preset: String
    /// Constant rate factor (0–51, lower is better): used unless `bitRate` is set.
    public var crf: Int
    /// Average bit rate in bit/s; nil for CRF.
    public var bitRate: Int?

    public init(width: Int, height: Int, fps: Double, preset: String = "veryfast", crf: Int = 23, bitRate: Int? = nil) {
        self.width = width; self.height = height; self.fps = fps; self.preset = preset; self.crf = crf; self.bitRate = bitRate
    }

    /// x264's presets, fastest first (what `--video-preset` accepts).
    public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]

    /// `libx264 preset=veryfast crf=23`: for replies and logs.
    public var summary: String {
        "libx264 preset=\(preset) " + (bitRate.map { "bitrate=\($0 / 1000)k" } ?? "crf=\(crf)")
    }

    /// Timestamps of the video stream: 1/90000 s, the usual video clock (exact for 25, 30, 60 fps).
    public static let timeBase: (num: Int32, den: Int32) = (1, 90_000)
}

/// A camera's frame layout: V4L2 fourcc, size and the first plane's bytes per line.
public struct CameraFrameFormat: Sendable, Equatable, Codable {
    public var fourcc: UInt32
    public var width: Int
    public var height: Int
    public var bytesPerLine: Int
    public init(fourcc: UInt32, width: Int, height: Int, bytesPerLine: Int) {
        self.fourcc = fourcc; self.width = width; self.height = height; self.bytesPerLine = bytesPerLine
    }

    public static func code(_ s: String) -> UInt32 {
        let b = Array(s.utf8)
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    /// V4L2 raw formats recd-media converts (libswscale reads them), in the order recd prefers them
    /// from a camera: 4:2:0 first (what H.264 stores: no chroma to drop), then packed 4:2:2 (what
    /// most USB cameras send raw).
    public static let rawNames = ["YU12", "NV12", "YV12", "NV21", "YUYV", "UYVY", "YVYU", "422P", "NV16", "RGB3", "BGR3", "GREY"]

    /// The raw fourccs recd can record from, best first (for the camera's format negotiation).
    public static var rawFourCCs: [UInt32] { rawNames.map(code) }

    public static let mjpegFourCCs: Set<UInt32> = [code("MJPG"), code("JPEG")]

    public var isMJPEG: Bool { Self.mjpegFourCCs.contains(fourcc) }
}

/// What a remux read and wrote.
public struct RemuxResult: Sendable, Codable {
    public var packets: Int
    /// True when reading stopped at damaged data (a torn last fragment) rather than a clean end.
    public var stoppedAtDamage: Bool
    public init(packets: Int, stoppedAtDamage: Bool) { self.packets = packets; self.stoppedAtDamage = stoppedAtDamage }
}

/// A chapter written into an MP4 or QuickTime file (a recording's marker, issue 47): from `start` to
/// `end`, seconds of the file's timeline, named `title`.
public struct MediaChapter: Sendable, Equatable, Codable {
    public var start: Double
    public var end: Double
    public var title: String
    public init(start: Double, end: Double, title: String) { self.start = start; self.end = end; self.title = title }
}

/// What a lossless trim wrote.
public struct TrimResult: Sendable, Equatable, Codable {
    public var packets: Int
    /// Seconds from the start of the source to where its first video packet copied begins (the
    /// keyframe the picture has to be decoded from); 0 for audio.
    public var videoLeadIn: Double
    public init(packets: Int, videoLeadIn: Double) { self.packets = packets; self.videoLeadIn = videoLeadIn }
}

/// A media file as libavformat sees it.
public struct MediaInfo: Sendable, Equatable, Codable {
    public struct Stream: Sendable, Equatable, Codable {
        public var kind: String   // "audio", "video", ...
        public var codec: String
        public var sampleRate: Int?
        public var channels: Int?
        /// A picture attached to an audio file (cover art), not a video.
        public var isCoverArt = false
        public init(kind: String, codec: String, sampleRate: Int? = nil, channels: Int? = nil, isCoverArt: Bool = false) {
            self.kind = kind; self.codec = codec; self.sampleRate = sampleRate; self.channels = channels; self.isCoverArt = isCoverArt
        }
    }
    public var formatName: String
    /// Seconds, or nil when the container does not say.
    public var duration: Double?
    public var streams: [Stream]
    /// The container's tags (title, date, creation_time, …), then the streams' where the container
    /// has none of that name (Ogg and Opus keep theirs on the stream); names lower-cased.
    public var tags: [String: String] = [:]
    public init(formatName: String, duration: Double?, streams: [Stream], tags: [String: String] = [:]) {
        self.formatName = formatName; self.duration = duration; self.streams = streams; self.tags = tags
    }
}

/// A camera frame that could not be converted (damaged JPEG data, a buffer shorter than its format):
/// the frame is left out; the file is unharmed.
public struct FrameRejected: Error, CustomStringConvertible, Sendable {
    public var reason: String
    public var description: String { "camera frame rejected: \(reason)" }
    public init(reason: String) { self.reason = reason }
}
