// Camera frames (raw V4L2 layouts or MJPEG) → the YUV 4:2:0 pictures the H.264 encoder takes.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

/// Converts each camera frame into a YUV 4:2:0 picture of the same size (libswscale; a plain copy
/// when the camera already sends YU12). MJPEG frames are decoded with libavcodec first.
/// Used from one thread (the recording's video thread).
final class CameraFrameConverter {
    let input: CameraFrameFormat
    let output: FFmpegFrame
    private let sourceFormat: AVPixelFormat
    private let swapUV: Bool
    private var sws: OpaquePointer?
    private var swsSource: AVPixelFormat = AV_PIX_FMT_NONE
    private let mjpeg: MJPEGDecoder?

    init(input: CameraFrameFormat) throws {
        self.input = input
        output = try FFmpegFrame(format: AV_PIX_FMT_YUV420P, width: input.width, height: input.height)
        if input.isMJPEG {
            mjpeg = try MJPEGDecoder()
            sourceFormat = AV_PIX_FMT_NONE   // known after the first decoded frame
            swapUV = false
        } else if let entry = CameraFrameFormat.raw.first(where: { CameraFrameFormat.code($0.fourcc) == input.fourcc }) {
            mjpeg = nil
            sourceFormat = entry.format
            swapUV = entry.swapUV
        } else {
            throw MediaError.unsupportedFormat("camera pixel format \(input.fourcc) is not one recd converts")
        }
    }

    deinit { sws_freeContext(sws) }

    /// Converts one frame's bytes into `output` (made writable first). Throws on a frame too short for
    /// its format, or an MJPEG frame that does not decode.
    func convert(_ bytes: UnsafeRawBufferPointer) throws {
        try output.makeWritable()
        if let mjpeg {
            let decoded = try mjpeg.decode(bytes)
            let (planes, strides) = FFmpegFrame.planes(of: decoded)
            try scale(from: AVPixelFormat(rawValue: decoded.pointee.format), planes: planes, strides: strides,
                      width: Int(decoded.pointee.width), height: Int(decoded.pointee.height))
            return
        }
        // Plane strides: the format's natural ones, widened as the driver padded the first plane.
        var strides = [Int32](repeating: 0, count: 4)
        try FFmpegError.check(av_image_fill_linesizes(&strides, sourceFormat, Int32(input.width)), "av_image_fill_linesizes")
        if input.bytesPerLine > Int(strides[0]), strides[0] > 0 {
            let natural = strides[0]
            for i in 0..<4 { strides[i] = Int32(Int(strides[i]) * input.bytesPerLine / Int(natural)) }
        }
        var sizes = [Int](repeating: 0, count: 4)
        let ptrdiffStrides = strides.map { Int($0) }
        try FFmpegError.check(av_image_fill_plane_sizes(&sizes, sourceFormat, Int32(input.height), ptrdiffStrides), "av_image_fill_plane_sizes")
        let needed = sizes.reduce(0, +)
        guard bytes.count >= needed, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError.unsupportedFormat("a \(input.width)x\(input.height) frame of \(bytes.count) bytes is shorter than its format needs (\(needed))")
        }
        var planes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
        var offset = 0
        for i in 0..<4 where sizes[i] > 0 {
            planes[i] = base + offset
            offset += sizes[i]
        }
        if swapUV { planes.swapAt(1, 2) }
        try scale(from: sourceFormat, planes: planes, strides: strides, width: input.width, height: input.height)
    }

    private func scale(from format: AVPixelFormat, planes: [UnsafePointer<UInt8>?], strides: [Int32], width: Int, height: Int) throws {
        guard width == input.width, height == input.height else {
            throw MediaError.unsupportedFormat("the camera sent a \(width)x\(height) frame in a \(input.width)x\(input.height) stream")
        }
        if sws == nil || swsSource != format {
            sws_freeContext(sws)
            // Same size in and out: libswscale only converts the layout (SWS_POINT: no filter needed).
            sws = sws_getContext(Int32(width), Int32(height), format, Int32(width), Int32(height), AV_PIX_FMT_YUV420P,
                                 SWS_POINT, nil, nil, nil)
            swsSource = format
            guard sws != nil else { throw MediaError.allocationFailed("sws_getContext") }
        }
        let out = output.frame
        let rows = FFmpegFrame.scale(sws, planes: planes, strides: strides, height: height, into: out)
        if rows <= 0 { throw FFmpegError(call: "sws_scale", code: rows == 0 ? recd_averror_invaliddata() : rows) }
    }
}

extension FFmpegFrame {
    /// The first four plane pointers and strides of `frame` (AVFrame keeps them in C arrays, which
    /// Swift sees as tuples).
    static func planes(of frame: UnsafeMutablePointer<AVFrame>) -> ([UnsafePointer<UInt8>?], [Int32]) {
        let planes = withUnsafeBytes(of: frame.pointee.data) { raw in
            (0..<4).map { raw.load(fromByteOffset: $0 * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride,
                                   as: UnsafeMutablePointer<UInt8>?.self).map { UnsafePointer($0) } }
        }
        let strides = withUnsafeBytes(of: frame.pointee.linesize) { raw in
            (0..<4).map { raw.load(fromByteOffset: $0 * 4, as: Int32.self) }
        }
        return (planes, strides)
    }

    /// sws_scale of a whole picture into `out`'s buffers. Returns sws_scale's result (rows written).
    static func scale(_ sws: OpaquePointer?, planes: [UnsafePointer<UInt8>?], strides: [Int32], height: Int,
                      into out: UnsafeMutablePointer<AVFrame>) -> Int32 {
        planes.withUnsafeBufferPointer { src in
            strides.withUnsafeBufferPointer { srcStrides in
                withUnsafeMutablePointer(to: &out.pointee.data) { dst in
                    withUnsafeMutablePointer(to: &out.pointee.linesize) { dstStrides in
                        sws_scale(sws, src.baseAddress, srcStrides.baseAddress, 0, Int32(height),
                                  UnsafeMutableRawPointer(dst).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self),
                                  UnsafeMutableRawPointer(dstStrides).assumingMemoryBound(to: Int32.self))
                    }
                }
            }
        }
    }
}

/// Decodes MJPEG camera frames with libavcodec's mjpeg decoder.
final class MJPEGDecoder {
    private let owner: FFmpegCodecContext
    private var context: UnsafeMutablePointer<AVCodecContext> { owner.pointer }
    private let packet: FFmpegPacket
    private let picture: FFmpegFrame

    init() throws {
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG) else { throw MediaError.decoderNotFound("mjpeg") }
        // Each owner frees its handle however far this gets (the packet's allocation failing after
        // the context was opened leaked the context before).
        let owner = try FFmpegCodecContext(codec)
        try FFmpegError.check(avcodec_open2(owner.pointer, codec, nil), "avcodec_open2(mjpeg)")
        self.owner = owner
        packet = try FFmpegPacket()
        picture = try FFmpegFrame()
    }

    /// Decodes one JPEG image; the frame is valid until the next call.
    func decode(_ jpeg: UnsafeRawBufferPointer) throws -> UnsafeMutablePointer<AVFrame> {
        // The decoder reads up to AV_INPUT_BUFFER_PADDING_SIZE bytes past the end: a padded copy.
        try FFmpegError.check(av_new_packet(packet.pointer, Int32(jpeg.count)), "av_new_packet")
        defer { av_packet_unref(packet.pointer) }
        if let src = jpeg.baseAddress { memcpy(packet.pointer.pointee.data, src, jpeg.count) }
        try FFmpegError.check(avcodec_send_packet(context, packet.pointer), "avcodec_send_packet(mjpeg)")
        av_frame_unref(picture.frame)
        try FFmpegError.check(avcodec_receive_frame(context, picture.frame), "avcodec_receive_frame(mjpeg)")
        return picture.frame
    }
}
