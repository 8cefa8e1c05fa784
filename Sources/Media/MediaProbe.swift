// Reading media files: what they hold and how long they last.
import CFFmpeg
import CFFmpegShim
import Foundation

/// Owns an input AVFormatContext with its stream info read.
final class FFmpegInput {
    /// FFmpeg stays loaded while this lives (FFmpegLibraries.Hold).
    private let libraries = FFmpegLibraries.Hold()
    let context: UnsafeMutablePointer<AVFormatContext>
    let path: String

    init(path: String) throws {
        try FFmpegLibraries.load()
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
public struct MediaInfo: Sendable, Equatable, Codable {
    public struct Stream: Sendable, Equatable, Codable {
        public var kind: String   // "audio", "video", ...
        public var codec: String
        public var sampleRate: Int?
        public var channels: Int?
        /// A picture attached to an audio file (cover art), not a video.
        public var isCoverArt = false
    }
    public var formatName: String
    /// Seconds, or nil when the container does not say.
    public var duration: Double?
    public var streams: [Stream]
    /// The container's tags (title, date, creation_time, …), then the streams' where the container
    /// has none of that name (Ogg and Opus keep theirs on the stream); names lower-cased.
    public var tags: [String: String] = [:]
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
            let stream = ctx.pointee.streams[i]!
            streams.append(.init(kind: kind, codec: codec,
                                 sampleRate: isAudio ? Int(par.sample_rate) : nil,
                                 channels: isAudio ? Int(par.ch_layout.nb_channels) : nil,
                                 isCoverArt: (stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC) != 0))
        }
        var tags = Self.tags(ctx.pointee.metadata)
        for i in 0..<Int(ctx.pointee.nb_streams) {
            for (k, v) in Self.tags(ctx.pointee.streams[i]!.pointee.metadata) where tags[k] == nil { tags[k] = v }
        }
        let d = ctx.pointee.duration
        let duration: Double? = (d == recd_av_nopts_value() || d < 0) ? nil : Double(d) / Double(AV_TIME_BASE)
        let name = String(cString: ctx.pointee.iformat.pointee.name)
        return MediaInfo(formatName: name, duration: duration, streams: streams, tags: tags)
    }

    /// An AVDictionary's entries, names lower-cased.
    static func tags(_ dict: OpaquePointer?) -> [String: String] {
        var out: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while let e = av_dict_get(dict, "", entry, AV_DICT_IGNORE_SUFFIX) {
            out[String(cString: e.pointee.key).lowercased()] = String(cString: e.pointee.value)
            entry = e
        }
        return out
    }
}
