// One owner for every ALSA PCM handle recd opens (capture, playback, the device probe), and the one
// hw/sw-params negotiation they share.
import CAlsa
import Logging

/// `snd_strerror`'s text for an ALSA error code.
public func alsaMessage(_ code: Int32) -> String { String(cString: snd_strerror(code)) }

/// Why a PCM could not be opened or set up. The capture and playback modules turn it into their own
/// errors (which say "capture device" or "playback device").
public enum AlsaSetupError: Error, Sendable, Equatable {
    /// An ALSA call failed: the device, the call and its code.
    case call(device: String, call: String, code: Int32)
    /// The device works but offers nothing recd can use (a format, a channel count, a rate).
    case unsupported(device: String, detail: String)
}

/// Sample formats recd exchanges with a device, in the order capture asks for them: the recording's
/// own S16 first (no conversion), then the formats 24- and 32-bit interfaces offer.
public enum AlsaSampleFormat: String, Sendable, CaseIterable {
    case s16 = "S16_LE", s32 = "S32_LE", float = "FLOAT_LE", s24Packed = "S24_3LE", s24In32 = "S24_LE"

    public var alsa: snd_pcm_format_t {
        switch self {
        case .s16: return SND_PCM_FORMAT_S16_LE
        case .s32: return SND_PCM_FORMAT_S32_LE
        case .float: return SND_PCM_FORMAT_FLOAT_LE
        case .s24Packed: return SND_PCM_FORMAT_S24_3LE
        case .s24In32: return SND_PCM_FORMAT_S24_LE
        }
    }

    public var bytesPerSample: Int {
        switch self {
        case .s16: return 2
        case .s24Packed: return 3
        case .s32, .float, .s24In32: return 4
        }
    }
}

/// What to ask of a PCM. Each choice asks for the preferred value and takes what the device has
/// when it does not offer it; the caller converts.
public struct AlsaStreamRequest: Sendable {
    /// Acceptable sample formats, preferred first.
    public var formats: [AlsaSampleFormat]
    public var channels: Int
    public var rate: Int
    /// Period and buffer as durations: frames at `durationRate` (so they keep their length in time
    /// at whatever rate the device answers with).
    public var periodFrames: Int
    public var bufferFrames: Int
    public var durationRate: Int
    /// Frames queued (playback) or arrived (capture) before the stream starts by itself.
    public var startThreshold: StartThreshold
    /// Capture: timestamps on (the xrun's trigger time, the hardware pointer's time), on
    /// CLOCK_MONOTONIC where the PCM allows.
    public var timestamps: Bool

    public enum StartThreshold: Sendable { case oneFrame, onePeriod }

    public init(formats: [AlsaSampleFormat], channels: Int, rate: Int, periodFrames: Int, bufferFrames: Int,
                durationRate: Int, startThreshold: StartThreshold, timestamps: Bool) {
        self.formats = formats; self.channels = channels; self.rate = rate; self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames; self.durationRate = durationRate; self.startThreshold = startThreshold
        self.timestamps = timestamps
    }
}

/// What the device agreed to.
public struct AlsaStream: Sendable, Equatable {
    public var format: AlsaSampleFormat
    public var rate: Int
    public var channels: Int
    public var periodFrames: Int
    public var bufferFrames: Int
    /// Whether it can hold its queue still (`snd_pcm_pause`); optional in ALSA.
    public var canPause: Bool
    /// Whether its timestamps are on CLOCK_MONOTONIC.
    public var monotonicTimestamps: Bool
    public var bytesPerFrame: Int { format.bytesPerSample * channels }
}

/// Owns one `snd_pcm_t`: opened in `init`, closed exactly once — by `close()` or in `deinit` — with
/// a failure logged (device and call), never a crash. Its owner (a capture source, a playback sink,
/// the device probe) makes the stream calls on `handle` from one thread at a time.
public final class AlsaPCM: @unchecked Sendable {
    public enum Direction: Sendable { case capture, playback }

    public let device: String
    public let handle: OpaquePointer
    private let logger: Logger
    private var closed = false

    /// `logger` defaults to one labelled `recd.alsa`, which the daemon's logging system routes like
    /// its own.
    public init(device: String, direction: Direction, nonBlocking: Bool,
                logger: Logger = Logger(label: "recd.alsa")) throws(AlsaSetupError) {
        var pcm: OpaquePointer?
        let rc = snd_pcm_open(&pcm, device, direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK,
                              nonBlocking ? SND_PCM_NONBLOCK : 0)
        guard rc >= 0, let pcm else { throw .call(device: device, call: "snd_pcm_open", code: rc) }
        self.device = device; self.handle = pcm; self.logger = logger
    }

    deinit { close() }

    /// Drops what is queued and closes the handle. Idempotent; the caller makes sure no other thread
    /// uses the handle meanwhile.
    public func close() {
        guard !closed else { return }
        closed = true
        _ = snd_pcm_drop(handle)   // fails harmlessly on a PCM that never ran
        let rc = snd_pcm_close(handle)
        if rc < 0 { logger.warning("ALSA device '\(device)': snd_pcm_close failed: \(alsaMessage(rc)) (\(rc))") }
    }

    /// Hardware parameters, software parameters, prepare: the one negotiation capture and playback
    /// share. Formats are tried in the request's order; the channel count and rate are the nearest the
    /// device offers (the request's own when it has them).
    public func configure(_ r: AlsaStreamRequest) throws(AlsaSetupError) -> AlsaStream {
        let d = device, pcm = handle
        func check(_ rc: Int32, _ call: String) throws(AlsaSetupError) {
            if rc < 0 { throw .call(device: d, call: call, code: rc) }
        }
        let hw = try AlsaParameters.hardware(device: d)
        try check(snd_pcm_hw_params_any(pcm, hw.pointer), "snd_pcm_hw_params_any")
        try check(snd_pcm_hw_params_set_access(pcm, hw.pointer, SND_PCM_ACCESS_RW_INTERLEAVED), "snd_pcm_hw_params_set_access")
        guard let format = r.formats.first(where: { snd_pcm_hw_params_set_format(pcm, hw.pointer, $0.alsa) >= 0 }) else {
            throw .unsupported(device: d, detail: "it offers none of the sample formats recd uses ("
                               + r.formats.map(\.rawValue).joined(separator: ", ") + ")")
        }
        var channels = UInt32(r.channels)
        let rc = snd_pcm_hw_params_set_channels_near(pcm, hw.pointer, &channels)
        if rc < 0 { throw .unsupported(device: d, detail: "it offers no usable channel count (\(alsaMessage(rc)))") }
        var rate = UInt32(r.rate)
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw.pointer, &rate, nil), "snd_pcm_hw_params_set_rate_near")
        guard rate >= 8000 else { throw .unsupported(device: d, detail: "it offers only \(rate) Hz") }
        var period = snd_pcm_uframes_t(r.periodFrames * Int(rate) / r.durationRate)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw.pointer, &period, nil), "snd_pcm_hw_params_set_period_size_near")
        var buffer = snd_pcm_uframes_t(r.bufferFrames * Int(rate) / r.durationRate)
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw.pointer, &buffer), "snd_pcm_hw_params_set_buffer_size_near")
        try check(snd_pcm_hw_params(pcm, hw.pointer), "snd_pcm_hw_params")
        let canPause = snd_pcm_hw_params_can_pause(hw.pointer) != 0

        // Software parameters as arecord/aplay set them: wake up once a whole period is there (or
        // there is room for one).
        let sw = try AlsaParameters.software(device: d)
        try check(snd_pcm_sw_params_current(pcm, sw.pointer), "snd_pcm_sw_params_current")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw.pointer, period), "snd_pcm_sw_params_set_avail_min")
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw.pointer, r.startThreshold == .oneFrame ? 1 : period),
                  "snd_pcm_sw_params_set_start_threshold")
        var monotonic = false
        if r.timestamps {
            // Plugins may refuse either; the capture clock then falls back to its own reading.
            _ = snd_pcm_sw_params_set_tstamp_mode(pcm, sw.pointer, SND_PCM_TSTAMP_ENABLE)
            monotonic = snd_pcm_sw_params_set_tstamp_type(pcm, sw.pointer, SND_PCM_TSTAMP_TYPE_MONOTONIC) >= 0
        }
        try check(snd_pcm_sw_params(pcm, sw.pointer), "snd_pcm_sw_params")
        try check(snd_pcm_prepare(pcm), "snd_pcm_prepare")
        return AlsaStream(format: format, rate: Int(rate), channels: Int(channels), periodFrames: Int(period),
                          bufferFrames: Int(buffer), canPause: canPause, monotonicTimestamps: monotonic)
    }

    /// What the device's hardware parameters allow, without setting any (the device list's probe).
    public func capabilities(formats: [AlsaSampleFormat]) throws(AlsaSetupError)
        -> (formats: [AlsaSampleFormat], rates: ClosedRange<Int>, channels: ClosedRange<Int>) {
        let hw = try AlsaParameters.hardware(device: device)
        let rc = snd_pcm_hw_params_any(handle, hw.pointer)
        if rc < 0 { throw .call(device: device, call: "snd_pcm_hw_params_any", code: rc) }
        var minRate: UInt32 = 0, maxRate: UInt32 = 0, minChannels: UInt32 = 0, maxChannels: UInt32 = 0
        _ = snd_pcm_hw_params_get_rate_min(hw.pointer, &minRate, nil)
        _ = snd_pcm_hw_params_get_rate_max(hw.pointer, &maxRate, nil)
        _ = snd_pcm_hw_params_get_channels_min(hw.pointer, &minChannels)
        _ = snd_pcm_hw_params_get_channels_max(hw.pointer, &maxChannels)
        return (formats.filter { snd_pcm_hw_params_test_format(handle, hw.pointer, $0.alsa) == 0 },
                Int(minRate)...Int(max(minRate, maxRate)), Int(minChannels)...Int(max(minChannels, maxChannels)))
    }
}

/// A `snd_pcm_hw_params_t` or `snd_pcm_sw_params_t`, freed with its owner.
private final class AlsaParameters {
    let pointer: OpaquePointer
    private let release: (OpaquePointer) -> Void

    private init(device: String, call: String, allocate: (UnsafeMutablePointer<OpaquePointer?>) -> Int32,
                 release: @escaping (OpaquePointer) -> Void) throws(AlsaSetupError) {
        var p: OpaquePointer?
        let rc = allocate(&p)
        guard rc >= 0, let p else { throw .call(device: device, call: call, code: rc) }
        pointer = p
        self.release = release
    }

    deinit { release(pointer) }

    static func hardware(device: String) throws(AlsaSetupError) -> AlsaParameters {
        try AlsaParameters(device: device, call: "snd_pcm_hw_params_malloc", allocate: { snd_pcm_hw_params_malloc($0) },
                           release: { snd_pcm_hw_params_free($0) })
    }

    static func software(device: String) throws(AlsaSetupError) -> AlsaParameters {
        try AlsaParameters(device: device, call: "snd_pcm_sw_params_malloc", allocate: { snd_pcm_sw_params_malloc($0) },
                           release: { snd_pcm_sw_params_free($0) })
    }
}
