// Audio output to an ALSA PCM: non-blocking writes driven by poll(2) on the playback thread.
import CAlsa
import Foundation

/// What to ask of the playback device; the device may answer with another rate or channel count
/// (`AlsaPlaybackSink.rate`/`channels`), and the decoder converts to what it answered.
public struct AlsaPlaybackSettings: Sendable, Equatable {
    /// ALSA PCM name (`default`, `hw:0,0`, `pulse:speaker`, ...).
    public var device: String
    public var sampleRate: Int
    public var channels: Int
    /// 40 ms periods and a 400 ms buffer: pause and seek drop the buffer at once, so a long buffer
    /// costs nothing in responsiveness and rides out scheduling hiccups without underruns.
    public var periodMs: Int = 40
    public var bufferMs: Int = 400

    public init(device: String, sampleRate: Int, channels: Int) {
        self.device = device; self.sampleRate = sampleRate; self.channels = channels
    }
}

/// Owns one ALSA playback PCM handle (opened non-blocking; closed in deinit). Used from one thread.
final class AlsaPlaybackSink {
    let device: String
    private let pcm: OpaquePointer
    /// What the device accepted: interleaved S16 at this rate and channel count.
    let rate: Int
    let channels: Int
    let periodFrames: Int
    let bufferFrames: Int
    /// Whether the device can hold its queue still (`snd_pcm_pause`); optional in ALSA.
    let canPause: Bool
    private var fds: [pollfd]

    init(_ s: AlsaPlaybackSettings) throws(PlaybackError) {
        device = s.device
        var handle: OpaquePointer?
        let rc = snd_pcm_open(&handle, s.device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard rc >= 0, let handle else { throw .unavailable(device: s.device, call: "snd_pcm_open", code: rc) }
        do throws(PlaybackError) {
            (rate, channels, periodFrames, bufferFrames, canPause) = try Self.configure(handle, s)
            let count = Int(snd_pcm_poll_descriptors_count(handle))
            guard count > 0 else { throw .unavailable(device: s.device, call: "snd_pcm_poll_descriptors_count", code: Int32(count)) }
            fds = [pollfd](repeating: pollfd(), count: count)
            let got = snd_pcm_poll_descriptors(handle, &fds, UInt32(count))
            if got < 0 { throw .unavailable(device: s.device, call: "snd_pcm_poll_descriptors", code: got) }
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        pcm = handle
    }

    deinit {
        snd_pcm_drop(pcm)
        snd_pcm_close(pcm)
    }

    private static func configure(_ pcm: OpaquePointer, _ s: AlsaPlaybackSettings) throws(PlaybackError)
        -> (rate: Int, channels: Int, period: Int, buffer: Int, canPause: Bool) {
        var hw: OpaquePointer?
        var rc = snd_pcm_hw_params_malloc(&hw)
        guard rc >= 0, let hw else { throw .unavailable(device: s.device, call: "snd_pcm_hw_params_malloc", code: rc) }
        defer { snd_pcm_hw_params_free(hw) }
        func check(_ rc: Int32, _ call: String) throws(PlaybackError) {
            if rc < 0 { throw .unavailable(device: s.device, call: call, code: rc) }
        }
        try check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "snd_pcm_hw_params_set_access")
        rc = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE)
        if rc < 0 { throw .unsupported(device: s.device, detail: "it does not take S16_LE samples (\(alsaMessage(rc)))") }
        var channels = UInt32(s.channels)
        try check(snd_pcm_hw_params_set_channels_near(pcm, hw, &channels), "snd_pcm_hw_params_set_channels_near")
        var rate = UInt32(s.sampleRate)
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil), "snd_pcm_hw_params_set_rate_near")
        var period = snd_pcm_uframes_t(Int(rate) * s.periodMs / 1000)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, nil), "snd_pcm_hw_params_set_period_size_near")
        var buffer = snd_pcm_uframes_t(Int(rate) * s.bufferMs / 1000)
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "snd_pcm_hw_params_set_buffer_size_near")
        try check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")
        let canPause = snd_pcm_hw_params_can_pause(hw) != 0

        var sw: OpaquePointer?
        rc = snd_pcm_sw_params_malloc(&sw)
        guard rc >= 0, let sw else { throw .unavailable(device: s.device, call: "snd_pcm_sw_params_malloc", code: rc) }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "snd_pcm_sw_params_set_avail_min")
        // Start as soon as one period is queued: the first sound does not wait for a full buffer.
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, period), "snd_pcm_sw_params_set_start_threshold")
        try check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
        try check(snd_pcm_prepare(pcm), "snd_pcm_prepare")
        return (Int(rate), Int(channels), Int(period), Int(buffer), canPause)
    }

    enum WriteResult {
        /// Frames the device took (maybe fewer than offered).
        case wrote(Int)
        /// The buffer is full: wait with `wait`.
        case full
        /// An underrun happened and was recovered; write again.
        case underrun
    }

    /// Offers `frames` frames of interleaved S16 without blocking.
    func write(_ samples: UnsafeBufferPointer<Int16>, frames: Int) throws(PlaybackError) -> WriteResult {
        let n = Int(snd_pcm_writei(pcm, samples.baseAddress, snd_pcm_uframes_t(frames)))
        if n > 0 { return .wrote(n) }
        if n == 0 || n == -Int(EAGAIN) { return .full }
        // EPIPE: underrun (we were late); ESTRPIPE: suspended. Both recoverable with snd_pcm_recover.
        let rc = snd_pcm_recover(pcm, Int32(n), 1)
        if rc < 0 { throw .failed(device: device, call: "snd_pcm_writei", code: Int32(n)) }
        return n == -Int(EPIPE) ? .underrun : .full
    }

    /// Waits until the device takes more audio, `wake` becomes readable, or `timeoutMs` passes.
    /// Returns true when `wake` is readable. A device whose descriptor is ready while it has no
    /// room (the pulse plugin does this) makes us sleep a quarter period instead of spinning.
    func wait(wake: Int32, timeoutMs: Int32) throws(PlaybackError) -> Bool {
        var all = fds + [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&all, nfds_t(all.count), timeoutMs)
        if ready < 0 {
            if errno == EINTR { return false }
            throw .failed(device: device, call: "poll", code: -errno)
        }
        if all[all.count - 1].revents != 0 { return true }
        if ready > 0 {
            var pcmFds = Array(all.dropLast())
            var revents: UInt16 = 0
            let rc = snd_pcm_poll_descriptors_revents(pcm, &pcmFds, UInt32(pcmFds.count), &revents)
            if rc < 0 { throw .failed(device: device, call: "snd_pcm_poll_descriptors_revents", code: rc) }
            if revents & UInt16(POLLOUT) == 0 { usleep(UInt32(max(1000, periodFrames * 250_000 / rate))) }
        }
        return false
    }

    /// Frames written but not yet heard (0 when the device cannot say, e.g. after an underrun).
    var delayFrames: Int {
        var d: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &d) >= 0 ? max(0, Int(d)) : 0
    }

    /// Whether the device is still playing queued audio.
    var isRunning: Bool { snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING }

    /// Starts a stream that holds less than the start threshold (the end of a short file).
    func startIfPrepared() {
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { _ = snd_pcm_start(pcm) }
    }

    /// Holds (true) or releases (false) the queue where it is. Returns false when the device could
    /// not, and the caller falls back to dropping the queue.
    func hold(_ on: Bool) -> Bool {
        canPause && snd_pcm_pause(pcm, on ? 1 : 0) >= 0
    }

    /// Throws away what is queued and gets ready for new audio (pause, seek, stop).
    func discardQueued() throws(PlaybackError) {
        snd_pcm_drop(pcm)
        let rc = snd_pcm_prepare(pcm)
        if rc < 0 { throw .failed(device: device, call: "snd_pcm_prepare", code: rc) }
    }
}
