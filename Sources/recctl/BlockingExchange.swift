// One HTTP/1.1 request and its reply on a plain blocking Unix socket, framed by NIOHTTP1's own
// encoder and parser run in an EmbeddedChannel: what recctl's one-request commands need, without an
// event loop. Starting NIO's event-loop threads and hopping between them and Swift concurrency's was
// 2.5 ms of the 12 of `recctl --json top 3`; this takes a fraction of one (BENCHMARKS.md, "Client start-up").
// Streams (the event stream, uploads) and `recctl ui` keep NIO's event loops.
import FoundationEssentials
import Glibc
import NIOCore
import NIOEmbedded
import NIOHTTP1

struct BlockingExchange {
    let socketPath: String

    /// Sends `head` and `body` and reads the reply to its end. Nothing listening is `.unreachable`;
    /// the reply is read also when a write failed, since recd may have answered (413, 507) and closed
    /// before taking the whole body; a connection lost before a whole reply is `.unreachable` too.
    func run(_ head: HTTPRequestHead, body: Data?) throws -> HTTPReply {
        let fd = try connect()
        defer { close(fd) }
        let http = EmbeddedChannel()
        defer { _ = try? http.finish() }
        var writeError: String?
        do {
            try http.pipeline.syncOperations.addHTTPClientHandlers()
            try http.writeOutbound(HTTPClientRequestPart.head(head))
            if let body { try http.writeOutbound(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body)))) }
            try http.writeOutbound(HTTPClientRequestPart.end(nil))
            // The whole request in one write where it fits (see RecdClient.send on why).
            var request = ByteBuffer()
            while let part = try http.readOutbound(as: IOData.self) {
                if case .byteBuffer(var b) = part { request.writeBuffer(&b) }
            }
            writeError = sendAll(fd, request)
        } catch {
            throw ClientFailure.badReply("cannot frame the request: \(error)")
        }

        var reply = HTTPReply(status: 0, headers: [:], body: Data())
        var buffer = ByteBufferAllocator().buffer(capacity: 64 * 1024)
        while true {
            buffer.clear()
            var readErrno: Int32 = 0
            let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 64 * 1024) { raw in
                var n: Int
                repeat { n = read(fd, raw.baseAddress, raw.count) } while n < 0 && errno == EINTR
                if n < 0 { readErrno = errno }
                return max(0, n)
            }
            if readErrno != 0 {
                throw ClientFailure.unreachable(socket: socketPath, reason: "connection lost: \(errnoText(readErrno))")
            }
            do {
                if n > 0 {
                    try http.writeInbound(buffer)
                } else {
                    // End of stream: a reply framed by the connection's end is complete now.
                    http.pipeline.syncOperations.fireChannelInactive()
                }
                while let part = try http.readInbound(as: HTTPClientResponsePart.self) {
                    switch part {
                    case .head(let h): reply.status = Int(h.status.code); reply.headers = h.headers
                    case .body(let b): reply.body.append(contentsOf: b.readableBytesView)
                    case .end: return reply
                    }
                }
            } catch {
                throw ClientFailure.badReply("unreadable reply from recd: \(error)")
            }
            if n == 0 {
                throw ClientFailure.unreachable(socket: socketPath, reason: writeError.map { "connection lost: \($0)" }
                                                    ?? "the daemon closed the connection before replying")
            }
        }
    }

    /// A connected socket; nothing listening (or no such socket) is `.unreachable` with the reason, a
    /// queue of connections that stays full for `ConnectRetry.busyWait` `.busy`. Connected without
    /// blocking (a full queue blocks connect(2) until recd accepts, for ever if recd is stopped),
    /// then made blocking for the exchange.
    private func connect() throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else {
            throw ClientFailure.unreachable(socket: socketPath, reason: "the socket's path is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ClientFailure.unreachable(socket: socketPath, reason: errnoText()) }
        let deadline = ContinuousClock.now + ConnectRetry.busyWait
        while true {
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if connected == 0 { break }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN, ContinuousClock.now < deadline {
                var pause = timespec(tv_sec: 0, tv_nsec: Int(ConnectRetry.pause.components.attoseconds / 1_000_000_000))
                nanosleep(&pause, nil)
                continue
            }
            close(fd)
            if code == EAGAIN { throw ClientFailure.busy(socket: socketPath, reason: errnoText(code)) }
            throw ClientFailure.unreachable(socket: socketPath, reason: errnoText(code))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Writes all of `bytes`; the error's text if the connection fails first (no SIGPIPE).
    private func sendAll(_ fd: Int32, _ bytes: ByteBuffer) -> String? {
        bytes.withUnsafeReadableBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return errnoText() }
                done += n
            }
            return nil
        }
    }
}
