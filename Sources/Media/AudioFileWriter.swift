// Interleaved 16-bit PCM in, crash-safe fragmented AAC/MP4 file out.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation

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
    private let track: AudioTrackEncoder
    private var finished = false

    /// Samples per channel written so far.
    public var samplesWritten: Int64 { track.samplesWritten }

    /// `onOutputWritten` is called on the writing thread each time a fragment has reached the file.
    public init(path: String, encoding: AudioEncoding, onOutputWritten: (() -> Void)? = nil) throws {
        self.path = path
        self.encoding = encoding
        let muxer = try FFmpegMuxer(path: path)
        muxer.onOutputWritten = onOutputWritten
        track = try AudioTrackEncoder(muxer: muxer, encoding: encoding) { try muxer.write($0) }
        try muxer.open(layout: .fragmented)
        self.muxer = muxer
    }

    /// Appends `frames` interleaved S16 frames (`frames * channels` samples).
    public func append(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        try track.append(interleaved: samples, frames: frames)
    }

    /// Puts every packet encoded so far into the file (see `FFmpegMuxer.flush`).
    public func flush() throws {
        guard !finished else { return }
        try muxer.flush()
    }

    /// Encodes what is left (a short last frame), flushes the encoder, writes the trailer, closes.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        try track.finish()
        try muxer.close()
    }
}
