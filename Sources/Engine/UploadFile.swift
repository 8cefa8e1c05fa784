// The bytes of an import as they arrive: written to `.uploads/` and hashed (in a media worker), off the event loop.
import Foundation
import MediaWire
import MediaWorker
import Storage

/// Owns one import's folder in `.uploads/` (its upload's worker's whole sandbox: no other import's
/// bytes are in it), the file being written there (its descriptor, closed in `deinit`) and the
/// SHA-256 of what was written. The folder is removed with `remove()` (the caller's `defer`): an
/// upload is never part of the library, `Importer` makes the recording's own file from it, there.
public final class UploadFile: @unchecked Sendable {
    public let path: String
    /// `.uploads/<id>/`, where `path` and what is made from it are.
    public let folder: String
    private let fd: Int32
    private let hash: WorkerContentHash
    public private(set) var bytes: Int64 = 0

    public init(in data: DataDirectory) throws(EngineError) {
        folder = data.uploads.appendingPathComponent(UUID().uuidString).path
        path = folder + "/upload"
        guard mkdir(folder, 0o700) == 0 else { throw .storage(file: folder, operation: "create", underlying: FileOps.errnoText()) }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let text = FileOps.errnoText()
            rmdir(folder)
            throw .storage(file: path, operation: "create", underlying: text)
        }
        self.fd = fd
        hash = WorkerContentHash(folder: folder)
    }

    deinit { close(fd) }

    /// The upload's worker (its hash's), for the import's jobs; it ends with this file.
    public var worker: MediaWorkerLease? { hash.worker }

    /// Writes and hashes `chunk` on `BlockingPool`. One call at a time.
    public func append(_ chunk: Data) async throws(EngineError) {
        try await blockingCatalogCall { [self] in try self.write(chunk) }
        bytes += Int64(chunk.count)
    }

    /// Blocking. (Untyped throws: a typed-throws closure here crashed swift-frontend 6.3.1.)
    private func write(_ chunk: Data) throws {
        try chunk.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            do { try hash.update(raw) } catch { throw EngineError.media(file: path, underlying: error) }
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    let e = errno
                    if e == ENOSPC || e == EDQUOT {
                        throw EngineError.insufficientStorage(path: path, freeBytes: FileOps.freeBytes(path) ?? 0,
                                                              requiredBytes: Int64(raw.count - offset))
                    }
                    throw EngineError.storage(file: path, operation: "write", underlying: String(cString: strerror(e)))
                }
                offset += n
            }
        }
    }

    /// The SHA-256 of everything appended (hex). Call once, after the last `append`.
    public func digest() async throws(EngineError) -> String {
        try await blockingCatalogCall { [self] in
            do { return try hash.hex() } catch { throw EngineError.media(file: path, underlying: error) }
        }
    }

    /// Removes the folder and what is left in it (the importer removed what it made).
    public func remove() { try? FileManager.default.removeItem(atPath: folder) }
}
