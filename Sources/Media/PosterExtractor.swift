// The poster of a video file that has none stored: its first frame, decoded from the file.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

public enum PosterExtractor {
    /// Decodes the first picture of `path`'s video stream and returns it as a JPEG of the same size.
    /// Throws `MediaError.noStream` for a file without video. Blocking.
    public static func poster(fromFile path: String) throws -> Data {
        let input = try FFmpegInput(path: path)
        let ctx = input.context
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0 else { throw MediaError.noStream(kind: "video", file: path) }
        let par = ctx.pointee.streams[Int(index)]!.pointee.codecpar!
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
            throw MediaError.decoderNotFound(String(cString: avcodec_get_name(par.pointee.codec_id)))
        }
        let owner = try FFmpegCodecContext(codec)
        let dec = owner.pointer
        try FFmpegError.check(avcodec_parameters_to_context(dec, par), "avcodec_parameters_to_context", file: path)
        try FFmpegError.check(avcodec_open2(dec, codec, nil), "avcodec_open2", file: path)
        let packet = try FFmpegPacket()
        let decoded = try FFmpegFrame()
        var flushed = false
        while true {
            let rc = avcodec_receive_frame(dec, decoded.frame)
            if rc >= 0 { break }
            // EOF after the flush: the stream had no frame that decodes.
            if rc == recd_averror_eof() { throw MediaError.noStream(kind: "decodable video", file: path) }
            if rc != recd_averror_eagain() { throw FFmpegError(call: "avcodec_receive_frame", code: rc, file: path) }
            if flushed { throw MediaError.noStream(kind: "decodable video", file: path) }
            let read = av_read_frame(ctx, packet.pointer)
            if read < 0 {
                try FFmpegError.check(avcodec_send_packet(dec, nil), "avcodec_send_packet(flush)", file: path)
                flushed = true
                continue
            }
            defer { av_packet_unref(packet.pointer) }
            if packet.pointer.pointee.stream_index == index {
                try FFmpegError.check(avcodec_send_packet(dec, packet.pointer), "avcodec_send_packet", file: path)
            }
        }
        let f = decoded.frame.pointee
        let picture = try FFmpegFrame(format: AV_PIX_FMT_YUV420P, width: Int(f.width), height: Int(f.height))
        guard let sws = sws_getContext(f.width, f.height, AVPixelFormat(rawValue: f.format), f.width, f.height,
                                       AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil) else {
            throw MediaError.allocationFailed("sws_getContext")
        }
        defer { sws_freeContext(sws) }
        let (planes, strides) = FFmpegFrame.planes(of: decoded.frame)
        let rows = FFmpegFrame.scale(sws, planes: planes, strides: strides, height: Int(f.height), into: picture.frame)
        if rows <= 0 { throw FFmpegError(call: "sws_scale", code: rows == 0 ? recd_averror_invaliddata() : rows, file: path) }
        return try JPEGEncoder.encode(picture.frame)
    }
}
