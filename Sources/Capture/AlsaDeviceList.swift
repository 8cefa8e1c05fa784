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
            var info = AudioDeviceInfo(device: name, description: desc)
            if name.hasPrefix("hw:") {
                do { info.capabilities = try capabilities(of: name) } catch { info.error = error.description }
            }
            result.append(info)
        }
        return result
    }

    /// Opens `device` for capture (non-blocking: a busy device fails at once) and reads what its
    /// hardware parameters allow; closes it again.
    static func capabilities(of device: String) throws(CaptureError) -> AudioDeviceInfo.Capabilities {
        var pcm: OpaquePointer?
        var rc = snd_pcm_open(&pcm, device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard rc >= 0, let pcm else { throw .unavailable(device: device, call: "snd_pcm_open", code: rc) }
        defer { snd_pcm_close(pcm) }
        var hw: OpaquePointer?
        rc = snd_pcm_hw_params_malloc(&hw)
        guard rc >= 0, let hw else { throw .unavailable(device: device, call: "snd_pcm_hw_params_malloc", code: rc) }
        defer { snd_pcm_hw_params_free(hw) }
        rc = snd_pcm_hw_params_any(pcm, hw)
        if rc < 0 { throw .unavailable(device: device, call: "snd_pcm_hw_params_any", code: rc) }
        let formats: [(String, snd_pcm_format_t)] = [("S16_LE", SND_PCM_FORMAT_S16_LE), ("S24_LE", SND_PCM_FORMAT_S24_LE),
                                                     ("S24_3LE", SND_PCM_FORMAT_S24_3LE), ("S32_LE", SND_PCM_FORMAT_S32_LE),
                                                     ("FLOAT_LE", SND_PCM_FORMAT_FLOAT_LE)]
        var minRate: UInt32 = 0, maxRate: UInt32 = 0, minChannels: UInt32 = 0, maxChannels: UInt32 = 0
        _ = snd_pcm_hw_params_get_rate_min(hw, &minRate, nil)
        _ = snd_pcm_hw_params_get_rate_max(hw, &maxRate, nil)
        _ = snd_pcm_hw_params_get_channels_min(hw, &minChannels)
        _ = snd_pcm_hw_params_get_channels_max(hw, &maxChannels)
        return AudioDeviceInfo.Capabilities(
            formats: formats.filter { snd_pcm_hw_params_test_format(pcm, hw, $0.1) == 0 }.map(\.0),
            minRate: Int(minRate), maxRate: Int(maxRate), minChannels: Int(minChannels), maxChannels: Int(maxChannels))
    }
}
