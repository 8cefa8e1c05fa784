// Errors of media work, as recd-media throws them and recd receives them (typed: recd tells a
// full disk or a missing file by them).
import Foundation

/// Codable: a media worker (recd-media) sends it to recd as it was thrown.
public struct FFmpegError: Error, CustomStringConvertible, Sendable, Codable {
    /// The libav* function that failed, e.g. `avformat_write_header`.
    public var call: String
    /// Its return code (a negative AVERROR).
    public var code: Int32
    /// The file being read or written, when there is one.
    public var file: String?

    /// `av_strerror` text for `code`, taken when the error is made (where FFmpeg is loaded).
    public var message: String

    /// `message`: av_strerror's text for `code` (recd-media's `FFmpegError(call:code:file:)` takes it).
    public init(call: String, code: Int32, file: String? = nil, message: String) {
        self.call = call; self.code = code; self.file = file; self.message = message
    }

    /// True when the file does not exist (ENOENT; AVERROR(e) is -e on Linux).
    public var isFileMissing: Bool { code == -ENOENT }

    /// True when the underlying failure is ENOSPC ("No space left on device").
    public var isDiskFull: Bool { code == -ENOSPC }

    public var description: String {
        "\(call) failed\(file.map { " on \($0)" } ?? ""): \(message) (\(code))"
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
    /// A file in a format recd does not open (`FFmpegInput.formats`): a playlist, a manifest or a
    /// list of other files (HLS, DASH, concat, image sequences), or any other demuxer recd does not
    /// use. `format`: FFmpeg's name and description of what the bytes look like.
    case formatRefused(format: String, file: String)

    public var description: String {
        switch self {
        case .encoderNotFound(let n): return "FFmpeg has no \(n) encoder (libavcodec built without it?)"
        case .decoderNotFound(let n): return "FFmpeg has no \(n) decoder (libavcodec built without it?)"
        case .allocationFailed(let call): return "\(call) returned NULL (out of memory)"
        case .unsupportedFormat(let what): return what
        case .noStream(let kind, let file): return "\(file) has no \(kind) stream"
        case .formatRefused(let format, let file):
            return "\(file) is \(format), which recd does not open: it reads only files that hold their own sound and picture (no playlists or lists of other files)"
        }
    }
}
