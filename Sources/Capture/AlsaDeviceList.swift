// ALSA capture PCMs for `recctl devices`.
import CAlsa
import Foundation
import RecdAPI

public enum AlsaDeviceList {
    /// What a person can record from, among the PCMs alsa-lib's name hints offer for capture (IOID
    /// absent or "Input"): each card's `hw:`, `plughw:` and `sysdefault:` PCMs, and `default`, `pulse`
    /// and `pipewire` where they are configured. The rate-converter, upmix, speex, dsnoop and surround
    /// plugin entries the hints also list are left out: they are building blocks, not microphones.
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
            guard let name = hint(h, "NAME"), isMicrophone(name) else { continue }
            let io = hint(h, "IOID")
            guard io == nil || io == "Input" else { continue }
            let desc = (hint(h, "DESC") ?? "").replacingOccurrences(of: "\n", with: ", ")
            var info = AudioDeviceInfo(device: name, description: desc)
            // Probed where free: a device in use (recd's own recording included) says so instead.
            do { info.capabilities = try capabilities(of: name) } catch { info.error = error.description }
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
        let formats = AlsaSampleFormat.allCases.map { ($0.rawValue, $0.alsa) }
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
