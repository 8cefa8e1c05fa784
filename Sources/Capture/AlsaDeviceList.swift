// ALSA capture PCMs for `recctl devices`.
import Alsa
import CAlsa
import Foundation

/// A PCM a person can record from, as alsa-lib lists it, probed where it was free.
public struct AlsaCaptureDevice: Sendable {
    public var name: String
    /// ALSA's description, its lines joined with ", ".
    public var description: String
    /// What its hardware parameters allow; nil when it could not be opened (see `error`).
    public var capabilities: (formats: [AlsaSampleFormat], rates: ClosedRange<Int>, channels: ClosedRange<Int>)?
    public var error: CaptureError?
}

public enum AlsaDeviceList {
    /// What a person can record from, among the PCMs alsa-lib's name hints offer for capture (IOID
    /// absent or "Input"): each card's `hw:`, `plughw:` and `sysdefault:` PCMs, and `default`, `pulse`
    /// and `pipewire` where they are configured. The rate-converter, upmix, speex, dsnoop and surround
    /// plugin entries the hints also list are left out: they are building blocks, not microphones.
    public static func captureDevices() -> [AlsaCaptureDevice] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard AlsaLog.quietly({ snd_device_name_hint(-1, "pcm", &hints) }) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func hint(_ h: UnsafeMutableRawPointer, _ key: String) -> String? {
            guard let p = snd_device_name_get_hint(h, key) else { return nil }
            defer { free(p) }
            return String(cString: p)
        }
        var result: [AlsaCaptureDevice] = []
        var i = 0
        while let h = hints[i] {
            i += 1
            guard let name = hint(h, "NAME"), isMicrophone(name) else { continue }
            let io = hint(h, "IOID")
            guard io == nil || io == "Input" else { continue }
            let desc = (hint(h, "DESC") ?? "").replacingOccurrences(of: "\n", with: ", ")
            var info = AlsaCaptureDevice(name: name, description: desc)
            // Probed where free: a device in use (recd's own recording included) says so instead.
            do { info.capabilities = try capabilities(of: name) } catch { info.error = error }
            result.append(info)
        }
        return result
    }

    static func isMicrophone(_ name: String) -> Bool {
        ["default", "pulse", "pipewire"].contains(name)
            || ["hw:", "plughw:", "sysdefault:"].contains { name.hasPrefix($0) }
    }

    /// Opens `device` for capture (non-blocking: a busy device fails at once) and reads what its
    /// hardware parameters allow; closes it again.
    static func capabilities(of device: String) throws(CaptureError)
        -> (formats: [AlsaSampleFormat], rates: ClosedRange<Int>, channels: ClosedRange<Int>) {
        do {
            let pcm = try AlsaPCM(device: device, direction: .capture, nonBlocking: true)
            return try pcm.capabilities(formats: AlsaSampleFormat.allCases)
        } catch {
            throw CaptureError(error)
        }
    }
}
