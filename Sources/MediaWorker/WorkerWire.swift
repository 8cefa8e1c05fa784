// What recd and a media worker say to each other over their socket pair: one request, one reply,
// each a frame of a JSON header and raw bytes (PCM, a picture) beside it.
import Foundation
import Media

/// A request to a worker. Objects (a decoder, a writer, a hash) live in the worker between calls,
/// one of each kind at a time; `reset` drops them all (a worker going back to the pool).
enum WorkerRequest: Codable, Sendable {
    case probe(path: String)
    case remux(source: String, destination: String, streams: [Int]?, container: String?, hidePriming: Bool)
    case trim(source: String, destination: String, start: Double, end: Double)
    case poster(path: String)
    /// Bytes to hash: the frame's payload.
    case hashUpdate
    case hashFinish
    case openDecoder(path: String)
    case decoderSetOutput(rate: Int, channels: Int)
    case decoderSeek(seconds: Double)
    case decoderRead
    case openWriter(path: String, encoding: AudioEncoding)
    /// Interleaved S16 frames: the frame's payload.
    case writerAppend(frames: Int)
    case writerFlush
    case writerFinish
    case openConverter(format: CapturedSampleFormat, rate: Int, channels: Int, toRate: Int, toChannels: Int)
    /// Captured frames in the converter's input format: the frame's payload.
    case convert(frames: Int)
    case openVideoWriter(path: String, video: VideoEncoding, camera: CameraFrameFormat, audio: AudioEncoding?)
    /// Interleaved S16 frames for the video file's sound: the payload.
    case videoAppendAudio(frames: Int)
    case videoFinishAudio
    case videoFlush
    /// A camera frame: the payload. `poster`: the reply's payload is the frame as a JPEG.
    case videoAppendFrame(pts: Int64, poster: Bool)
    case videoFinishFrames
    case videoClose
    case reset
}

/// A worker's reply: `failure`, or the fields its request fills in.
struct WorkerReply: Codable, Sendable {
    struct DecoderFormat: Codable, Sendable {
        var sampleRate: Int
        var channels: Int
        var duration: Double?
    }
    struct Block: Codable, Sendable {
        var start: Double
        var frames: Int
    }
    var failure: WorkerFailure?
    var info: MediaInfo?
    var remux: RemuxResult?
    var trim: TrimResult?
    var hex: String?
    var decoder: DecoderFormat?
    /// decoderRead: the block in the payload, nil at the end of the stream.
    var block: Block?
    var samplesWritten: Int64?
    /// Writer calls: how many times output reached the file during the call (`onOutputWritten`).
    var outputsWritten: Int?
    /// videoAppendFrame: false when the frame was skipped (not later than the one before).
    var appended: Bool?

    init(failure: WorkerFailure? = nil) { self.failure = failure }
}

/// An error thrown in the worker, as it was thrown: FFmpeg's and Media's own errors keep their type
/// (recd tells a full disk or a missing file by them), anything else its text.
enum WorkerFailure: Codable, Sendable {
    case ffmpeg(FFmpegError)
    case media(MediaError)
    case frameRejected(String)
    case other(String)

    init(_ error: any Error) {
        switch error {
        case let e as FFmpegError: self = .ffmpeg(e)
        case let e as MediaError: self = .media(e)
        case let e as FrameRejected: self = .frameRejected(e.reason)
        default: self = .other("\(error)")
        }
    }

    var error: any Error {
        switch self {
        case .ffmpeg(let e): return e
        case .media(let e): return e
        case .frameRejected(let reason): return FrameRejected(reason: reason)
        case .other(let text): return MediaWorkerError.failed(text)
        }
    }
}

/// What went wrong with a worker itself (not with the media it worked on).
public enum MediaWorkerError: Error, CustomStringConvertible, Sendable {
    /// posix_spawn or socketpair failed.
    case spawnFailed(executable: String, call: String, code: Int32)
    /// The worker ended (crashed, was killed) or broke the protocol while doing `operation`.
    case died(pid: Int32, operation: String, status: String)
    /// An error of a kind only the worker knows, as text.
    case failed(String)

    public var description: String {
        switch self {
        case .spawnFailed(let exe, let call, let code):
            return "could not start a media worker (\(exe)): \(call): \(String(cString: strerror(code)))"
        case .died(let pid, let op, let status):
            return "the media worker (pid \(pid)) \(status) during \(op)"
        case .failed(let text): return text
        }
    }
}

/// Frames on a stream socket: [header length: UInt32 LE][payload length: UInt32 LE][header][payload].
/// Blocking I/O on the calling thread; EINTR retried; writes never raise SIGPIPE. Throws `Closed`.
enum WireIO {
    /// The peer closed its end (or the socket failed: `errno` text).
    struct Closed: Error { var reason: String }

    static let maxHeader = 1 << 20
    static let maxPayload = 1 << 28

    static func write(_ fd: Int32, header: Data, payload: UnsafeRawBufferPointer?) throws {
        var lengths: (UInt32, UInt32) = (UInt32(header.count).littleEndian, UInt32(payload?.count ?? 0).littleEndian)
        try withUnsafeBytes(of: &lengths) { (raw) in try sendAll(fd, raw) }
        try header.withUnsafeBytes { (raw) in try sendAll(fd, raw) }
        if let payload, payload.count > 0 { try sendAll(fd, payload) }
    }

    /// Reads one frame: its header, and its payload into `payload` (resized to fit; kept between calls).
    static func read(_ fd: Int32, payload: inout [UInt8]) throws -> Data {
        var lengths: (UInt32, UInt32) = (0, 0)
        try withUnsafeMutableBytes(of: &lengths) { (raw) in try receiveAll(fd, raw) }
        let headerCount = Int(UInt32(littleEndian: lengths.0)), payloadCount = Int(UInt32(littleEndian: lengths.1))
        guard headerCount <= maxHeader, payloadCount <= maxPayload else {
            throw Closed(reason: "a frame of \(headerCount) + \(payloadCount) bytes (protocol error)")
        }
        var header = Data(count: headerCount)
        try header.withUnsafeMutableBytes { (raw) in try receiveAll(fd, raw) }
        if payload.count != payloadCount { payload = [UInt8](repeating: 0, count: payloadCount) }
        try payload.withUnsafeMutableBytes { (raw) in try receiveAll(fd, raw) }
        return header
    }

    private static func sendAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < raw.count {
            let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Closed(reason: String(cString: strerror(errno))) }
            offset += n
        }
    }

    private static func receiveAll(_ fd: Int32, _ raw: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < raw.count {
            let n = recv(fd, raw.baseAddress! + offset, raw.count - offset, 0)
            if n < 0 && errno == EINTR { continue }
            if n == 0 { throw Closed(reason: "end of stream") }
            guard n > 0 else { throw Closed(reason: String(cString: strerror(errno))) }
            offset += n
        }
    }
}
