// Audio output to an ALSA PCM: non-blocking writes driven by poll(2) on the playback thread.
import Alsa
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
}

/// The playback device (an `AlsaPCM`, opened non-blocking) and the stream calls of the playback thread.
/// Used from one thread.
final class AlsaPlaybackSink {
    let device: String
    private let owner: AlsaPCM
    private var pcm: OpaquePointer { owner.handle }
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
        do {
            owner = try AlsaPCM(device: s.device, direction: .playback, nonBlocking: true)
            // Start as soon as one period is queued: the first sound does not wait for a full buffer.
            let stream = try owner.configure(AlsaStreamRequest(
                formats: [.s16], channels: s.channels, rate: s.sampleRate, periodFrames: s.periodMs, bufferFrames: s.bufferMs,
                durationRate: 1000, startThreshold: .onePeriod, timestamps: false))
            (rate, channels, periodFrames, bufferFrames, canPause) =
                (stream.rate, stream.channels, stream.periodFrames, stream.bufferFrames, stream.canPause)
        } catch {
            throw PlaybackError(error)
        }
        let count = Int(snd_pcm_poll_descriptors_count(owner.handle))
        guard count > 0 else { throw .unavailable(device: s.device, call: "snd_pcm_poll_descriptors_count", code: Int32(count)) }
        fds = [pollfd](repeating: pollfd(), count: count)
        let got = snd_pcm_poll_descriptors(owner.handle, &fds, UInt32(count))
        if got < 0 { throw .unavailable(device: s.device, call: "snd_pcm_poll_descriptors", code: got) }
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
