// Camera frames (+ captured sound) in, crash-safe fragmented H.264/AAC QuickTime file out.
import MediaWire
import CFFmpeg
import CFFmpegShim
import Foundation
import Synchronization

/// Writes a `.mov` while it is being recorded: H.264 (libx264) and, unless the recording is a silent
/// video, AAC, in fragmented QuickTime (empty moov, a fragment at each keyframe = each second), each
/// fragment flushed to the file when complete, so a killed recording plays up to its last whole
/// fragment. `close()` writes the trailer; the file is then remuxed by `MP4Finalizer` as audio files are.
///
/// Threads: the audio encoder thread calls `appendAudio`/`finishAudio`, the video thread
/// `appendVideo`/`finishVideo`; they share the muxer under a lock (libavformat's context is not
/// thread-safe; `av_interleaved_write_frame` orders the two streams' packets by time). `close()` is
/// called once both have finished.
public final class VideoFileWriter: @unchecked Sendable {
    public let path: String
    public let video: VideoEncoding
    public let camera: CameraFrameFormat
    private let muxer: FFmpegMuxer
    private let muxerLock = NSLock()
    private let audioTrack: AudioTrackEncoder?
    private let encoder: FFmpegH264Encoder
    private let converter: CameraFrameConverter
    private let stream: UnsafeMutablePointer<AVStream>
    private let packet: FFmpegPacket
    private var lastPTS: Int64 = .min
    private var closed = false

    private let written = Atomic<Int64>(0)
    private let skipped = Atomic<Int64>(0)
    /// Frames encoded so far. Any thread.
    public var framesWritten: Int64 { written.load(ordering: .relaxed) }
    /// Frames refused because their time was not after the previous one's. Any thread.
    public var framesSkipped: Int64 { skipped.load(ordering: .relaxed) }

    /// Opens the file and writes its header. `audio` nil: a silent video (no audio stream).
    /// `onOutputWritten` is called (under the muxer's lock, on the thread that wrote) each time a
    /// fragment has reached the file.
    public init(path: String, video: VideoEncoding, camera: CameraFrameFormat, audio: AudioEncoding?,
                onOutputWritten: (() -> Void)? = nil) throws {
        self.path = path
        self.video = video
        self.camera = camera
        let muxer = try FFmpegMuxer(path: path)
        muxer.onOutputWritten = onOutputWritten
        encoder = try FFmpegH264Encoder(video, globalHeader: muxer.wantsGlobalHeader)
        stream = try muxer.addStream()
        try FFmpegError.check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context),
                              "avcodec_parameters_from_context", file: path)
        stream.pointee.time_base = VideoEncoding.avTimeBase
        stream.pointee.avg_frame_rate = encoder.context.pointee.framerate
        converter = try CameraFrameConverter(input: camera)
        packet = try FFmpegPacket()
        let lock = muxerLock
        audioTrack = try audio.map { a in
            try AudioTrackEncoder(muxer: muxer, encoding: a) { pkt in try lock.withLock { try muxer.write(pkt) } }
        }
        try muxer.open(layout: .fragmented)
        self.muxer = muxer
    }

    // MARK: audio thread

    /// Appends `frames` interleaved S16 frames. A silent video ignores them.
    public func appendAudio(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        try audioTrack?.append(interleaved: samples, frames: frames)
    }

    public func finishAudio() throws { try audioTrack?.finish() }

    /// Puts every packet of both streams encoded so far into the file (see `FFmpegMuxer.flush`).
    public func flush() throws {
        try muxerLock.withLock {
            guard !closed else { return }
            try muxer.flush()
        }
    }

    /// Channels of the sound (0 for a silent video).
    public var audioChannels: Int { audioTrack?.encoding.channels ?? 0 }

    // MARK: video thread

    /// Converts and encodes one camera frame shown at `pts` (in `VideoEncoding.timeBase`, from the
    /// start of the file). A frame not later than the previous one is skipped (returns false).
    /// With `poster`, also returns the converted frame as a JPEG (for the first frame).
    @discardableResult
    public func appendVideo(_ bytes: UnsafeRawBufferPointer, pts: Int64, poster: ((Data) -> Void)? = nil) throws -> Bool {
        guard pts > lastPTS else { skipped.add(1, ordering: .relaxed); return false }
        do {
            try converter.convert(bytes)
        } catch {
            // One bad frame (a damaged MJPEG image, a short buffer) is not a broken recording.
            throw FrameRejected(reason: "\(error)")
        }
        let frame = converter.output.frame
        // The poster is a nicety: a frame that does not encode as JPEG costs it, not the recording
        // (one is made from the file when asked for).
        if let poster, let jpeg = try? JPEGEncoder.encode(frame) { poster(jpeg) }
        frame.pointee.pts = pts
        lastPTS = pts
        try encoder.send(frame)
        try writeVideoPackets()
        written.add(1, ordering: .relaxed)
        return true
    }

    private func writeVideoPackets() throws {
        try encoder.owner.receivePackets(into: packet.pointer, call: "avcodec_receive_packet(libx264)") { pkt in
            av_packet_rescale_ts(pkt, encoder.context.pointee.time_base, stream.pointee.time_base)
            pkt.pointee.stream_index = stream.pointee.index
            try muxerLock.withLock { try muxer.write(pkt) }
        }
    }

    /// Where the picture ends (`VideoEncoding.timeBase`): the last frame's time plus one frame at
    /// the nominal rate, as players show it; nil before the first frame. After the video thread's
    /// last call.
    public var videoEnd: Int64? {
        guard lastPTS != .min else { return nil }
        return lastPTS + Int64((Double(VideoEncoding.timeBase.den) / max(1, video.fps)).rounded())
    }

    public func finishVideo() throws {
        try encoder.send(nil)
        try writeVideoPackets()
    }

    // MARK: either thread, once both have finished

    /// Writes the trailer and closes the file.
    public func close() throws {
        try muxerLock.withLock {
            guard !closed else { return }
            closed = true
            try muxer.close()
        }
    }
}
