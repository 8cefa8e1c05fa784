// FFmpeg's names for MediaWire's values (which know nothing of FFmpeg).
import CFFmpeg
import MediaWire

extension AudioCodec {
    /// The codec of a stream (AAC for anything else: its one-frame pre-roll is the cautious default).
    init(_ id: AVCodecID) {
        switch id {
        case AV_CODEC_ID_OPUS: self = .opus
        case AV_CODEC_ID_FLAC: self = .flac
        default: self = .aac
        }
    }

    /// Samples of pre-roll a decoder needs before a cut to produce the cut's first sample right: AAC
    /// one frame (MDCT overlap), Opus 80 ms (what RFC 7845 §4.6 recommends for its decoder to
    /// converge), FLAC none (every frame stands alone).
    func preRoll(sampleRate: Int, frameSize: Int) -> Int {
        switch self {
        case .aac: return max(frameSize, 1024)
        case .opus: return sampleRate * 80 / 1000
        case .flac: return 0
        }
    }
}

extension CapturedSampleFormat {
    /// What swresample is given: the 24-bit layouts are widened to S32 first (swresample has no
    /// 24-bit format).
    var swrFormat: AVSampleFormat {
        switch self {
        case .s16: return AV_SAMPLE_FMT_S16
        case .float: return AV_SAMPLE_FMT_FLT
        case .s32, .s24In32, .s24Packed: return AV_SAMPLE_FMT_S32
        }
    }
}

extension CameraFrameFormat {
    /// How libswscale reads each of `rawNames` (the same order).
    /// `swapUV`: YV12 is YU12 with the chroma planes the other way round.
    static let raw: [(fourcc: String, format: AVPixelFormat, swapUV: Bool)] = [
        ("YU12", AV_PIX_FMT_YUV420P, false), ("NV12", AV_PIX_FMT_NV12, false), ("YV12", AV_PIX_FMT_YUV420P, true),
        ("NV21", AV_PIX_FMT_NV21, false), ("YUYV", AV_PIX_FMT_YUYV422, false), ("UYVY", AV_PIX_FMT_UYVY422, false),
        ("YVYU", AV_PIX_FMT_YVYU422, false), ("422P", AV_PIX_FMT_YUV422P, false), ("NV16", AV_PIX_FMT_NV16, false),
        ("RGB3", AV_PIX_FMT_RGB24, false), ("BGR3", AV_PIX_FMT_BGR24, false), ("GREY", AV_PIX_FMT_GRAY8, false),
    ]

}

extension VideoEncoding {
    /// `timeBase` as FFmpeg's rational.
    static let avTimeBase = AVRational(num: timeBase.num, den: timeBase.den)
}
