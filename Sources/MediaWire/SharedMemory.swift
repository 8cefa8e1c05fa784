// Memory shared by recd and a worker: camera frames reach the worker without a copy through the socket.
import CProcessShim
import Foundation

/// A memory file (memfd) mapped into this process; unmapped when this goes.
///
/// Why: a camera frame sent as a payload went through the socket's buffer in pieces of at most
/// 32 KB, each a wake-up of the worker's reader and, as the buffer drained, of recd's writer: for a
/// 320x180 frame (86 KB) that was half of the video thread's CPU and a fifth of the worker's, and a
/// 1080p YUYV frame is 4 MB. Written into a shared file, a frame costs one copy in recd and a short
/// request. recd creates the file (`init(creating:bytes:)`) and passes its descriptor with
/// `videoShareFrames`; the worker maps it read-only (`init(mapping:bytes:)`). The file is sealed at
/// its size, so the worker cannot be made to read past its end (SIGBUS).
public final class SharedMemory: @unchecked Sendable {
    public let bytes: UnsafeMutableRawBufferPointer
    /// recd's side: the memory file, to pass to the worker; closed with `closeDescriptor()` (the
    /// mapping stays).
    public private(set) var descriptor: Int32?

    public struct Failed: Error, CustomStringConvertible {
        public var call: String
        public var code: Int32
        public var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    /// A new memory file of `bytes` (> 0), mapped for reading and writing.
    public init(creating name: String, bytes count: Int) throws {
        let fd = recd_shared_memory(name, count)
        guard fd >= 0 else { throw Failed(call: "memfd_create", code: errno) }
        guard let base = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), base != MAP_FAILED else {
            let code = errno
            close(fd)
            throw Failed(call: "mmap", code: code)
        }
        bytes = UnsafeMutableRawBufferPointer(start: base, count: count)
        descriptor = fd
    }

    /// A memory file passed by recd, `bytes` long, mapped read-only. `fd` stays the caller's.
    public init(mapping fd: Int32, bytes count: Int) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failed(call: "fstat", code: errno) }
        guard count > 0, Int(info.st_size) >= count else { throw Failed(call: "a memory file of \(info.st_size) bytes for \(count)", code: EINVAL) }
        guard let base = mmap(nil, count, PROT_READ, MAP_SHARED, fd, 0), base != MAP_FAILED else {
            throw Failed(call: "mmap", code: errno)
        }
        bytes = UnsafeMutableRawBufferPointer(start: base, count: count)
    }

    public func closeDescriptor() {
        if let fd = descriptor { close(fd) }
        descriptor = nil
    }

    deinit {
        closeDescriptor()
        munmap(bytes.baseAddress, bytes.count)
    }
}
