// ALSA capture PCMs for `recctl devices`.
import CAlsa
import Foundation
import RecdAPI

public enum AlsaDeviceList {
    /// The PCMs alsa-lib's name hints offer for capture (IOID absent or "Input"): `default`, plugin
    /// PCMs such as `pulse`, and one `hw:`/`plughw:`/`dsnoop:` entry per card and device.
    public static func captureDevices() -> [AudioDeviceInfo] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard AlsaLog.quietly({ snd_device_name_hint(-1, "pcm", &hints) }) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func hint(_ h: UnsafeMutableRawPointer, _ key: String) -> String? {
            guard let p = snd_device_name_get_hint(h, key) else { return nil }
            defer { free(p) }
            return String(cString: p)
        }
        var result: [AudioDeviceInfo] = []
        var i = 0
        while let h = hints[i] {
            i += 1
            guard let name = hint(h, "NAME"), name != "null" else { continue }
            let io = hint(h, "IOID")
            guard io == nil || io == "Input" else { continue }
            let desc = (hint(h, "DESC") ?? "").replacingOccurrences(of: "\n", with: ", ")
            result.append(AudioDeviceInfo(device: name, description: desc))
        }
        return result
    }
}
