// Interleaved 16-bit PCM → AAC, Opus or FLAC packets for one stream of a muxer.
import MediaWire
import CFFmpeg
import CFFmpegShim

/// The audio stream of a file being written: gathers captured S16 frames into the codec's frames, stamps
/// them by sample count (the capture is continuous) and hands each packet to the muxer.
/// Used by one thread (the recording's audio encoder thread).
final class AudioTrackEncoder {
    let encoding: AudioEncoding
    private let encoder: FFmpegAudioEncoder
    private let stream: UnsafeMutablePointer<AVStream>
    private let packet: FFmpegPacket
    private let write: (UnsafeMutablePointer<AVPacket>) throws -> Void
    /// Samples per channel already in the encoder's input frame.
    private var filled = 0
    /// Timestamp (in samples) of the next frame.
    private var nextPTS: Int64 = 0
    private(set) var samplesWritten: Int64 = 0

    /// Adds the stream to `muxer` (before its header is written). `write` sends a packet to the
    /// muxer (under the caller's lock when several threads share it).
    init(muxer: FFmpegMuxer, encoding: AudioEncoding, write: @escaping (UnsafeMutablePointer<AVPacket>) throws -> Void) throws {
        self.encoding = encoding
        encoder = try FFmpegAudioEncoder(codec: encoding.codec, sampleRate: encoding.sampleRate, channels: encoding.channels,
                                       bitRate: encoding.bitRate, globalHeader: muxer.wantsGlobalHeader)
        stream = try muxer.addStream()
        try FFmpegError.check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context),
                              "avcodec_parameters_from_context", file: muxer.path)
        stream.pointee.time_base = encoder.context.pointee.time_base
        packet = try FFmpegPacket()
        self.write = write
        try encoder.prepareFrame()
    }

    /// Appends `frames` interleaved S16 frames (`frames * channels` samples).
    func append(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        let channels = encoding.channels
        precondition(samples.count >= frames * channels)
        var consumed = 0
        while consumed < frames {
            let n = min(encoder.frameSize - filled, frames - consumed)
            if encoder.sampleFormat == AV_SAMPLE_FMT_S16 {
                // Opus and FLAC take the captured samples as they are.
                (encoder.interleaved + filled * channels).update(from: samples.baseAddress! + consumed * channels, count: n * channels)
            } else {
                // AAC: deinterleave and scale to [-1, 1): a plain loop; no resampling is needed
                // because the capture device was opened at the encoder's rate.
                for c in 0..<channels {
                    let plane = encoder.plane(c) + filled
                    var src = (consumed * channels) + c
                    for i in 0..<n {
                        plane[i] = Float(samples[src]) * (1.0 / 32768.0)
                        src += channels
                    }
                }
            }
            filled += n
            consumed += n
            if filled == encoder.frameSize { try encodeFilled() }
        }
        samplesWritten += Int64(frames)
    }

    private func encodeFilled() throws {
        try encoder.send(samples: filled, pts: nextPTS)
        nextPTS += Int64(filled)
        filled = 0
        try writeReadyPackets()
        try encoder.prepareFrame()
    }

    private func writeReadyPackets() throws {
        // The encoder stamps its packets `initial_padding` (its priming: AAC 1024 samples, Opus's
        // pre-skip 312, FLAC none) before the frames it was given, so AAC's first one is at -1024. Handed to the muxer like that, the
        // negative time makes libavformat shift every stream from then on (avoid_negative_ts) —
        // all but a video's first frame, written before the first audio packet came out, which
        // left that frame 21 ms early and the picture 21 ms late after the finalizing remux. Here
        // the priming starts at 0 instead; `MP4Finalizer` hides it with an edit list.
        let padding = Int64(encoder.context.pointee.initial_padding)
        try encoder.owner.receivePackets(into: packet.pointer, call: "avcodec_receive_packet") { pkt in
            if pkt.pointee.pts != recd_av_nopts_value() { pkt.pointee.pts += padding }
            if pkt.pointee.dts != recd_av_nopts_value() { pkt.pointee.dts += padding }
            av_packet_rescale_ts(pkt, encoder.context.pointee.time_base, stream.pointee.time_base)
            pkt.pointee.stream_index = stream.pointee.index
            try write(pkt)
        }
    }

    /// Encodes what is left (a short last frame) and flushes the encoder.
    func finish() throws {
        if filled > 0 { try encodeFilled() }
        try encoder.send(samples: nil, pts: 0)
        try writeReadyPackets()
    }
}
