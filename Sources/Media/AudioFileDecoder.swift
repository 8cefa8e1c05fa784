// Reading a recording's audio back: demux (libavformat), decode (libavcodec), convert (libswresample).
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

/// Decodes the best audio stream of a media file into interleaved S16 at the rate and channel
/// count a playback device accepted. Sample-accurate seeking: libavformat seeks to the packet at or
/// before the target, and the frames before the target are decoded and dropped.
///
/// Not thread-safe: one playback thread owns it.
public final class AudioFileDecoder {
    public let path: String
    /// The stream as stored.
    public let sourceSampleRate: Int
    public let sourceChannels: Int
    /// Seconds, from the container (or the stream when the container does not say); nil if unknown.
    public let duration: Double?

    private let input: FFmpegInput
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let codecOwner: FFmpegCodecContext
    private var codec: UnsafeMutablePointer<AVCodecContext> { codecOwner.pointer }
    private let packet: FFmpegPacket
    private let frameOwner: FFmpegFrame
    private var frame: UnsafeMutablePointer<AVFrame> { frameOwner.frame }
    /// Set by `setOutput`.
    private var resamplerOwner: FFmpegResampler?
    private var resampler: OpaquePointer? { resamplerOwner?.pointer }
    private var output: (rate: Int, channels: Int)?
    /// Output frames still to drop after a seek (the decoder restarts at a packet before the target).
    private var dropUntil: Double?
    /// Where the last block returned ends (the start of the resampler's tail at the end).
    private var blockEnd = 0.0
    private var inputEnded = false

    public init(path: String) throws {
        input = try FFmpegInput(path: path)
        self.path = path
        let ctx = input.context
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        if index == recd_averror_stream_not_found() { throw MediaError.noStream(kind: "audio", file: path) }
        if index < 0 { throw FFmpegError(call: "av_find_best_stream (audio)", code: index, file: path) }
        streamIndex = index
        let stream = ctx.pointee.streams[Int(index)]!
        timeBase = stream.pointee.time_base
        let par = stream.pointee.codecpar!
        guard let decoder = avcodec_find_decoder(par.pointee.codec_id) else {
            throw MediaError.decoderNotFound(String(cString: avcodec_get_name(par.pointee.codec_id)))
        }
        codecOwner = try FFmpegCodecContext(decoder)
        let c = codecOwner.pointer
        // Each handle has its owner: whatever was allocated before a throw is freed with it.
        packet = try FFmpegPacket()
        frameOwner = try FFmpegFrame()
        sourceSampleRate = Int(par.pointee.sample_rate)
        sourceChannels = Int(par.pointee.ch_layout.nb_channels)
        let d = ctx.pointee.duration
        if d != recd_av_nopts_value(), d > 0 {
            duration = Double(d) / Double(AV_TIME_BASE)
        } else if stream.pointee.duration != recd_av_nopts_value(), stream.pointee.duration > 0 {
            duration = Double(stream.pointee.duration) * av_q2d(timeBase)
        } else {
            duration = nil
        }
        try FFmpegError.check(avcodec_parameters_to_context(c, par), "avcodec_parameters_to_context", file: path)
        c.pointee.pkt_timebase = timeBase
        try FFmpegError.check(avcodec_open2(c, decoder, nil), "avcodec_open2", file: path)
    }

    /// Sets the format `read` produces: interleaved S16 at `rate` Hz with `channels` channels
    /// (what the device accepted). Must be called once before `read`.
    public func setOutput(rate: Int, channels: Int) throws {
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(channels))
        defer { av_channel_layout_uninit(&outLayout) }
        var inLayout = AVChannelLayout()
        // A stream without a channel order (some WAVs) gets the default layout for its count.
        if codec.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            av_channel_layout_default(&inLayout, codec.pointee.ch_layout.nb_channels)
        } else {
            try FFmpegError.check(av_channel_layout_copy(&inLayout, &codec.pointee.ch_layout), "av_channel_layout_copy", file: path)
        }
        defer { av_channel_layout_uninit(&inLayout) }
        resamplerOwner = nil
        resamplerOwner = try FFmpegResampler(from: &inLayout, codec.pointee.sample_fmt, rate: Int(codec.pointee.sample_rate),
                                             to: &outLayout, AV_SAMPLE_FMT_S16, rate: rate, file: path)
        output = (rate, channels)
    }

    /// Moves to `seconds` (clamped at 0): the next `read` returns audio from exactly there.
    public func seek(to seconds: Double) throws {
        let target = max(0, seconds)
        let ts = Int64((target / av_q2d(timeBase)).rounded(.down))
        try FFmpegError.check(av_seek_frame(input.context, streamIndex, ts, AVSEEK_FLAG_BACKWARD), "av_seek_frame", file: path)
        avcodec_flush_buffers(codec)
        // Drop what the resampler still holds from before the seek.
        if let output { try setOutput(rate: output.rate, channels: output.channels) }
        dropUntil = target
        blockEnd = target
        inputEnded = false
    }

    /// Decodes the next block into `buffer` (interleaved S16, replaced) and returns its start time in
    /// seconds and its length in frames; nil at the end of the stream.
    public func read(into buffer: inout [Int16]) throws -> (start: Double, frames: Int)? {
        guard let output else { preconditionFailure("AudioFileDecoder.setOutput was not called") }
        while true {
            let rc = avcodec_receive_frame(codec, frame)
            if rc == 0 {
                defer { av_frame_unref(frame) }
                if let block = try convert(into: &buffer, rate: output.rate, channels: output.channels) { return block }
                continue
            }
            if rc == recd_averror_eof() {
                return try flushResampler(into: &buffer, rate: output.rate, channels: output.channels)
            }
            guard rc == recd_averror_eagain() else { throw FFmpegError(call: "avcodec_receive_frame", code: rc, file: path) }
            if inputEnded {
                try FFmpegError.check(avcodec_send_packet(codec, nil), "avcodec_send_packet", file: path)
                continue
            }
            let r = av_read_frame(input.context, packet.pointer)
            if r == recd_averror_eof() {
                inputEnded = true
                continue
            }
            try FFmpegError.check(r, "av_read_frame", file: path)
            defer { av_packet_unref(packet.pointer) }
            guard packet.pointer.pointee.stream_index == streamIndex else { continue }
            let s = avcodec_send_packet(codec, packet.pointer)
            // A damaged packet is skipped rather than ending playback (a salvaged recording may have one).
            if s < 0 && s != recd_averror_invaliddata() {
                throw FFmpegError(call: "avcodec_send_packet", code: s, file: path)
            }
        }
    }

    /// The decoded frame in `frame`, converted; nil if all of it lies before a seek target.
    private func convert(into buffer: inout [Int16], rate: Int, channels: Int) throws -> (start: Double, frames: Int)? {
        let pts = frame.pointee.best_effort_timestamp != recd_av_nopts_value() ? frame.pointee.best_effort_timestamp : frame.pointee.pts
        var start = pts == recd_av_nopts_value() ? (dropUntil ?? 0) : Double(pts) * av_q2d(timeBase)
        let capacity = Int(swr_get_out_samples(resampler, frame.pointee.nb_samples))
        if buffer.count < capacity * channels { buffer = [Int16](repeating: 0, count: capacity * channels) }
        var produced: Int32 = 0
        try buffer.withUnsafeMutableBytes { raw in
            var out: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let inData = UnsafeMutableRawPointer(frame.pointee.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
            produced = try FFmpegError.check(
                swr_convert(resampler, &out, Int32(capacity), inData, frame.pointee.nb_samples), "swr_convert", file: path)
        }
        var frames = Int(produced)
        if let target = dropUntil {
            let drop = min(frames, max(0, Int(((target - start) * Double(rate)).rounded())))
            if drop > 0 {
                buffer.withUnsafeMutableBufferPointer { b in
                    let base = b.baseAddress!
                    base.update(from: base + drop * channels, count: (frames - drop) * channels)
                }
                frames -= drop
                start += Double(drop) / Double(rate)
            }
            if frames == 0 { return nil }
            dropUntil = nil
        }
        guard frames > 0 else { return nil }
        blockEnd = start + Double(frames) / Double(rate)
        return (start, frames)
    }

    /// What the resampler holds at the end of the stream.
    private func flushResampler(into buffer: inout [Int16], rate: Int, channels: Int) throws -> (start: Double, frames: Int)? {
        let capacity = 4096
        if buffer.count < capacity * channels { buffer = [Int16](repeating: 0, count: capacity * channels) }
        var produced: Int32 = 0
        try buffer.withUnsafeMutableBytes { raw in
            var out: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            produced = try FFmpegError.check(swr_convert(resampler, &out, Int32(capacity), nil, 0), "swr_convert", file: path)
        }
        guard produced > 0 else { return nil }
        let start = blockEnd
        blockEnd += Double(produced) / Double(rate)
        return (start, Int(produced))
    }
}
