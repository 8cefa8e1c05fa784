// MP4 output through libavformat.
import MediaWire
import CFFmpeg
import CFFmpegShim

/// How an MP4 file is laid out.
enum MP4Layout {
    /// While recording: an empty moov, then one moof+mdat fragment per second, each pushed to the file
    /// as soon as it is complete (`flush_packets=1`; without it the file protocol keeps 256 KiB in memory
    /// and a killed recording leaves only the 28-byte ftyp). A crash loses at most the open fragment.
    case fragmented
    /// Final form: one moov at the front (`faststart`), readable by every player, correct duration.
    case faststart

    var options: [(String, String)] {
        switch self {
        case .fragmented:
            return [("movflags", "frag_keyframe+empty_moov+default_base_moof"),
                    ("frag_duration", "1000000"),
                    ("flush_packets", "1")]
        case .faststart:
            return [("movflags", "+faststart")]
        }
    }
}

/// Owns an output AVFormatContext and its AVIOContext. `close()` writes the trailer and must be called;
/// `deinit` only frees what is left (after an error or an abandoned write).
final class FFmpegMuxer {
    let context: UnsafeMutablePointer<AVFormatContext>
    let path: String
    private var headerWritten = false
    private var closed = false
    /// Called on the writing thread after a write or flush that put bytes into the file (in a
    /// fragmented file: a whole fragment, which `flush_packets` pushes out before the call returns).
    /// Lets the recording's `PeriodicDataSync` sync a fragment when it lands instead of polling.
    var onOutputWritten: (() -> Void)?
    /// The file offset after the last write that was reported.
    private var reportedOffset: Int64 = 0

    /// The container for a file name: QuickTime for `.mov` (video recordings), else MP4.
    static func formatName(for path: String) -> String {
        path.lowercased().hasSuffix(".mov") ? "mov" : "mp4"
    }

    init(path: String, formatName: String? = nil) throws {
        let formatName = formatName ?? Self.formatName(for: path)
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try FFmpegError.check(avformat_alloc_output_context2(&ctx, nil, formatName, path),
                              "avformat_alloc_output_context2", file: path)
        guard let ctx else { throw MediaError.allocationFailed("avformat_alloc_output_context2") }
        self.context = ctx
        self.path = path
    }

    deinit {
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
    }

    /// Whether codecs must put their extradata in the container rather than in-band.
    var wantsGlobalHeader: Bool { (context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER) != 0 }

    func addStream() throws -> UnsafeMutablePointer<AVStream> {
        guard let s = avformat_new_stream(context, nil) else { throw MediaError.allocationFailed("avformat_new_stream") }
        return s
    }

    /// Adds a chapter (before `open`): an `AVChapter` in milliseconds, owned by the context from
    /// here (`avformat_free_context` frees it and its title). The MP4 muxer writes a QuickTime chapter
    /// track and a Nero `chpl` box, which players and `ffprobe -show_chapters` read.
    func addChapter(_ c: MediaChapter) throws {
        guard let raw = av_mallocz(MemoryLayout<AVChapter>.size) else { throw MediaError.allocationFailed("av_mallocz(AVChapter)") }
        let chapter = raw.bindMemory(to: AVChapter.self, capacity: 1)
        let count = Int(context.pointee.nb_chapters)
        guard let grown = av_realloc_array(context.pointee.chapters, count + 1, MemoryLayout<UnsafeMutablePointer<AVChapter>?>.size) else {
            av_free(raw)
            throw MediaError.allocationFailed("av_realloc_array(chapters)")
        }
        let chapters = grown.bindMemory(to: UnsafeMutablePointer<AVChapter>?.self, capacity: count + 1)
        chapters[count] = chapter
        context.pointee.chapters = chapters
        context.pointee.nb_chapters = UInt32(count + 1)
        chapter.pointee.id = Int64(count + 1)
        chapter.pointee.time_base = AVRational(num: 1, den: 1000)
        chapter.pointee.start = Int64((c.start * 1000).rounded())
        chapter.pointee.end = Int64((c.end * 1000).rounded())
        av_dict_set(&chapter.pointee.metadata, "title", c.title, 0)
    }

    /// Opens the file (created or truncated) and writes the header with `layout`'s options.
    func open(layout: MP4Layout) throws {
        try FFmpegError.check(avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE), "avio_open", file: path)
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        for (k, v) in layout.options { av_dict_set(&options, k, v, 0) }
        // FFmpeg 5.1 calls FLAC in MP4 experimental (its movenc predates the final Xiph mapping of
        // 2017, which it writes: a `fLaC` sample entry with a `dfLa` box) and refuses it without this.
        // What it writes is what later FFmpeg versions (which dropped the flag) and browsers read.
        let streams = UnsafeBufferPointer(start: context.pointee.streams, count: Int(context.pointee.nb_streams))
        if streams.contains(where: { $0?.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_FLAC }) {
            context.pointee.strict_std_compliance = FF_COMPLIANCE_EXPERIMENTAL
        }
        try FFmpegError.check(avformat_write_header(context, &options), "avformat_write_header", file: path)
        headerWritten = true
    }

    /// Writes one packet (timestamps already in the stream's time base); takes the packet's reference.
    func write(_ packet: UnsafeMutablePointer<AVPacket>) throws {
        try FFmpegError.check(av_interleaved_write_frame(context, packet), "av_interleaved_write_frame", file: path)
        reportOutput()
    }

    /// Tells `onOutputWritten` when the file grew (`avio_tell` counts what the AVIOContext still
    /// buffers, which `flush_packets` has just pushed out).
    private func reportOutput() {
        guard let onOutputWritten, let pb = context.pointee.pb else { return }
        let offset = avio_tell(pb)
        guard offset != reportedOffset else { return }
        reportedOffset = offset
        onOutputWritten()
    }

    /// Writes every packet handed over so far into the file now: the interleaving queue is emptied
    /// and, in a fragmented file, the open fragment is closed and pushed to the disk (movenc takes a
    /// null packet as "flush", `AVFMT_ALLOW_FLUSH`). For a pause: a kill while paused then loses
    /// only what the encoder still holds (its delay), not the last second.
    func flush() throws {
        guard headerWritten, !closed else { return }
        try FFmpegError.check(av_interleaved_write_frame(context, nil), "av_interleaved_write_frame(flush)", file: path)
        try FFmpegError.check(av_write_frame(context, nil), "av_write_frame(flush)", file: path)
        reportOutput()
    }

    /// Writes the trailer and closes the file.
    func close() throws {
        guard !closed else { return }
        closed = true
        if headerWritten {
            try FFmpegError.check(av_write_trailer(context), "av_write_trailer", file: path)
        }
        let rc = avio_closep(&context.pointee.pb)
        try FFmpegError.check(rc, "avio_closep", file: path)
    }
}

/// Owns one AVCodecContext: allocated in `init`, freed (the codec closed with it) in `deinit`, so a
/// set-up step that throws after it leaks nothing, whichever type it is part of.
final class FFmpegCodecContext {
    let pointer: UnsafeMutablePointer<AVCodecContext>
    init(_ codec: UnsafePointer<AVCodec>) throws {
        guard let p = avcodec_alloc_context3(codec) else { throw MediaError.allocationFailed("avcodec_alloc_context3") }
        pointer = p
    }
    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&p)
    }

    /// An encoder's output: receives every packet that is ready into `packet`, calling `sink` for
    /// each; returns at EAGAIN (it needs more input) or EOF (fully flushed). `call` names it in errors.
    func receivePackets(into packet: UnsafeMutablePointer<AVPacket>, call: String,
                        _ sink: (UnsafeMutablePointer<AVPacket>) throws -> Void) throws {
        while true {
            let rc = avcodec_receive_packet(pointer, packet)
            if rc == recd_averror_eagain() || rc == recd_averror_eof() { return }
            try FFmpegError.check(rc, call)
            try sink(packet)
        }
    }
}

/// Owns one AVPacket.
final class FFmpegPacket {
    let pointer: UnsafeMutablePointer<AVPacket>
    init() throws {
        guard let p = av_packet_alloc() else { throw MediaError.allocationFailed("av_packet_alloc") }
        pointer = p
    }
    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }
}
