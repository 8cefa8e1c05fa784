import Alsa
import CAlsa
import Foundation

/// Errors of a playback; each names the device or the file, and the call that failed.
public enum PlaybackError: Error, CustomStringConvertible, Sendable {
    /// The device could not be opened or configured (missing, busy, format refused).
    case unavailable(device: String, call: String, code: Int32)
    /// The device opened but cannot play what the file holds.
    case unsupported(device: String, detail: String)
    /// The device failed while playing and could not be recovered (unplugged, server gone).
    case failed(device: String, call: String, code: Int32)
    /// The device took no audio for the time allowed.
    case stalled(device: String, waitedMs: Int)
    /// The file could not be read or decoded.
    case media(file: String, detail: String)
    /// The file is not there.
    case fileMissing(file: String)
    /// The file has no sound to play (a silent video).
    case noSound(file: String)

    public var description: String {
        switch self {
        case .unavailable(let d, let call, let code):
            return "playback device '\(d)' is unavailable: \(call) failed: \(alsaMessage(code)) (\(code))"
        case .unsupported(let d, let detail):
            return "playback device '\(d)' cannot be used: \(detail)"
        case .failed(let d, let call, let code):
            return "playback device '\(d)' failed: \(call): \(alsaMessage(code)) (\(code))"
        case .stalled(let d, let ms):
            return "playback device '\(d)' took no audio for \(ms) ms"
        case .media(let file, let detail):
            return "cannot play \(file): \(detail)"
        case .fileMissing(let file):
            return "the file \(file) is missing"
        case .noSound(let file):
            return "\(file) is a silent video: it has no sound to play (a video player can show it: GET /v1/recordings/{id}/media)"
        }
    }

    /// A playback PCM that could not be opened or set up.
    init(_ e: AlsaSetupError) {
        switch e {
        case .call(let device, let call, let code): self = .unavailable(device: device, call: call, code: code)
        case .unsupported(let device, let detail): self = .unsupported(device: device, detail: detail)
        }
    }
}
