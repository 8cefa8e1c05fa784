// What recd and a media worker say to each other over their socket pair: one request, one reply,
// each a frame of a JSON header and raw bytes (PCM, a picture) beside it. The operations themselves
// are in WorkerOperations.swift, each a Codable struct with the type of its reply.
//
// JSON for every header, the per-block calls (six blocks a second while recording, a camera frame)
// too. A derived binary coding measured 0.015 CPU s less per 10 s FLAC take (bench/record-cpu.sh:
// Foundation's JSON code is cold between blocks): 0.15 % of one core, which nobody notices, for 285
// lines of Encoder and Decoder. JSON is also what a person reads in `strace -s 200`.
import CProcessShim
import Foundation

/// One operation of the worker protocol: its request's fields (the struct itself) and its reply. The
/// worker serves each with one handler (`WorkerServer.handlers`); recd calls it with
/// `MediaWorkerConnection.call`, which returns its `Reply` or throws what the worker threw.
public protocol WorkerOperation: Codable, Sendable {
    associatedtype Reply: Codable & Sendable = Done
    /// The file a whole-file job reads: a worker's stall limit grows with its size.
    var fileRead: String? { get }
}

extension WorkerOperation {
    public var fileRead: String? { nil }
    /// The operation's name on the wire (its type's).
    public static var name: String { String(describing: Self.self) }

    /// The request's header: its name, a space, its fields as JSON.
    public func header() throws -> [UInt8] {
        Array(Self.name.utf8) + [WireJSON.space] + (try WireJSON.encoder.encode(self))
    }

    /// Decodes a request's fields: the header after its name (`WireJSON.name(of:)`).
    public static func fields(of header: [UInt8], after name: Int) throws -> Self {
        do { return try WireJSON.decoder.decode(Self.self, from: Data(header[(name + 1)...])) } catch let error as DecodingError {
            throw WireJSON.malformed("\(Self.name): \(WireJSON.describe(error))")
        }
    }
}

/// The JSON of the wire's headers: one encoder and decoder for every process (both are thread-safe
/// once configured), numbers that JSON has no word for (a trim's lead-in of -inf) as strings.
public enum WireJSON {
    static let space = UInt8(ascii: " ")
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return encoder
    }()
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return decoder
    }()

    /// A request's operation name and the index of the space after it.
    public static func name(of header: [UInt8]) throws -> (String, Int) {
        guard let space = header.firstIndex(of: space), space > 0 else { throw malformed("no operation name before its fields") }
        return (String(decoding: header[..<space], as: UTF8.self), space)
    }

    /// What is wrong with a header, in words: the field and what it should have been.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
            let keys = (context.codingPath + (key.map { [$0] } ?? [])).map(\.stringValue)
            return keys.isEmpty ? "the header" : keys.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(path(context)) is not a \(type)"
        case .valueNotFound(let type, let context): return "\(path(context)) has no \(type)"
        case .keyNotFound(let key, let context): return "\(path(context, key)) is missing"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    public static func malformed(_ text: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "a malformed worker message: \(text)"))
    }
}

/// A reply's header: the operation's reply, or what it threw. `outputs`: how many times a writer's
/// output reached its file during the call (its `onOutputWritten`, which recd's side calls as often).
public enum WorkerAnswer<Reply: Codable & Sendable>: Codable, Sendable {
    case reply(Reply, outputs: Int)
    case failure(WorkerFailure)

    public func header() throws -> [UInt8] { Array(try WireJSON.encoder.encode(self)) }

    /// Decodes a reply's whole header.
    public init(header: [UInt8]) throws { self = try WireJSON.decoder.decode(Self.self, from: Data(header)) }
}

/// The reply of an operation that answers nothing but that it is done.
public struct Done: Codable, Sendable { public init() {} }

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
    /// byte (read by `read(_:payload:descriptor:)`). `deadline`: when the peer has not taken every
    /// byte by then (it stopped reading), `TimedOut`.
    public static func write(_ fd: Int32, header: [UInt8], payload: UnsafeRawBufferPointer?, passing descriptor: Int32? = nil,
                             deadline: ContinuousClock.Instant? = nil) throws {
        var lengths: (UInt32, UInt32) = (UInt32(header.count).littleEndian, UInt32(payload?.count ?? 0).littleEndian)
        try withUnsafeMutableBytes(of: &lengths) { lengthBytes in
            try header.withUnsafeBytes { headerBytes in
                var parts = [iovec(iov_base: lengthBytes.baseAddress, iov_len: lengthBytes.count),
                             iovec(iov_base: UnsafeMutableRawPointer(mutating: headerBytes.baseAddress), iov_len: headerBytes.count)]
                if let payload, payload.count > 0 {
                    parts.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: payload.baseAddress), iov_len: payload.count))
                }
                try sendAll(fd, &parts, passing: descriptor, deadline: deadline)
            }
        }
    }

    /// Reads one frame: its header, and its payload into `payload` (resized to fit; kept between calls).
    /// `deadline`: when the whole frame has not come by then, `TimedOut`.
    public static func read(_ fd: Int32, payload: inout [UInt8], deadline: ContinuousClock.Instant? = nil) throws -> [UInt8] {
        var none: Int32? = nil
        return try read(fd, payload: &payload, descriptor: &none, acceptsDescriptor: false, deadline: deadline)
    }

    /// `read`, and the descriptor passed with the frame (nil when none came). It is the caller's to close.
    public static func read(_ fd: Int32, payload: inout [UInt8], descriptor: inout Int32?) throws -> [UInt8] {
        try read(fd, payload: &payload, descriptor: &descriptor, acceptsDescriptor: true)
    }

    private static func read(_ fd: Int32, payload: inout [UInt8], descriptor: inout Int32?, acceptsDescriptor: Bool,
                             deadline: ContinuousClock.Instant? = nil) throws -> [UInt8] {
        var lengths: (UInt32, UInt32) = (0, 0)
        try withUnsafeMutableBytes(of: &lengths) { (raw) in
            guard acceptsDescriptor else { return try receiveAll(fd, raw, deadline: deadline) }
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
        var header = [UInt8](repeating: 0, count: headerCount)
        try header.withUnsafeMutableBytes { (raw) in try receiveAll(fd, raw, deadline: deadline) }
        if payload.count != payloadCount { payload = [UInt8](repeating: 0, count: payloadCount) }
        try payload.withUnsafeMutableBytes { (raw) in try receiveAll(fd, raw, deadline: deadline) }
        return header
    }

    /// Sends every byte of `parts` in order, however many calls the socket's buffer takes.
    /// With a `deadline`, sends without blocking and waits in poll(2) for room until then.
    private static func sendAll(_ fd: Int32, _ parts: inout [iovec], passing descriptor: Int32?,
                                deadline: ContinuousClock.Instant?) throws {
        var first = 0
        var descriptor = descriptor
        let flags = Int32(MSG_NOSIGNAL) | (deadline == nil ? 0 : Int32(MSG_DONTWAIT))
        while first < parts.count {
            let n = parts.withUnsafeMutableBufferPointer { iov -> Int in
                if let passed = descriptor {
                    return recd_send_with_descriptor(fd, iov.baseAddress! + first, Int32(iov.count - first), passed, flags)
                }
                var message = msghdr()
                message.msg_iov = iov.baseAddress! + first
                message.msg_iovlen = iov.count - first
                return sendmsg(fd, &message, flags)
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), deadline != nil {
                try wait(fd, for: POLLOUT, until: deadline)
                continue
            }
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
    public static func receiveAll(_ fd: Int32, _ raw: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant? = nil) throws {
        var offset = 0
        while offset < raw.count {
            let n = recv(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_DONTWAIT))
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try waitForInput(fd, until: deadline)
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
        try wait(fd, for: POLLIN, until: deadline)
    }

    /// Blocks until `fd` is ready for `events` (or failed: the next call says how), or throws
    /// `TimedOut` at `deadline`.
    private static func wait(_ fd: Int32, for events: Int32, until deadline: ContinuousClock.Instant?) throws {
        var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
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
