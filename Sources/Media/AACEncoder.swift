// AAC-LC encoding with libavcodec's native "aac" encoder.
import CFFmpeg
import CFFmpegShim

/// Owns an opened AVCodecContext for AAC and the one AVFrame it is fed through.
/// Used from a single thread (the recording's encoder thread).
final class FFmpegAACEncoder {
    private let owner: FFmpegCodecContext
    var context: UnsafeMutablePointer<AVCodecContext> { owner.pointer }
    /// Reused input frame: FLTP, `frameSize` samples per channel.
    private let frameOwner: FFmpegFrame
    var frame: UnsafeMutablePointer<AVFrame> { frameOwner.frame }
    let channels: Int
    let frameSize: Int
    let sampleRate: Int

    init(sampleRate: Int, channels: Int, bitRate: Int, globalHeader: Bool) throws {
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC) else { throw MediaError.encoderNotFound("AAC") }
        let owner = try FFmpegCodecContext(codec)
        let ctx = owner.pointer
        ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP   // the only format the native encoder takes
        ctx.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&ctx.pointee.ch_layout, Int32(channels))
        ctx.pointee.bit_rate = Int64(bitRate)
        ctx.pointee.profile = FF_PROFILE_AAC_LOW
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        if globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try FFmpegError.check(avcodec_open2(ctx, codec, nil), "avcodec_open2(aac)")
        self.frameSize = Int(ctx.pointee.frame_size)   // 1024 for AAC-LC
        frameOwner = try FFmpegFrame(samples: frameSize, format: AV_SAMPLE_FMT_FLTP, rate: sampleRate, layout: &ctx.pointee.ch_layout)
        self.owner = owner
        self.channels = channels
        self.sampleRate = sampleRate
    }

    /// Plane `channel` of the input frame, as floats. Valid until the next `send`.
    func plane(_ channel: Int) -> UnsafeMutablePointer<Float> {
        UnsafeMutableRawPointer(frame.pointee.extended_data[channel]!).assumingMemoryBound(to: Float.self)
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

    /// Receives every packet that is ready into `packet`, calling `sink` for each.
    /// Returns at EAGAIN (needs more input) or EOF (fully flushed).
    func drain(into packet: UnsafeMutablePointer<AVPacket>, _ sink: (UnsafeMutablePointer<AVPacket>) throws -> Void) throws {
        while true {
            let rc = avcodec_receive_packet(context, packet)
            if rc == recd_averror_eagain() || rc == recd_averror_eof() { return }
            try FFmpegError.check(rc, "avcodec_receive_packet")
            try sink(packet)
        }
    }
}
