// The systemd notify protocol (sd_notify(3)): datagrams to $NOTIFY_SOCKET, without libsystemd.
import Foundation

/// Sends `READY=1`, `STATUS=…`, `WATCHDOG=1`, `STOPPING=1` to the service manager when recd runs
/// under one (`Type=notify`); does nothing otherwise.
public struct SystemdNotifier: Sendable {
    /// The socket's path; a leading `@` means the abstract namespace.
    public let socketPath: String?
    /// Half of `WATCHDOG_USEC` when the watchdog is on for this process: how often to ping.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if path != nil, forUs, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    public var isActive: Bool { socketPath != nil }

    /// Sends one message (newline-separated assignments). Failures are returned, not thrown: the
    /// daemon runs on whether or not a manager listens.
    @discardableResult
    public func notify(_ message: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }   // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let data = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                sendto(fd, data, data.count, Int32(MSG_NOSIGNAL), sa, length)
            }
        }
        return sent == data.count
    }

    /// `STATUS=` text must be one line.
    public static func statusLine(_ text: String) -> String {
        "STATUS=" + text.replacingOccurrences(of: "\n", with: " ")
    }
}
