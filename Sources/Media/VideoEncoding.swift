// H.264 encoding with libx264 through libavcodec.
import MediaWire
import CFFmpeg
import CFFmpegShim

/// Owns an opened libx264 AVCodecContext. Frames in: YUV 4:2:0 planar at the encoding's size,
/// stamped in `VideoEncoding.timeBase`. Used from one thread (the recording's video thread).
final class FFmpegH264Encoder {
    let owner: FFmpegCodecContext
    var context: UnsafeMutablePointer<AVCodecContext> { owner.pointer }

    init(_ e: VideoEncoding, globalHeader: Bool) throws {
        guard let codec = avcodec_find_encoder_by_name("libx264") else { throw MediaError.encoderNotFound("libx264 (H.264)") }
        let owner = try FFmpegCodecContext(codec)
        let ctx = owner.pointer
        ctx.pointee.width = Int32(e.width)
        ctx.pointee.height = Int32(e.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.time_base = VideoEncoding.avTimeBase
        ctx.pointee.framerate = av_d2q(e.fps, 100_000)
        // One keyframe a second: the fragmented file cuts a fragment at each, so a crash loses at
        // most about a second, and a player can seek to any second.
        ctx.pointee.gop_size = Int32(max(1, e.fps.rounded()))
        ctx.pointee.max_b_frames = 0
        if let rate = e.bitRate { ctx.pointee.bit_rate = Int64(rate) }
        if globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "preset", e.preset, 0)
        // zerolatency: no lookahead and no frame threads, so each frame's packet comes out at once
        // (what reaches the disk is what was captured, up to the open fragment), with sliced threads.
        av_dict_set(&options, "tune", "zerolatency", 0)
        if e.bitRate == nil { av_dict_set(&options, "crf", String(e.crf), 0) }
        try FFmpegError.check(avcodec_open2(ctx, codec, &options), "avcodec_open2(libx264 \(e.preset))")
        self.owner = owner
    }

    /// Sends `frame` (nil flushes).
    func send(_ frame: UnsafeMutablePointer<AVFrame>?) throws {
        try FFmpegError.check(avcodec_send_frame(context, frame), frame == nil ? "avcodec_send_frame(flush)" : "avcodec_send_frame(libx264)")
    }
}

/// Owns one AVFrame: a picture or a block of audio with its own buffers, or an empty frame for a
/// decoder to fill; freed in `deinit` (also when filling in its buffers throws).
final class FFmpegFrame {
    let frame: UnsafeMutablePointer<AVFrame>

    init(format: AVPixelFormat, width: Int, height: Int) throws {
        guard let f = av_frame_alloc() else { throw MediaError.allocationFailed("av_frame_alloc") }
        frame = f
        f.pointee.format = format.rawValue
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        try FFmpegError.check(av_frame_get_buffer(f, 0), "av_frame_get_buffer")
    }

    /// `samples` samples per channel of `format` audio with `layout`'s channels (an encoder's input).
    init(samples: Int, format: AVSampleFormat, rate: Int, layout: inout AVChannelLayout) throws {
        guard let f = av_frame_alloc() else { throw MediaError.allocationFailed("av_frame_alloc") }
        frame = f
        f.pointee.nb_samples = Int32(samples)
        f.pointee.format = format.rawValue
        f.pointee.sample_rate = Int32(rate)
        try FFmpegError.check(av_channel_layout_copy(&f.pointee.ch_layout, &layout), "av_channel_layout_copy")
        try FFmpegError.check(av_frame_get_buffer(f, 0), "av_frame_get_buffer")
    }

    /// An empty frame (for a decoder to fill).
    init() throws {
        guard let f = av_frame_alloc() else { throw MediaError.allocationFailed("av_frame_alloc") }
        frame = f
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    /// Makes the buffers writable again (the encoder may still hold a reference to them).
    func makeWritable() throws {
        try FFmpegError.check(av_frame_make_writable(frame), "av_frame_make_writable")
    }
}
