// Errors from libav*: every case names the C call and the file it was working on.
import CFFmpeg
import CFFmpegShim
import Foundation

/// Codable: a media worker process (MediaWorker) sends it to recd as it was thrown.
public struct FFmpegError: Error, CustomStringConvertible, Sendable, Codable {
    /// The libav* function that failed, e.g. `avformat_write_header`.
    public var call: String
    /// Its return code (a negative AVERROR).
    public var code: Int32
    /// The file being read or written, when there is one.
    public var file: String?

    /// `av_strerror` text for `code`, taken when the error is made (where FFmpeg is loaded).
    public var message: String

    public init(call: String, code: Int32, file: String? = nil) {
        self.call = call; self.code = code; self.file = file
        message = FFmpegError.describe(code)
    }

    /// True when the file does not exist (ENOENT).
    public var isFileMissing: Bool { code == recd_averror_from_errno(ENOENT) }

    /// True when the underlying failure is ENOSPC ("No space left on device").
    public var isDiskFull: Bool { code == recd_averror_from_errno(ENOSPC) }

    public var description: String {
        "\(call) failed\(file.map { " on \($0)" } ?? ""): \(message) (\(code))"
    }

    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Throws unless `rc` is >= 0.
    @discardableResult
    static func check(_ rc: Int32, _ call: String, file: String? = nil) throws(FFmpegError) -> Int32 {
        if rc < 0 { throw FFmpegError(call: call, code: rc, file: file) }
        return rc
    }
}

/// Errors that are not a libav* return code.
public enum MediaError: Error, CustomStringConvertible, Sendable, Codable {
    case encoderNotFound(String)
    case decoderNotFound(String)
    case allocationFailed(String)
    /// Input recd cannot convert (a camera pixel format, a short frame).
    case unsupportedFormat(String)
    /// The file has no stream of the kind asked for (a poster from an audio file).
    case noStream(kind: String, file: String)
    /// FFmpeg's shared libraries could not be loaded (loaded on first use): what failed, dlerror's text.
    case librariesUnavailable(String)

    public var description: String {
        switch self {
        case .encoderNotFound(let n): return "FFmpeg has no \(n) encoder (libavcodec built without it?)"
        case .decoderNotFound(let n): return "FFmpeg has no \(n) decoder (libavcodec built without it?)"
        case .allocationFailed(let call): return "\(call) returned NULL (out of memory)"
        case .unsupportedFormat(let what): return what
        case .noStream(let kind, let file): return "\(file) has no \(kind) stream"
        case .librariesUnavailable(let why): return "FFmpeg's libraries could not be loaded: \(why)"
        }
    }
}
