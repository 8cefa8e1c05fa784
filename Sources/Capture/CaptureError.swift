import CAlsa
import Foundation

/// Errors of a capture device; each names the device and the ALSA call, with `snd_strerror`'s text.
public enum CaptureError: Error, CustomStringConvertible, Sendable {
    /// The device could not be opened or configured (missing, busy, format refused).
    case unavailable(device: String, call: String, code: Int32)
    /// The device opened but cannot deliver what recd needs.
    case unsupported(device: String, detail: String)
    /// The device delivered no audio within the time allowed.
    case noData(device: String, waitedMs: Int)
    /// The device failed while capturing and could not be recovered (unplugged, server gone).
    case failed(device: String, call: String, code: Int32)

    public var description: String {
        switch self {
        case .unavailable(let d, let call, let code):
            return "capture device '\(d)' is unavailable: \(call) failed: \(alsaMessage(code)) (\(code))"
        case .unsupported(let d, let detail):
            return "capture device '\(d)' cannot be used: \(detail)"
        case .noData(let d, let ms):
            return "capture device '\(d)' delivered no audio within \(ms) ms"
        case .failed(let d, let call, let code):
            return "capture device '\(d)' failed: \(call): \(alsaMessage(code)) (\(code))"
        }
    }
}

/// `snd_strerror` text for an ALSA return code.
func alsaMessage(_ code: Int32) -> String { String(cString: snd_strerror(code)) }
