// Turns a fragmented (or torn) MP4 into an ordinary one with a stream-copy remux.
import CFFmpeg
import CFFmpegShim
import Foundation

/// What a remux read and wrote.
public struct RemuxResult: Sendable {
    public var packets: Int
    /// True when reading stopped at damaged data (a torn last fragment) rather than a clean end.
    public var stoppedAtDamage: Bool
}

public enum MP4Finalizer {
    /// Copies every stream of `source` into a new faststart MP4 at `destination` (no re-encoding).
    /// FFmpeg 5.1 has no "hybrid" fragmented mode, so this second pass is how a recording gets one moov
    /// with the right duration. A read error after at least one packet ends the copy there: what was
    /// read is kept (salvage of a file cut by a crash).
    /// FFmpeg's AAC encoder's `initial_padding`.
    static let aacPrimingSamples: Int64 = 1024

    /// `streams`: the indexes of the source's streams to copy (all when nil); `container`: the
    /// output's path whose name decides the container (a temporary destination has no telling name),
    /// the source's when nil.
    /// `hidePriming`: the source is recd's own recording, whose AAC starts with FFmpeg's 1024 samples
    /// of priming and no edit list (false for a file from elsewhere: its timestamps are its own).
    public static func remux(from source: String, to destination: String, streams selected: [Int]? = nil,
                             container: String? = nil, hidePriming: Bool = true) throws -> RemuxResult {
        let input = try FFmpegInput(path: source)
        // The destination is a temporary name: the container is the source's (a .mov stays QuickTime).
        let muxer = try FFmpegMuxer(path: destination, formatName: FFmpegMuxer.formatName(for: container ?? source))
        let inCtx = input.context
        let streamCount = Int(inCtx.pointee.nb_streams)
        var outStreams: [UnsafeMutablePointer<AVStream>?] = []
        for i in 0..<streamCount {
            let inStream = inCtx.pointee.streams[i]!
            if let selected, !selected.contains(i) { outStreams.append(nil); continue }
            let out = try muxer.addStream()
            try FFmpegError.check(avcodec_parameters_copy(out.pointee.codecpar, inStream.pointee.codecpar),
                                  "avcodec_parameters_copy", file: source)
            out.pointee.codecpar.pointee.codec_tag = 0
            out.pointee.time_base = inStream.pointee.time_base
            outStreams.append(out)
        }
        try muxer.open(layout: .faststart)
        // The AAC encoder's priming (1024 samples of encoder delay) is lost in a fragmented file written
        // with empty_moov (FFmpeg writes no edit list there: the ffmpeg CLI does the same). Shifting
        // the packets back by it makes the faststart muxer write the edit list, so players and
        // decoders skip the priming and the file starts with the first captured sample.
        var shift = [Int64?](repeating: nil, count: streamCount)
        let packet = try FFmpegPacket()
        var packets = 0
        var damaged = false
        while true {
            let rc = av_read_frame(inCtx, packet.pointer)
            if rc == recd_averror_eof() { break }
            if rc < 0 {
                if packets == 0 { throw FFmpegError(call: "av_read_frame", code: rc, file: source) }
                damaged = true
                break
            }
            let pkt = packet.pointer
            let index = Int(pkt.pointee.stream_index)
            guard index < outStreams.count, let outStream = outStreams[index] else { av_packet_unref(pkt); continue }
            av_packet_rescale_ts(pkt, inCtx.pointee.streams[index]!.pointee.time_base, outStream.pointee.time_base)
            pkt.pointee.stream_index = outStream.pointee.index
            if shift[index] == nil {
                let par = outStream.pointee.codecpar.pointee
                let primed = hidePriming && par.codec_id == AV_CODEC_ID_AAC && pkt.pointee.pts == 0 && par.sample_rate > 0
                shift[index] = primed ? av_rescale_q(Self.aacPrimingSamples, AVRational(num: 1, den: par.sample_rate),
                                                     outStream.pointee.time_base) : 0
            }
            if let by = shift[index], by != 0 {
                if pkt.pointee.pts != recd_av_nopts_value() { pkt.pointee.pts -= by }
                if pkt.pointee.dts != recd_av_nopts_value() { pkt.pointee.dts -= by }
            }
            pkt.pointee.pos = -1
            try muxer.write(pkt)
            packets += 1
        }
        try muxer.close()
        return RemuxResult(packets: packets, stoppedAtDamage: damaged)
    }
}
