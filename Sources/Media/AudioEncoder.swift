// Audio encoding with libavcodec: AAC-LC (FFmpeg's native "aac"), Opus (libopus), FLAC (native).
import MediaWire
import CFFmpeg
import CFFmpegShim

/// Owns an opened AVCodecContext for one of `AudioCodec` and the one AVFrame it is fed through.
/// Used from a single thread (the recording's encoder thread).
final class FFmpegAudioEncoder {
    let owner: FFmpegCodecContext
    var context: UnsafeMutablePointer<AVCodecContext> { owner.pointer }
    /// Reused input frame: `frameSize` samples per channel in `sampleFormat`.
    private let frameOwner: FFmpegFrame
    var frame: UnsafeMutablePointer<AVFrame> { frameOwner.frame }
    let codec: AudioCodec
    let channels: Int
    let frameSize: Int
    let sampleRate: Int
    /// FLTP (AAC: the only format the native encoder takes) or interleaved S16 (Opus, FLAC: the
    /// captured samples as they are, so FLAC stores exactly what was captured).
    let sampleFormat: AVSampleFormat

    init(codec: AudioCodec, sampleRate: Int, channels: Int, bitRate: Int, globalHeader: Bool) throws {
        let found: UnsafePointer<AVCodec>?
        switch codec {
        case .aac: found = avcodec_find_encoder(AV_CODEC_ID_AAC)
        case .opus: found = avcodec_find_encoder_by_name("libopus")
        case .flac: found = avcodec_find_encoder(AV_CODEC_ID_FLAC)
        }
        guard let found else { throw MediaError.encoderNotFound(codec == .opus ? "libopus" : codec.rawValue.uppercased()) }
        let owner = try FFmpegCodecContext(found)
        let ctx = owner.pointer
        sampleFormat = codec == .aac ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_S16
        ctx.pointee.sample_fmt = sampleFormat
        ctx.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&ctx.pointee.ch_layout, Int32(channels))
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        if globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        switch codec {
        case .aac:
            ctx.pointee.bit_rate = Int64(bitRate)
            ctx.pointee.profile = FF_PROFILE_AAC_LOW
        case .opus:
            ctx.pointee.bit_rate = Int64(bitRate)
            // 20 ms frames (libopus's default); VBR; the general "audio" application (not "voip",
            // whose speech filtering would change music and ambience recorded with it).
            av_dict_set(&options, "frame_duration", "20", 0)
        case .flac:
            // libavcodec's default compression level (5), as the flac CLI's default.
            break
        }
        try FFmpegError.check(avcodec_open2(ctx, found, &options), "avcodec_open2(\(codec.rawValue))")
        // AAC-LC: 1024; Opus: 960 (20 ms at 48 kHz); FLAC: the block size the encoder chose.
        self.frameSize = Int(ctx.pointee.frame_size)
        frameOwner = try FFmpegFrame(samples: frameSize, format: sampleFormat, rate: sampleRate, layout: &ctx.pointee.ch_layout)
        self.owner = owner
        self.codec = codec
        self.channels = channels
        self.sampleRate = sampleRate
    }

    /// Plane `channel` of the input frame, as floats (FLTP only). Valid until the next `send`.
    func plane(_ channel: Int) -> UnsafeMutablePointer<Float> {
        UnsafeMutableRawPointer(frame.pointee.extended_data[channel]!).assumingMemoryBound(to: Float.self)
    }

    /// The interleaved input frame (S16 only). Valid until the next `send`.
    var interleaved: UnsafeMutablePointer<Int16> {
        UnsafeMutableRawPointer(frame.pointee.data.0!).assumingMemoryBound(to: Int16.self)
    }

    /// Makes the reused frame writable again (the encoder may still hold a reference to its buffers).
    func prepareFrame() throws {
        try FFmpegError.check(av_frame_make_writable(frame), "av_frame_make_writable")
    }

    /// Sends the frame holding `samples` samples per channel stamped `pts` (in samples), or nil to flush.
    func send(samples: Int?, pts: Int64) throws {
        if let samples {
            frame.pointee.nb_samples = Int32(samples)
            frame.pointee.pts = pts
            try FFmpegError.check(avcodec_send_frame(context, frame), "avcodec_send_frame")
        } else {
            try FFmpegError.check(avcodec_send_frame(context, nil), "avcodec_send_frame(flush)")
        }
    }
}
