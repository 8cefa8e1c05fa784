// HTTP/1.1 over the daemon's Unix socket, with SwiftNIO (no TLS stack is compiled for a local socket).
import FoundationEssentials
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import RecdAPI

/// Why a request did not give a successful reply.
enum ClientFailure: Error {
    /// The daemon answered with an error body (exit code 1).
    case refused(status: Int, APIErrorBody)
    /// Nothing is listening on the socket (exit code 3).
    case unreachable(socket: String, reason: String)
    /// recd is there but takes no more connections now: its queue of connections to accept is full
    /// (connect(2) says EAGAIN). Its 503 `too_many_connections` is a `.refused` said the same way
    /// (exit code 4 for both: `isBusy`).
    case busy(socket: String, reason: String)
    /// The daemon's reply could not be understood.
    case badReply(String)
    /// Something on this side failed: a file that cannot be written, or is not to be replaced (exit code 1).
    case local(String)
}

extension ClientFailure {
    /// recd answered that it serves as many connections as it may (503 `too_many_connections`), or
    /// could not be connected to for its full queue: try again shortly, nothing is wrong with the request.
    var isBusy: Bool {
        switch self {
        case .busy: true
        case .refused(let status, let body): status == 503 && body.error.code == .tooManyConnections
        default: false
        }
    }
}

/// connect(2) on a Unix socket whose queue of connections waiting to be accepted is full: EAGAIN at
/// once for a non-blocking socket (a blocking one waits, for ever if recd is stopped). Tried again for
/// `busyWait` in all before recctl says recd is busy: a queue drains in microseconds when recd accepts.
enum ConnectRetry {
    static let busyWait: Duration = .seconds(1)
    static let pause: Duration = .milliseconds(20)
}

struct HTTPReply {
    var status: Int
    var headers: HTTPHeaders
    var body: Data
}

struct RecdClient {
    let socketPath: String

    /// An HTTP/1 connection to the daemon; nothing listening is `.unreachable`, a full queue `.busy`.
    private func connect() async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        let deadline = ContinuousClock.now + ConnectRetry.busyWait
        while true {
            do {
                return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(.seconds(5))
                    .connect(unixDomainSocketPath: socketPath) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHTTPClientHandlers()
                            return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                                wrappingChannelSynchronously: channel)
                        }
                    }
            } catch where Self.errnoCode(error) == EAGAIN {
                guard ContinuousClock.now < deadline else {
                    throw ClientFailure.busy(socket: socketPath, reason: Self.describe(error))
                }
                try await Task.sleep(for: ConnectRetry.pause)
            } catch {
                throw ClientFailure.unreachable(socket: socketPath, reason: Self.describe(error))
            }
        }
    }

    /// One request with its whole body, and the whole reply: on a blocking connection of its own
    /// (`BlockingExchange`), with no event loop. A command that makes one request starts no thread.
    func send(_ method: HTTPMethod, _ path: String, body: Data? = nil) async throws -> HTTPReply {
        var head = Self.head(method, path)
        if let body {
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: String(body.count))
        }
        return try BlockingExchange(socketPath: socketPath).run(head, body: body)
    }

    /// The head every request carries: one request per connection (`Connection: close`).
    static func head(_ method: HTTPMethod, _ path: String) -> HTTPRequestHead {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
        head.headers.add(name: "Host", value: "recd")
        head.headers.add(name: "User-Agent", value: "recctl/\(RecdVersion.current)")
        head.headers.add(name: "Connection", value: "close")
        return head
    }

    /// POSTs the bytes of `file` as the body, read and sent a MiB at a time (an hour of WAV is
    /// not held in memory), on a connection of its own. recd may refuse before it has read them all
    /// (too large, no room) and close: the reply is read all the same, also when a write failed. A
    /// connection lost midway is `.unreachable`, not a refusal.
    func upload(_ path: String, file: String) async throws -> HTTPReply {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ClientFailure.local("cannot read \(file): \(errnoText())") }
        defer { close(fd) }
        var info = stat()
        let size = fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
        var head = Self.head(.POST, path)
        head.headers.add(name: "Content-Type", value: "application/octet-stream")
        head.headers.add(name: "Content-Length", value: String(size))
        let channel = try await connect()
        do {
            return try await channel.executeThenClose { inbound, outbound in
                var writeError: (any Error)?
                do {
                    try await outbound.write(.head(head))
                    var sent: Int64 = 0
                    var chunk = ByteBufferAllocator().buffer(capacity: 1 << 20)
                    while sent < size {
                        chunk.clear()
                        let n = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 20) { buffer in
                            var n: Int
                            repeat { n = read(fd, buffer.baseAddress, buffer.count) } while n < 0 && errno == EINTR
                            return max(0, n)
                        }
                        if n == 0 { break }
                        try await outbound.write(.body(.byteBuffer(chunk)))
                        sent += Int64(n)
                    }
                    try await outbound.write(.end(nil))
                } catch {
                    writeError = error
                }
                var reply = HTTPReply(status: 0, headers: [:], body: Data())
                for try await part in inbound {
                    switch part {
                    case .head(let h): reply.status = Int(h.status.code); reply.headers = h.headers
                    case .body(let b): reply.body.append(contentsOf: b.readableBytesView)
                    case .end: return reply
                    }
                }
                if let writeError { throw writeError }
                throw ClientFailure.unreachable(socket: socketPath, reason: "the daemon closed the connection before replying")
            }
        } catch let failure as ClientFailure {
            throw failure
        } catch {
            // The daemon went away mid-request (reset, broken pipe): it is not reachable, it did not refuse.
            throw ClientFailure.unreachable(socket: socketPath, reason: "connection lost: \(Self.describe(error))")
        }
    }

    /// GETs a Server-Sent Events stream and calls `onData` with each event's `data` (one JSON object),
    /// until the daemon ends the stream. An error reply becomes `.refused`.
    func events(_ path: String, onData: @escaping @Sendable (String) -> Void) async throws {
        let channel = try await connect()
        try await channel.executeThenClose { inbound, outbound in
            var head = Self.head(.GET, path)
            head.headers.add(name: "Accept", value: "text/event-stream")
            try await outbound.write(contentsOf: [.head(head), .end(nil)])
            var status = 0
            var errorBody = Data()
            var pending = Data()
            for try await part in inbound {
                switch part {
                case .head(let h): status = Int(h.status.code)
                case .body(let b):
                    guard status == 200 else { errorBody.append(contentsOf: b.readableBytesView); continue }
                    pending.append(contentsOf: b.readableBytesView)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending.removeSubrange(pending.startIndex...newline)
                        if line.hasPrefix("data: ") { onData(String(line.dropFirst(6))) }
                    }
                case .end:
                    if status != 200 { try Self.check(HTTPReply(status: status, headers: [:], body: errorBody)) }
                    return
                }
            }
        }
    }

    /// Sends a request and decodes a successful JSON reply; an error reply becomes `.refused`.
    func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<Int>.none,
                            as type: T.Type) async throws -> (T, Data) {
        let data = try body.map { try APIJSON.encoder().encode($0) }
        let reply = try await send(method, path, body: data)
        try Self.check(reply)
        do {
            return (try APIJSON.decoder().decode(T.self, from: reply.body), reply.body)
        } catch {
            throw ClientFailure.badReply("unexpected reply from recd: \(error)")
        }
    }

    static func check(_ reply: HTTPReply) throws {
        guard (200..<300).contains(reply.status) else {
            if let e = try? APIJSON.decoder().decode(APIErrorBody.self, from: reply.body) {
                throw ClientFailure.refused(status: reply.status, e)
            }
            let text = String(decoding: reply.body, as: UTF8.self)
            throw ClientFailure.refused(status: reply.status,
                                        APIErrorBody(code: .internalError, message: "HTTP \(reply.status): \(text)"))
        }
    }

    /// The errno behind a connection's failure, if it has one.
    static func errnoCode(_ error: any Error) -> Int32? {
        if let e = error as? IOError { return e.errnoCode }
        if let e = error as? NIOConnectionError, let first = e.connectionErrors.first { return errnoCode(first.error) }
        return nil
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? IOError { return errnoText(e.errnoCode) }
        if let e = error as? NIOConnectionError, let first = e.connectionErrors.first {
            return describe(first.error)
        }
        return "\(error)"
    }
}
