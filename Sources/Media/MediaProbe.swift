// Reading media files: what they hold and how long they last.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

/// Owns an input AVFormatContext with its stream info read, over the one file named and nothing else.
///
/// Why so guarded: what it opens may be any bytes a client sent (an import). FFmpeg's demuxers for
/// playlists and manifests (HLS, DASH, concat, image sequences, …) open the files and URLs those
/// bytes name, as the worker's user. So:
/// - the file is opened here, through the `file` protocol only, and handed to FFmpeg as its I/O
///   (FFmpeg never resolves the path or a protocol prefix itself);
/// - its format is probed from those bytes and must be one of `formats` (each reads only its own
///   bytes) before any demuxer runs, else `MediaError.formatRefused` names what it looked like;
/// - the context's `io_open`, through which every demuxer opens another resource, refuses all.
/// The worker's sandbox (`WorkerSandbox`) is the second wall, should any of this be bypassed.
final class FFmpegInput {
    let context: UnsafeMutablePointer<AVFormatContext>
    let path: String
    /// Our I/O for the file (FFmpeg does not close a caller's I/O: deinit does).
    private var io: UnsafeMutablePointer<AVIOContext>?

    /// The demuxers recd opens: the containers of audio and video files people record or export
    /// (MP4/QuickTime, Matroska/WebM, Ogg, FLAC, WAV and its kin, MP3, ADTS AAC, AIFF, CAF, WMA…),
    /// and a single JPEG (a poster), none of which opens anything but the file it was given. Not
    /// `image2`, which reads a numbered sequence of files beside the one named.
    static let formats = ["mov", "matroska", "webm", "ogg", "flac", "wav", "w64", "mp3", "aac", "aiff", "caf",
                          "au", "wv", "ape", "amr", "asf", "tta", "ac3", "eac3", "dts", "mpc", "mpc8", "truehd", "jpeg_pipe"]

    init(path: String) throws {
        self.path = path
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        // "file:" so that no other protocol is read from the path (a name with a colon in it).
        try FFmpegError.check(avio_open2(&io, "file:" + path, AVIO_FLAG_READ, nil, &options), "avio_open2", file: path)
        var format: UnsafePointer<AVInputFormat>?
        do {
            try FFmpegError.check(av_probe_input_buffer2(io, &format, path, nil, 0, 0), "av_probe_input_buffer2", file: path)
            guard let format else { throw MediaError.unsupportedFormat("\(path): no format recognised") }
            let name = String(cString: format.pointee.name)
            guard name.split(separator: ",").contains(where: { Self.formats.contains(String($0)) }) else {
                let long = format.pointee.long_name.map { String(cString: $0) } ?? name
                throw MediaError.formatRefused(format: "\(long) (\(name))", file: path)
            }
        } catch {
            avio_closep(&io)
            throw error
        }
        guard let ctx = avformat_alloc_context() else {
            avio_closep(&io)
            throw MediaError.allocationFailed("avformat_alloc_context")
        }
        ctx.pointee.pb = io
        ctx.pointee.io_open = { _, _, _, _, _ in -EPERM }
        var open: UnsafeMutablePointer<AVFormatContext>? = ctx
        av_dict_set(&options, "format_whitelist", Self.formats.joined(separator: ","), 0)
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        let rc = avformat_open_input(&open, path, format, &options)   // frees the context when it fails
        guard rc >= 0, let open else {
            avio_closep(&io)
            throw FFmpegError(call: "avformat_open_input", code: rc, file: path)
        }
        context = open
        // `self` is fully initialized: if this throws, deinit closes the input (no manual cleanup).
        try FFmpegError.check(avformat_find_stream_info(open, nil), "avformat_find_stream_info", file: path)
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&c)
        avio_closep(&io)
    }
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
