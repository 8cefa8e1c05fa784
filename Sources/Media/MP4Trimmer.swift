// Cutting a recording's file without re-encoding: packets copied, edit lists for the exact cut.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

public enum MP4Trimmer {
    /// Copies the span `[start, end)` (seconds of the source's presentation timeline) of every audio
    /// and video stream of `source` into a new faststart file at `destination` (the source's
    /// container), packets as they are:
    /// - the sound from its decoder's pre-roll before `start` (AAC: the frame before the one holding
    ///   it, as a frame decodes right only after its predecessor; Opus: 80 ms; FLAC: none), the
    ///   picture from the keyframe at or before `start`;
    /// - every timestamp moved back by `start`, so what precedes the cut has negative times, and the
    ///   MP4 muxer writes an edit list that hides it (as for the encoder's priming in
    ///   `MP4Finalizer`): the file plays from exactly `start`;
    /// - the last packet of each stream cut short to end at `end` (its duration), so the edit list
    ///   ends there too.
    /// `end` nil: to the end of every stream (a whole copy, for `chapters`). `chapters` are written
    /// into the copy (the source's own are not copied). Throws `MediaError.noStream` when the file
    /// has neither audio nor video. Blocking.
    public static func trim(from source: String, to destination: String, start: Double, end: Double?,
                            chapters: [MediaChapter] = []) throws -> TrimResult {
        precondition(start >= 0 && end.map { $0 > start } ?? true)
        let input = try FFmpegInput(path: source)
        let muxer = try FFmpegMuxer(path: destination, formatName: FFmpegMuxer.formatName(for: source))
        var tracks = try addTracks(of: input, to: muxer, start: start, end: end, source: source)
        guard !tracks.isEmpty else { throw MediaError.noStream(kind: "audio or video", file: source) }
        for c in chapters { try muxer.addChapter(c) }
        if start > 0 { seekNearCut(input.context, tracks) }
        try muxer.open(layout: .faststart)
        let (packets, videoLeadIn) = try copyPackets(from: input.context, through: &tracks, to: muxer, source: source)
        try muxer.close()
        return TrimResult(packets: packets, videoLeadIn: videoLeadIn)
    }

    /// A stream copied, with its cut in its own time base.
    private struct Track {
        var output: UnsafeMutablePointer<AVStream>
        var timeBase: AVRational
        var isVideo: Bool
        var startTS: Int64
        var endTS: Int64
        /// Audio: copy packets ending after this (one frame of pre-roll). Video: the first
        /// packet copied must be a keyframe.
        var firstNeeded: Int64
        var started = false
        var done = false
    }

    /// An output stream for every audio and video stream of the source (not cover art), by source index.
    private static func addTracks(of input: FFmpegInput, to muxer: FFmpegMuxer, start: Double, end: Double?,
                                  source: String) throws -> [Int: Track] {
        let inCtx = input.context
        var tracks = [Int: Track]()
        for i in 0..<Int(inCtx.pointee.nb_streams) {
            let s = inCtx.pointee.streams[i]!
            let par = s.pointee.codecpar!
            let kind = par.pointee.codec_type
            guard kind == AVMEDIA_TYPE_AUDIO || kind == AVMEDIA_TYPE_VIDEO else { continue }
            if kind == AVMEDIA_TYPE_VIDEO && (par.pointee.codec_id == AV_CODEC_ID_MJPEG || par.pointee.codec_id == AV_CODEC_ID_PNG)
                && (s.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC) != 0 { continue }   // cover art
            let out = try muxer.addStream()
            try FFmpegError.check(avcodec_parameters_copy(out.pointee.codecpar, par), "avcodec_parameters_copy", file: source)
            out.pointee.codecpar.pointee.codec_tag = 0
            out.pointee.time_base = s.pointee.time_base
            let tb = s.pointee.time_base
            let startTS = Int64((start * Double(tb.den) / Double(tb.num)).rounded())
            let endTS = end.map { Int64(($0 * Double(tb.den) / Double(tb.num)).rounded()) } ?? Int64.max
            let preRoll = kind == AVMEDIA_TYPE_AUDIO && par.pointee.sample_rate > 0
                ? Int64(AudioCodec(par.pointee.codec_id).preRoll(sampleRate: Int(par.pointee.sample_rate),
                                                               frameSize: Int(par.pointee.frame_size))) : 0
            let frame = av_rescale_q(preRoll, AVRational(num: 1, den: max(1, par.pointee.sample_rate)), tb)
            tracks[i] = Track(output: out, timeBase: tb, isVideo: kind == AVMEDIA_TYPE_VIDEO, startTS: startTS, endTS: endTS,
                              firstNeeded: startTS - frame)
        }
        return tracks
    }

    /// Seeks near the cut instead of reading the hour before it: the picture's keyframe at or
    /// before `start` (the other streams follow it back), else the sound's pre-roll.
    private static func seekNearCut(_ inCtx: UnsafeMutablePointer<AVFormatContext>, _ tracks: [Int: Track]) {
        let (index, track) = tracks.filter(\.value.isVideo).min { $0.key < $1.key } ?? tracks.min { $0.key < $1.key }!
        let target = track.isVideo ? track.startTS : track.firstNeeded - (track.startTS - track.firstNeeded)
        if av_seek_frame(inCtx, Int32(index), target, AVSEEK_FLAG_BACKWARD) < 0 {
            _ = av_seek_frame(inCtx, -1, 0, AVSEEK_FLAG_BACKWARD)   // read from the start instead
        }
    }

    /// Copies the packets of the span until every track has passed its end; returns how many, and
    /// how far before the cut the picture's keyframe is.
    private static func copyPackets(from inCtx: UnsafeMutablePointer<AVFormatContext>, through tracks: inout [Int: Track],
                                    to muxer: FFmpegMuxer, source: String) throws -> (packets: Int, videoLeadIn: Double) {
        let packet = try FFmpegPacket()
        var packets = 0
        var videoLeadIn = 0.0
        while tracks.values.contains(where: { !$0.done }) {
            let rc = av_read_frame(inCtx, packet.pointer)
            if rc == recd_averror_eof() { break }
            try FFmpegError.check(rc, "av_read_frame", file: source)
            let pkt = packet.pointer
            defer { av_packet_unref(pkt) }
            let index = Int(pkt.pointee.stream_index)
            guard var t = tracks[index], !t.done else { continue }
            let pts = pkt.pointee.pts != recd_av_nopts_value() ? pkt.pointee.pts : pkt.pointee.dts
            let duration = pkt.pointee.duration
            if pts >= t.endTS { t.done = true; tracks[index] = t; continue }
            if !t.started {
                if t.isVideo {
                    // From the last keyframe at or before the cut: earlier packets are not needed,
                    // later ones cannot be decoded without it.
                    guard (pkt.pointee.flags & AV_PKT_FLAG_KEY) != 0 else { continue }
                    videoLeadIn = max(0, Double(t.startTS - pts) * Double(t.timeBase.num) / Double(t.timeBase.den))
                } else if pts + max(duration, 1) <= t.firstNeeded {
                    continue
                }
                t.started = true
            }
            // The last packet ends at the cut.
            if duration > 0 && t.endTS != Int64.max && pts + duration > t.endTS { pkt.pointee.duration = t.endTS - pts }
            if pkt.pointee.pts != recd_av_nopts_value() { pkt.pointee.pts -= t.startTS }
            if pkt.pointee.dts != recd_av_nopts_value() { pkt.pointee.dts -= t.startTS }
            av_packet_rescale_ts(pkt, t.timeBase, t.output.pointee.time_base)
            pkt.pointee.stream_index = t.output.pointee.index
            pkt.pointee.pos = -1
            tracks[index] = t
            try muxer.write(pkt)
            packets += 1
        }
        return (packets, videoLeadIn)
    }
}
