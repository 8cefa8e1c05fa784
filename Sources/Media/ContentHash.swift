// SHA-256 of a file's bytes, with libavutil (recd has it already: no crypto package for one digest).
import MediaWire
import CFFmpeg
import Foundation

/// Owns one AVSHA context: fed block by block, read once.
public final class ContentHash {
    private let context: OpaquePointer

    public init() throws {
        guard let c = av_sha_alloc() else { throw MediaError.allocationFailed("av_sha_alloc") }
        context = c
        guard av_sha_init(c, 256) == 0 else {
            av_free(UnsafeMutableRawPointer(c))
            throw MediaError.allocationFailed("av_sha_init(256)")
        }
    }

    deinit { av_free(UnsafeMutableRawPointer(context)) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        av_sha_update(context, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    /// The digest as 64 lower-case hex digits. Call once.
    public func hex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        av_sha_final(context, &digest)
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
