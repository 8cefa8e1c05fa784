// An exclusive flock held for the life of the process.
import Foundation

/// `flock(LOCK_EX|LOCK_NB)` on a file that holds the owner's pid. The kernel drops the lock when its
/// process dies, even on kill -9, so a lock is never stale. Used for the data directory (one daemon
/// per catalog) and for the socket (one daemon per socket).
public final class ExclusiveFileLock: Sendable {
    public enum Failure: Error, Sendable {
        /// Another process holds it; its pid as written in the file, when readable.
        case held(path: String, holderPID: String?)
        case cannotOpen(path: String, reason: String)
    }

    public let path: String
    private let fd: Int32

    public init(path: String) throws(Failure) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw .held(path: path, holderPID: holder.flatMap { $0.isEmpty ? nil : $0 })
        }
        _ = ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }
}
