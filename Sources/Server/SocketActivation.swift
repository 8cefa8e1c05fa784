// systemd socket activation: serving on a listening socket the service manager passed in.
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// The sd_listen_fds(3) protocol, without libsystemd.
public enum SocketActivation {
    /// The descriptors passed by the service manager (from 3 on), if `LISTEN_PID` is this process.
    /// The variables are removed, so that children do not take the sockets for theirs.
    public static func listenFDs(environment: [String: String] = ProcessInfo.processInfo.environment) -> [Int32] {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int32.init), count > 0 else { return [] }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        return (0..<count).map { fd in
            _ = fcntl(3 + fd, F_SETFD, FD_CLOEXEC)
            return 3 + fd
        }
    }

    /// The filesystem path a Unix listening socket is bound to (nil for other sockets).
    public static func path(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
