// One daemon per socket: an flock on `<socket>.lock`, held for the life of the process.
import Foundation

public struct InstanceLockError: Error, CustomStringConvertible {
    public var lockPath: String
    public var socketPath: String
    public var holderPID: String?
    public var detail: String?
    public var description: String {
        if let detail { return "cannot lock \(lockPath): \(detail)" }
        return "another recd (pid \(holderPID ?? "?")) is already serving \(socketPath); stop it first"
            + " or give this one another --socket"
    }
}

/// Hummingbird binds with `cleanupExistingSocketFile`, which would silently steal the socket of a
/// live daemon. The lock tells a live daemon (lock held) from a stale socket file (lock free: the
/// kernel drops an flock when its process dies, even on kill -9).
public final class InstanceLock: Sendable {
    let fd: Int32
    public let path: String

    public init(socketPath: String) throws {
        path = socketPath + ".lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw InstanceLockError(lockPath: path, socketPath: socketPath, detail: String(cString: strerror(errno)))
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw InstanceLockError(lockPath: path, socketPath: socketPath, holderPID: holder)
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
    }

    deinit { close(fd) }
}
