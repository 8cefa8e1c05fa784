// Interleaved 16-bit PCM in, crash-safe fragmented AAC/MP4 file out.
import CFFmpeg
import CFFmpegShim
import Foundation

/// Encoding settings of an audio recording.
public struct AudioEncoding: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    public var bitRate: Int
    public init(sampleRate: Int = 48_000, channels: Int = 1, bitRate: Int = 128_000) {
        self.sampleRate = sampleRate; self.channels = channels; self.bitRate = bitRate
    }
}

/// Writes an `.m4a` while it is being recorded: AAC-LC in fragmented MP4, one fragment a second,
/// each flushed to the file when complete, so the file is playable up to the last whole fragment
/// whenever the process dies. `finish()` flushes the encoder and writes the trailer; the file is then
/// turned into an ordinary MP4 by `MP4Finalizer`.
///
/// Not thread-safe: one thread (the recording's encoder thread) calls every method.
public final class AudioFileWriter {
    public let path: String
    public let encoding: AudioEncoding
    private let muxer: FFmpegMuxer
    private let encoder: FFmpegAACEncoder
    private let stream: UnsafeMutablePointer<AVStream>
    private let packet: FFmpegPacket
    /// Samples per channel already in the encoder's input frame.
    private var filled = 0
    /// Timestamp (in samples) of the next frame.
    private var nextPTS: Int64 = 0
    private var finished = false

    /// Samples per channel written so far.
    public private(set) var samplesWritten: Int64 = 0

    public init(path: String, encoding: AudioEncoding) throws {
        self.path = path
        self.encoding = encoding
        let muxer = try FFmpegMuxer(path: path)
        let encoder = try FFmpegAACEncoder(sampleRate: encoding.sampleRate, channels: encoding.channels,
                                           bitRate: encoding.bitRate, globalHeader: muxer.wantsGlobalHeader)
        let stream = try muxer.addStream()
        try FFmpegError.check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context),
                              "avcodec_parameters_from_context", file: path)
        stream.pointee.time_base = encoder.context.pointee.time_base
        try muxer.open(layout: .fragmented)
        self.muxer = muxer
        self.encoder = encoder
        self.stream = stream
        self.packet = try FFmpegPacket()
        try encoder.prepareFrame()
    }

    /// Appends `frames` interleaved S16 frames (`frames * channels` samples).
    public func append(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        let channels = encoding.channels
        precondition(samples.count >= frames * channels)
        var consumed = 0
        while consumed < frames {
            let n = min(encoder.frameSize - filled, frames - consumed)
            // Deinterleave and scale to [-1, 1): a plain loop; no resampling is needed because the
            // capture device was opened at the encoder's rate.
            for c in 0..<channels {
                let plane = encoder.plane(c) + filled
                var src = (consumed * channels) + c
                for i in 0..<n {
                    plane[i] = Float(samples[src]) * (1.0 / 32768.0)
                    src += channels
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
        try encoder.drain(into: packet.pointer) { pkt in
            av_packet_rescale_ts(pkt, encoder.context.pointee.time_base, stream.pointee.time_base)
            pkt.pointee.stream_index = stream.pointee.index
            try muxer.write(pkt)
        }
    }

    /// Encodes what is left (a short last frame), flushes the encoder, writes the trailer, closes.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        if filled > 0 { try encodeFilled() }
        try encoder.send(samples: nil, pts: 0)
        try writeReadyPackets()
        try muxer.close()
    }
}
