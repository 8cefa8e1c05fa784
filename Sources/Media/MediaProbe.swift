// Reading media files: what they hold and how long they last.
import CFFmpeg
import CFFmpegShim
import Foundation

/// Owns an input AVFormatContext with its stream info read.
final class FFmpegInput {
    let context: UnsafeMutablePointer<AVFormatContext>
    let path: String

    init(path: String) throws {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try FFmpegError.check(avformat_open_input(&ctx, path, nil, nil), "avformat_open_input", file: path)
        guard let ctx else { throw MediaError.allocationFailed("avformat_open_input") }
        self.context = ctx
        self.path = path
        // `self` is fully initialized: if this throws, deinit closes the input (no manual cleanup).
        try FFmpegError.check(avformat_find_stream_info(ctx, nil), "avformat_find_stream_info", file: path)
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&c)
    }
}

/// A media file as libavformat sees it.
public struct MediaInfo: Sendable, Equatable {
    public struct Stream: Sendable, Equatable {
        public var kind: String   // "audio", "video", ...
        public var codec: String
        public var sampleRate: Int?
        public var channels: Int?
    }
    public var formatName: String
    /// Seconds, or nil when the container does not say.
    public var duration: Double?
    public var streams: [Stream]
}

public enum MediaProbe {
    public static func probe(_ path: String) throws -> MediaInfo {
        let input = try FFmpegInput(path: path)
        let ctx = input.context
        var streams: [MediaInfo.Stream] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let par = ctx.pointee.streams[i]!.pointee.codecpar!.pointee
            let kind = av_get_media_type_string(par.codec_type).map { String(cString: $0) } ?? "unknown"
            let codec = String(cString: avcodec_get_name(par.codec_id))
            let isAudio = par.codec_type == AVMEDIA_TYPE_AUDIO
            streams.append(.init(kind: kind, codec: codec,
                                 sampleRate: isAudio ? Int(par.sample_rate) : nil,
                                 channels: isAudio ? Int(par.ch_layout.nb_channels) : nil))
        }
        let d = ctx.pointee.duration
        let duration: Double? = (d == recd_av_nopts_value() || d < 0) ? nil : Double(d) / Double(AV_TIME_BASE)
        let name = String(cString: ctx.pointee.iformat.pointee.name)
        return MediaInfo(formatName: name, duration: duration, streams: streams)
    }
}
