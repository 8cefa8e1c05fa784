// Turns a fragmented (or torn) MP4 into an ordinary one with a stream-copy remux.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

public enum MP4Finalizer {
    /// FFmpeg's AAC encoder's `initial_padding`.
    static let aacPrimingSamples: Int64 = 1024

    /// Samples of encoder delay at the start of a stream recd wrote: AAC's 1024, Opus's pre-skip (from
    /// its OpusHead: bytes 10–11, little-endian), none for FLAC.
    static func primingSamples(_ par: AVCodecParameters) -> Int64 {
        switch par.codec_id {
        case AV_CODEC_ID_AAC: return aacPrimingSamples
        case AV_CODEC_ID_OPUS:
            guard par.extradata_size >= 19, let head = par.extradata else { return 0 }
            return Int64(head[10]) | Int64(head[11]) << 8
        default: return 0
        }
    }

    /// Copies every stream of `source` into a new faststart MP4 at `destination` (no re-encoding).
    /// FFmpeg 5.1 has no "hybrid" fragmented mode, so this second pass is how a recording gets one moov
    /// with the right duration. A read error after at least one packet ends the copy there: what was
    /// read is kept (salvage of a file cut by a crash).
    /// `streams`: the indexes of the source's streams to copy (all when nil); `container`: the
    /// output's path whose name decides the container (a temporary destination has no telling name),
    /// the source's when nil.
    /// `hidePriming`: the source is recd's own recording, whose AAC or Opus starts with the encoder's
    /// priming and no edit list (false for a file from elsewhere: its timestamps are its own).
    public static func remux(from source: String, to destination: String, streams selected: [Int]? = nil,
                             container: String? = nil, hidePriming: Bool = true) throws -> RemuxResult {
        var remux = try StreamCopy(source: source, destination: destination, streams: selected,
                                   container: container, hidePriming: hidePriming)
        return try remux.run()
    }
}

/// One remux's state, its steps named: copy the streams' parameters, read every packet (shifted by
/// the encoder's priming, audio held back one packet), then write what is held and close.
private struct StreamCopy {
    let source: String
    let input: FFmpegInput
    let muxer: FFmpegMuxer
    let hidePriming: Bool
    /// The output stream of each source stream; nil: not copied.
    var outStreams: [UnsafeMutablePointer<AVStream>?] = []
    /// The encoder's priming (AAC: 1024 samples of encoder delay; Opus: its pre-skip) is lost in a
    /// fragmented file written with empty_moov (FFmpeg writes no edit list there: the ffmpeg CLI
    /// does the same). Shifting the packets back by it makes the faststart muxer write the edit
    /// list, so players and decoders skip the priming and the file starts with the first captured
    /// sample. (An Opus decoder skips the pre-skip by itself only where there is no edit list: with
    /// one, the edit list is what counts, so every file recd writes has one and a trim's edit list
    /// is measured from the same start.) Per stream, set at its first packet.
    var shift: [Int64?]
    /// An audio packet is written once the next one of its stream is read: the fragmented file's
    /// demuxer leaves packet durations unknown, and a last packet without one is dropped from the
    /// finished file by the MP4 demuxer (a FLAC block is up to 96 ms). Its duration is the distance
    /// to the next packet, the last one's what the stream's own duration leaves for it.
    var held: [FFmpegPacket?]
    var lastDuration: [Int64]
    /// Whether the held packet's bytes reach the end of the file: in a file cut by a crash or a power
    /// cut, the mov demuxer returns the sample that straddles the end short (what was there),
    /// without a flag, and a decoder fails on it ("Input buffer exhausted"). When the read then
    /// stops at damage, such a last packet is left out (one frame: 21 ms of AAC).
    var reachesEnd: [Bool]
    let fileSize: Int64
    var packets = 0
    var damaged = false

    var inCtx: UnsafeMutablePointer<AVFormatContext> { input.context }

    init(source: String, destination: String, streams selected: [Int]?, container: String?, hidePriming: Bool) throws {
        self.source = source
        self.hidePriming = hidePriming
        input = try FFmpegInput(path: source)
        // The destination is a temporary name: the container is the source's (a .mov stays QuickTime).
        muxer = try FFmpegMuxer(path: destination, formatName: FFmpegMuxer.formatName(for: container ?? source))
        let count = Int(input.context.pointee.nb_streams)
        shift = Array(repeating: nil, count: count)
        held = Array(repeating: nil, count: count)
        lastDuration = Array(repeating: 0, count: count)
        reachesEnd = Array(repeating: false, count: count)
        fileSize = avio_size(input.context.pointee.pb)
        try addStreams(selected)
    }

    private mutating func addStreams(_ selected: [Int]?) throws {
        for i in 0..<shift.count {
            let inStream = inCtx.pointee.streams[i]!
            if let selected, !selected.contains(i) { outStreams.append(nil); continue }
            let out = try muxer.addStream()
            try FFmpegError.check(avcodec_parameters_copy(out.pointee.codecpar, inStream.pointee.codecpar),
                                  "avcodec_parameters_copy", file: source)
            out.pointee.codecpar.pointee.codec_tag = 0
            out.pointee.time_base = inStream.pointee.time_base
            outStreams.append(out)
        }
    }

    mutating func run() throws -> RemuxResult {
        try muxer.open(layout: .faststart)
        let packet = try FFmpegPacket()
        while true {
            let rc = av_read_frame(inCtx, packet.pointer)
            if rc == recd_averror_eof() { break }
            if rc < 0 {
                if packets == 0 { throw FFmpegError(call: "av_read_frame", code: rc, file: source) }
                damaged = true
                break
            }
            try copy(packet.pointer)
        }
        for index in held.indices {
            if damaged && reachesEnd[index] {
                held[index] = nil   // torn: see `reachesEnd`
                packets -= 1
            }
            try emit(index, nextPTS: nil)
        }
        try muxer.close()
        return RemuxResult(packets: packets, stoppedAtDamage: damaged)
    }

    /// A packet read: into the output's time base and stream, shifted by the priming, then written
    /// (video) or held until the next of its stream (audio).
    private mutating func copy(_ pkt: UnsafeMutablePointer<AVPacket>) throws {
        let index = Int(pkt.pointee.stream_index)
        guard index < outStreams.count, let outStream = outStreams[index] else { av_packet_unref(pkt); return }
        av_packet_rescale_ts(pkt, inCtx.pointee.streams[index]!.pointee.time_base, outStream.pointee.time_base)
        pkt.pointee.stream_index = outStream.pointee.index
        let par = outStream.pointee.codecpar.pointee
        if shift[index] == nil {
            let priming = hidePriming && pkt.pointee.pts == 0 && par.sample_rate > 0 ? MP4Finalizer.primingSamples(par) : 0
            shift[index] = priming > 0 ? av_rescale_q(priming, AVRational(num: 1, den: par.sample_rate),
                                                      outStream.pointee.time_base) : 0
        }
        if let by = shift[index], by != 0 {
            if pkt.pointee.pts != recd_av_nopts_value() { pkt.pointee.pts -= by }
            if pkt.pointee.dts != recd_av_nopts_value() { pkt.pointee.dts -= by }
        }
        let atEnd = fileSize > 0 && pkt.pointee.pos >= 0 && pkt.pointee.pos + Int64(pkt.pointee.size) >= fileSize
        pkt.pointee.pos = -1
        packets += 1
        guard par.codec_type == AVMEDIA_TYPE_AUDIO else { return try muxer.write(pkt) }
        try emit(index, nextPTS: pkt.pointee.pts == recd_av_nopts_value() ? nil : pkt.pointee.pts)
        let keep = try FFmpegPacket()
        av_packet_move_ref(keep.pointer, pkt)
        held[index] = keep
        reachesEnd[index] = atEnd
    }

    /// Writes the packet held for stream `index`, its duration from the next packet's pts, or for the
    /// last one from what the stream's duration leaves.
    private mutating func emit(_ index: Int, nextPTS: Int64?) throws {
        guard let owner = held[index] else { return }
        held[index] = nil
        let pkt = owner.pointer
        defer { withExtendedLifetime(owner) {} }
        if pkt.pointee.duration <= 0, pkt.pointee.pts != recd_av_nopts_value() {
            pkt.pointee.duration = nextPTS.map { $0 - pkt.pointee.pts } ?? lastPacketDuration(index, pts: pkt.pointee.pts)
        }
        lastDuration[index] = pkt.pointee.duration
        try muxer.write(pkt)
    }

    /// A torn file's stream duration may count what could not be read: never more than a whole packet.
    private func lastPacketDuration(_ index: Int, pts: Int64) -> Int64 {
        let out = outStreams[index]!
        let src = inCtx.pointee.streams[index]!
        let end = src.pointee.duration > 0
            ? av_rescale_q(src.pointee.duration + max(0, src.pointee.start_time), src.pointee.time_base, out.pointee.time_base)
              - (shift[index] ?? 0)
            : 0
        let fromEnd = end - pts
        return fromEnd > 0 && (lastDuration[index] == 0 || fromEnd <= lastDuration[index]) ? fromEnd : lastDuration[index]
    }
}
