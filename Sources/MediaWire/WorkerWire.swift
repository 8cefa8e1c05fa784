// What recd and a media worker say to each other over their socket pair: one request, one reply,
// each a frame of a header (JSON, or compact binary for the per-block ones: `WorkerCoding`) and raw
// bytes (PCM, a picture) beside it.
import CProcessShim
import Foundation

/// A request to a worker. Objects (a decoder, a writer, a hash) live in the worker between calls,
/// one of each kind at a time; `reset` drops them all (a worker going back to the pool).
public enum WorkerRequest: Codable, Sendable {
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
    /// Decoded blocks joined until they hold `atLeast` frames (or the stream ends): one round trip
    /// per block of an hour's AAC (1024 frames) made its waveform 5× slower than ffmpeg's decode.
    case decoderRead(atLeast: Int)
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
    /// A memory file the camera frames will come in (`videoAppendFrame` with `shared`): the
    /// descriptor passed with this request (SCM_RIGHTS), `bytes` long.
    case videoShareFrames(bytes: Int)
    /// A camera frame: the payload, or when `shared` > 0 the first `shared` bytes of the memory file
    /// of `videoShareFrames` (written by recd before the call, not touched until its reply). `poster`:
    /// the reply's payload is the frame as a JPEG.
    case videoAppendFrame(pts: Int64, poster: Bool, shared: Int)
    case videoFinishFrames
    case videoClose
    case reset
}

/// A worker's reply: `failure`, or the fields its request fills in. A field added here must also be
/// added to `WorkerCoding.encode(_: WorkerReply…)`: to its compact form, or to the fields that send a
/// reply as JSON (otherwise the compact form would drop it).
public struct WorkerReply: Codable, Sendable {
    public struct DecoderFormat: Codable, Sendable {
        public var sampleRate: Int
        public var channels: Int
        public var duration: Double?
        public init(sampleRate: Int, channels: Int, duration: Double?) { self.sampleRate = sampleRate; self.channels = channels; self.duration = duration }
    }
    public struct Block: Codable, Sendable {
        public var start: Double
        public var frames: Int
        public init(start: Double, frames: Int) { self.start = start; self.frames = frames }
    }
    public var failure: WorkerFailure?
    public var info: MediaInfo?
    public var remux: RemuxResult?
    public var trim: TrimResult?
    public var hex: String?
    public var decoder: DecoderFormat?
    /// decoderRead: the joined blocks in the payload (`start` is the first one's), nil at the end of the stream.
    public var block: Block?
    public var samplesWritten: Int64?
    /// Writer calls: how many times output reached the file during the call (`onOutputWritten`).
    public var outputsWritten: Int?
    /// videoAppendFrame: false when the frame was skipped (not later than the one before).
    public var appended: Bool?

    public init(failure: WorkerFailure? = nil) { self.failure = failure }
}

/// An error thrown in the worker, as it was thrown: FFmpeg's and Media's own errors keep their type
/// (recd tells a full disk or a missing file by them), anything else its text.
public enum WorkerFailure: Codable, Sendable {
    case ffmpeg(FFmpegError)
    case media(MediaError)
    case frameRejected(String)
    case other(String)

    public init(_ error: any Error) {
        switch error {
        case let e as FFmpegError: self = .ffmpeg(e)
        case let e as MediaError: self = .media(e)
        case let e as FrameRejected: self = .frameRejected(e.reason)
        default: self = .other("\(error)")
        }
    }

    public var error: any Error {
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
    /// The worker gave no answer to `operation` for `seconds` and was killed (a job that stalled:
    /// a hostile file, a hung disk). `MediaWorkerPool`'s stall limit.
    case stalled(pid: Int32, operation: String, seconds: Int)

    public var description: String {
        switch self {
        case .spawnFailed(let exe, let call, let code):
            return "could not start a media worker (\(exe)): \(call): \(String(cString: strerror(code)))"
        case .died(let pid, let op, let status):
            return "the media worker (pid \(pid)) \(status) during \(op)"
        case .failed(let text): return text
        case .stalled(let pid, let op, let seconds):
            return "the media worker (pid \(pid)) gave no answer for \(seconds) s during \(op), and was stopped"
        }
    }
}

/// How headers are written: JSON (Codable) for every request and reply, except the ones that go
/// with each block of sound or picture (tens a second while recording or playing), which go as a
/// few fixed binary fields. Measured: decoding a `WorkerRequest` from JSON cost the worker more than
/// FLAC-encoding the block it came with, and the round trip's JSON about a fifth of a recording's
/// CPU. A JSON header starts with `{`; a compact one with its tag byte (below 0x20).
public enum WorkerCoding {
    private enum Tag: UInt8 {
        case writerAppend = 1, videoAppendAudio, convert, decoderRead, hashUpdate, videoAppendFrame
        /// A reply with no failure and only the per-block fields (`encode(_: WorkerReply…)`).
        case reply = 0x10
    }

    public static func encode(_ request: WorkerRequest, json: JSONEncoder) throws -> Data {
        var w = CompactWriter()
        switch request {
        case .writerAppend(let frames): w.tag(Tag.writerAppend.rawValue); w.int(Int64(frames))
        case .videoAppendAudio(let frames): w.tag(Tag.videoAppendAudio.rawValue); w.int(Int64(frames))
        case .convert(let frames): w.tag(Tag.convert.rawValue); w.int(Int64(frames))
        case .decoderRead(let atLeast): w.tag(Tag.decoderRead.rawValue); w.int(Int64(atLeast))
        case .hashUpdate: w.tag(Tag.hashUpdate.rawValue)
        case .videoAppendFrame(let pts, let poster, let shared):
            w.tag(Tag.videoAppendFrame.rawValue); w.int(pts); w.int(poster ? 1 : 0); w.int(Int64(shared))
        default: return try json.encode(request)
        }
        return w.data
    }

    public static func decodeRequest(_ header: Data, json: JSONDecoder) throws -> WorkerRequest {
        guard let first = header.first, first < 0x20 else { return try json.decode(WorkerRequest.self, from: header) }
        var r = CompactReader(header)
        let request: WorkerRequest
        switch Tag(rawValue: try r.tag()) {
        case .writerAppend: request = .writerAppend(frames: Int(try r.int()))
        case .videoAppendAudio: request = .videoAppendAudio(frames: Int(try r.int()))
        case .convert: request = .convert(frames: Int(try r.int()))
        case .decoderRead: request = .decoderRead(atLeast: Int(try r.int()))
        case .hashUpdate: request = .hashUpdate
        case .videoAppendFrame: request = .videoAppendFrame(pts: try r.int(), poster: try r.int() != 0, shared: Int(try r.int()))
        case .reply, nil: throw CompactReader.Malformed(reason: "request tag \(first)")
        }
        try r.end()
        return request
    }

    public static func encode(_ reply: WorkerReply, json: JSONEncoder) throws -> Data {
        guard reply.failure == nil, reply.info == nil, reply.remux == nil, reply.trim == nil, reply.hex == nil,
              reply.decoder == nil else { return try json.encode(reply) }
        // A byte of which fields follow, then each present one.
        var present: UInt8 = 0
        if reply.samplesWritten != nil { present |= 1 }
        if reply.outputsWritten != nil { present |= 2 }
        if reply.appended != nil { present |= 4 }
        if reply.block != nil { present |= 8 }
        var w = CompactWriter()
        w.tag(Tag.reply.rawValue)
        w.tag(present)
        if let n = reply.samplesWritten { w.int(n) }
        if let n = reply.outputsWritten { w.int(Int64(n)) }
        if let appended = reply.appended { w.int(appended ? 1 : 0) }
        if let block = reply.block { w.int(Int64(bitPattern: block.start.bitPattern)); w.int(Int64(block.frames)) }
        return w.data
    }

    public static func decodeReply(_ header: Data, json: JSONDecoder) throws -> WorkerReply {
        guard let first = header.first, first < 0x20 else { return try json.decode(WorkerReply.self, from: header) }
        var r = CompactReader(header)
        guard try r.tag() == Tag.reply.rawValue else { throw CompactReader.Malformed(reason: "reply tag \(first)") }
        let present = try r.tag()
        guard present & ~0x0f == 0 else { throw CompactReader.Malformed(reason: "reply fields \(present)") }
        var reply = WorkerReply()
        if present & 1 != 0 { reply.samplesWritten = try r.int() }
        if present & 2 != 0 { reply.outputsWritten = Int(try r.int()) }
        if present & 4 != 0 { reply.appended = try r.int() != 0 }
        if present & 8 != 0 {
            let start = Double(bitPattern: UInt64(bitPattern: try r.int()))
            reply.block = .init(start: start, frames: Int(try r.int()))
        }
        try r.end()
        return reply
    }
}

/// Bytes of a compact header: tag bytes and little-endian 64-bit integers.
private struct CompactWriter {
    var data = Data(capacity: 40)
    mutating func tag(_ byte: UInt8) { data.append(byte) }
    mutating func int(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
}

private struct CompactReader {
    struct Malformed: Error { var reason: String }
    private let data: Data
    private var offset: Int

    init(_ data: Data) { self.data = data; offset = data.startIndex }

    mutating func tag() throws -> UInt8 {
        guard offset < data.endIndex else { throw Malformed(reason: "a short header") }
        defer { offset += 1 }
        return data[offset]
    }

    mutating func int() throws -> Int64 {
        guard data.endIndex - offset >= 8 else { throw Malformed(reason: "a short header") }
        // (Data's generic copyBytes cost more than the rest of the header's decoding.)
        let value = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset - data.startIndex, as: Int64.self) }
        offset += 8
        return Int64(littleEndian: value)
    }

    func end() throws {
        guard offset == data.endIndex else { throw Malformed(reason: "\(data.endIndex - offset) bytes left in a header") }
    }
}

/// Frames on a stream socket: [header length: UInt32 LE][payload length: UInt32 LE][header][payload].
/// Blocking I/O on the calling thread; EINTR retried; writes never raise SIGPIPE. Throws `Closed`.
public enum WireIO {
    /// The peer closed its end (or the socket failed: `errno` text).
    public struct Closed: Error { public var reason: String; public init(reason: String) { self.reason = reason } }
    /// Nothing came before the deadline given to `read`.
    public struct TimedOut: Error { public init() {} }

    public static let maxHeader = 1 << 20
    public static let maxPayload = 1 << 28

    /// One `sendmsg` for the whole frame (when the socket's buffer takes it): three sends woke the
    /// reader up to three times a frame. `passing`: a descriptor that goes with the frame's first
    /// byte (read by `read(_:payload:descriptor:)`).
    public static func write(_ fd: Int32, header: Data, payload: UnsafeRawBufferPointer?, passing descriptor: Int32? = nil) throws {
        var lengths: (UInt32, UInt32) = (UInt32(header.count).littleEndian, UInt32(payload?.count ?? 0).littleEndian)
        try withUnsafeMutableBytes(of: &lengths) { lengthBytes in
            try header.withUnsafeBytes { headerBytes in
                var parts = [iovec(iov_base: lengthBytes.baseAddress, iov_len: lengthBytes.count),
                             iovec(iov_base: UnsafeMutableRawPointer(mutating: headerBytes.baseAddress), iov_len: headerBytes.count)]
                if let payload, payload.count > 0 {
                    parts.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: payload.baseAddress), iov_len: payload.count))
                }
                try sendAll(fd, &parts, passing: descriptor)
            }
        }
    }

    /// Reads one frame: its header, and its payload into `payload` (resized to fit; kept between calls).
    /// `deadline`: when the frame has not begun by then, `TimedOut` (once begun, it is read whole).
    public static func read(_ fd: Int32, payload: inout [UInt8], deadline: ContinuousClock.Instant? = nil) throws -> Data {
        if let deadline { try waitForInput(fd, until: deadline) }
        var none: Int32? = nil
        return try read(fd, payload: &payload, descriptor: &none, acceptsDescriptor: false)
    }

    /// `read`, and the descriptor passed with the frame (nil when none came). It is the caller's to close.
    public static func read(_ fd: Int32, payload: inout [UInt8], descriptor: inout Int32?) throws -> Data {
        try read(fd, payload: &payload, descriptor: &descriptor, acceptsDescriptor: true)
    }

    private static func read(_ fd: Int32, payload: inout [UInt8], descriptor: inout Int32?, acceptsDescriptor: Bool) throws -> Data {
        var lengths: (UInt32, UInt32) = (0, 0)
        try withUnsafeMutableBytes(of: &lengths) { (raw) in
            guard acceptsDescriptor else { return try receiveAll(fd, raw) }
            // The descriptor comes with the frame's first byte, so with the first receive.
            var received: Int32 = -1
            var n: Int
            while true {
                n = recd_receive_with_descriptor(fd, raw.baseAddress!, raw.count, &received)
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { try waitForInput(fd); continue }
                if n < 0 && errno == EINTR { continue }
                break
            }
            if received >= 0 { descriptor = received }
            if n == 0 { throw Closed(reason: "end of stream") }
            guard n > 0 else { throw Closed(reason: String(cString: strerror(errno))) }
            if n < raw.count { try receiveAll(fd, UnsafeMutableRawBufferPointer(rebasing: raw[n...])) }
        }
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

    /// Sends every byte of `parts` in order, however many calls the socket's buffer takes.
    private static func sendAll(_ fd: Int32, _ parts: inout [iovec], passing descriptor: Int32?) throws {
        var first = 0
        var descriptor = descriptor
        while first < parts.count {
            let n = parts.withUnsafeMutableBufferPointer { iov -> Int in
                if let passed = descriptor {
                    return recd_send_with_descriptor(fd, iov.baseAddress! + first, Int32(iov.count - first), passed)
                }
                var message = msghdr()
                message.msg_iov = iov.baseAddress! + first
                message.msg_iovlen = iov.count - first
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Closed(reason: String(cString: strerror(errno))) }
            descriptor = nil   // gone with the first byte sent
            // Past the parts sent whole, into the one sent in part.
            var sent = n
            while first < parts.count && sent >= parts[first].iov_len {
                sent -= parts[first].iov_len
                first += 1
            }
            if sent > 0 {
                parts[first].iov_base += sent
                parts[first].iov_len -= sent
            }
        }
    }

    /// Waits in poll(2), not in recv(2): a thread blocked in recv on a unix socket is woken each time
    /// its peer takes bytes off the socket (the kernel's "space freed" wake-up goes to every waiter on
    /// the socket, and recv's wait does not tell it apart), so a thread waiting for a reply was woken
    /// for nothing when the worker read the request, and the worker when recd read the reply: half
    /// the context switches of a round trip. poll waiting for input is not woken by that.
    public static func receiveAll(_ fd: Int32, _ raw: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < raw.count {
            let n = recv(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_DONTWAIT))
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try waitForInput(fd)
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n == 0 { throw Closed(reason: "end of stream") }
            guard n > 0 else { throw Closed(reason: String(cString: strerror(errno))) }
            offset += n
        }
    }

    /// Blocks until `fd` has input (or its peer closed it: the next recv says which), or throws
    /// `TimedOut` at `deadline`.
    private static func waitForInput(_ fd: Int32, until deadline: ContinuousClock.Instant? = nil) throws {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline).components
                timeout = left.seconds < 0 ? 0 : Int32(clamping: left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000 + 1)
            }
            let n = poll(&entry, 1, timeout)
            if n > 0 { return }
            if n == 0 { throw TimedOut() }
            guard errno == EINTR else { throw Closed(reason: String(cString: strerror(errno))) }
        }
    }
}
