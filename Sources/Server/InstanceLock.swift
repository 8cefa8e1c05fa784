// One daemon per socket.
import Engine
import Foundation
import Storage

public struct InstanceLockError: Error, CustomStringConvertible {
    public var socketPath: String
    public var failure: ExclusiveFileLock.Failure
    public var description: String {
        switch failure {
        case .held(_, let pid):
            return "another recd (pid \(pid ?? "?")) is already serving \(socketPath); stop it first"
                + " or give this one another --socket"
        case .cannotOpen(let path, let reason):
            return "cannot lock \(path): \(reason)"
        }
    }
}

/// Hummingbird binds with `cleanupExistingSocketFile`, which would silently steal the socket of a
/// live daemon. The lock on `<socket>.lock` tells a live daemon (lock held) from a stale socket
/// file (lock free).
enum InstanceLock {
    static func acquire(socketPath: String) throws -> ExclusiveFileLock {
        do {
            return try ExclusiveFileLock(path: socketPath + ".lock")
        } catch {
            throw InstanceLockError(socketPath: socketPath, failure: error)
        }
    }
}
