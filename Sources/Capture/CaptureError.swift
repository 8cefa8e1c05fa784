import Alsa
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
    /// A recording shared the microphone listening held open, and listening closed it (it was
    /// stopped): the recording ends there.
    case closedUnder(device: String)
    /// The camera could not be opened or set up: missing (ENOENT), busy (EBUSY: another program is
    /// streaming from it), no permission (EACCES).
    case videoUnavailable(device: String, call: String, errno: Int32)
    /// The camera opened but cannot give what recd needs (not a capture device, no usable format).
    case videoUnsupported(device: String, detail: String)
    /// The camera delivered no frame within the time allowed.
    case videoNoData(device: String, waitedMs: Int)
    /// The camera failed while capturing (unplugged: ENODEV).
    case videoFailed(device: String, call: String, errno: Int32)

    /// Whether this is about the camera (else about the microphone).
    public var isVideo: Bool {
        switch self {
        case .videoUnavailable, .videoUnsupported, .videoNoData, .videoFailed: return true
        default: return false
        }
    }

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
        case .closedUnder(let d):
            return "capture device '\(d)' was closed: the recording shared listening's microphone, and listening was stopped"
        case .videoUnavailable(let d, let call, let e):
            let why = e == EBUSY ? "it is busy (another program is using it)"
                : e == ENOENT ? "there is no such device" : "\(call) failed: \(String(cString: strerror(e)))"
            return "camera '\(d)' is unavailable: \(why) (\(call), errno \(e))"
        case .videoUnsupported(let d, let detail):
            return "camera '\(d)' cannot be used: \(detail)"
        case .videoNoData(let d, let ms):
            return "camera '\(d)' delivered no frame within \(ms) ms"
        case .videoFailed(let d, let call, let e):
            let why = e == ENODEV ? "it was disconnected" : String(cString: strerror(e))
            return "camera '\(d)' failed: \(why) (\(call), errno \(e))"
        }
    }

    /// A capture PCM that could not be opened or set up.
    init(_ e: AlsaSetupError) {
        switch e {
        case .call(let device, let call, let code): self = .unavailable(device: device, call: call, code: code)
        case .unsupported(let device, let detail): self = .unsupported(device: device, detail: detail)
        }
    }
}
