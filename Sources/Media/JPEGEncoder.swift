// Still pictures as JPEG (a video recording's poster frame).
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

enum JPEGEncoder {
    /// Encodes a YUV 4:2:0 picture (limited range, as cameras and H.264 use) as a baseline JPEG with
    /// libavcodec's mjpeg encoder, at `quality` (2 best – 31 worst, FFmpeg's qscale).
    static func encode(_ frame: UnsafeMutablePointer<AVFrame>, quality: Int = 3) throws -> Data {
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else { throw MediaError.encoderNotFound("mjpeg") }
        let owner = try FFmpegCodecContext(codec)
        let ctx = owner.pointer
        ctx.pointee.width = frame.pointee.width
        ctx.pointee.height = frame.pointee.height
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        // Limited-range YUV in a JPEG is FFmpeg's "unofficial" extension; every decoder reads it, and
        // it keeps the camera's levels without a second conversion.
        ctx.pointee.color_range = AVCOL_RANGE_MPEG
        ctx.pointee.strict_std_compliance = FF_COMPLIANCE_UNOFFICIAL
        ctx.pointee.time_base = AVRational(num: 1, den: 25)
        ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
        ctx.pointee.global_quality = Int32(quality) * FF_QP2LAMBDA
        try FFmpegError.check(avcodec_open2(ctx, codec, nil), "avcodec_open2(mjpeg)")
        let savedPTS = frame.pointee.pts
        let savedQuality = frame.pointee.quality
        frame.pointee.pts = 0
        frame.pointee.quality = ctx.pointee.global_quality
        defer { frame.pointee.pts = savedPTS; frame.pointee.quality = savedQuality }
        try FFmpegError.check(avcodec_send_frame(ctx, frame), "avcodec_send_frame(mjpeg)")
        try FFmpegError.check(avcodec_send_frame(ctx, nil), "avcodec_send_frame(mjpeg flush)")
        let packet = try FFmpegPacket()
        try FFmpegError.check(avcodec_receive_packet(ctx, packet.pointer), "avcodec_receive_packet(mjpeg)")
        defer { av_packet_unref(packet.pointer) }
        return Data(bytes: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
    }
}
