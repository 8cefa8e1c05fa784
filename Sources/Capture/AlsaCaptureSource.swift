// Audio capture from an ALSA PCM on a thread of its own.
import Alsa
import CAlsa
import Foundation
import Synchronization

/// How to open the capture device.
public struct AlsaCaptureSettings: Sendable, Equatable {
    /// ALSA PCM name (`default`, `hw:1,0`, `pulse:mic.monitor`, ...).
    public var device: String
    /// The recording's rate and channel count: asked of the device first; when it offers other
    /// values it is opened as it is and the samples are converted (see `AlsaCaptureSource.deviceFormat`).
    public var sampleRate: Int
    public var channels: Int
    /// Frames per read: 40 ms at 48 kHz. Halving it to 20 ms cost ~10% more CPU (wake-ups) in the
    /// recording benchmark; 40 ms still leaves 50 ms meter intervals and a quick stop.
    public var periodFrames: Int
    /// Device buffer: how long the capture thread may be descheduled before an overrun.
    public var bufferFrames: Int

    public init(device: String, sampleRate: Int = 48_000, channels: Int = 1,
                periodFrames: Int = 1920, bufferFrames: Int = 24_000) {
        self.device = device; self.sampleRate = sampleRate; self.channels = channels
        self.periodFrames = periodFrames; self.bufferFrames = bufferFrames
    }
}

/// Counters of a capture session, safe to read from any thread.
public struct CaptureCounters: Sendable, Equatable {
    public var framesCaptured: Int64 = 0
    /// Overruns (EPIPE) recovered with `snd_pcm_recover`.
    public var overruns = 0
    /// Frames lost in overruns: the time from each xrun to its recovery (ALSA's status timestamps),
    /// times the rate.
    public var overrunFrames: Int64 = 0
}

/// Owns one ALSA capture PCM handle and the thread that reads it.
///
/// `init` opens and configures the device (so a missing or busy device is reported to the caller at
/// once); `start` spawns the capture thread, which reads up to one period at a time with
/// non-blocking `snd_pcm_readi` and poll(2) (on its own thread, never on the cooperative pool),
/// recovers overruns and suspends with
/// `snd_pcm_recover`, and hands each period to `deliver`. `stop` asks the thread to end (within one
/// 200 ms poll), joins it and closes the device. A source is used once.
public final class AlsaCaptureSource: CaptureSource, @unchecked Sendable {
    public let settings: AlsaCaptureSettings
    /// What the device delivers: the recording's format where it offers it, else what it has.
    public let deviceFormat: CaptureStreamFormat
    /// The device; its handle is used by the capture thread only, and closed by `stop` (or with this
    /// source).
    private let opened: AlsaPCM
    private var pcm: OpaquePointer { opened.handle }
    private let monotonicTimestamps: Bool
    private let stopRequested = Atomic<Bool>(false)
    private let counters = Mutex(CaptureCounters())
    private let finished = DispatchSemaphore(value: 0)
    private let state = Mutex<(started: Bool, closed: Bool)>((false, false))
    /// Set after each read when a clock was given to `start`.
    private var clock: AudioClock?

    /// Consecutive recoveries without a good read before the device is declared failed.
    static let maxConsecutiveRecoveries = 8
    /// No data for this long during capture means the device is gone.
    static let stallLimitMs = 10_000

    /// Opens and configures the device: each choice asks for the recording's own value first and
    /// takes what the device has when it does not offer it (a stereo-only laptop codec, a 44.1 kHz USB
    /// microphone, an S24/S32-only interface): the pipeline converts. A device that fails here is
    /// closed again by `AlsaPCM`.
    public init(settings: AlsaCaptureSettings) throws(CaptureError) {
        self.settings = settings
        do {
            opened = try AlsaPCM(device: settings.device, direction: .capture, nonBlocking: false)
            let stream = try opened.configure(AlsaStreamRequest(
                formats: AlsaSampleFormat.allCases, channels: settings.channels, rate: settings.sampleRate,
                periodFrames: settings.periodFrames, bufferFrames: settings.bufferFrames, durationRate: settings.sampleRate,
                startThreshold: .oneFrame, timestamps: true))
            monotonicTimestamps = stream.monotonicTimestamps
            deviceFormat = CaptureStreamFormat(format: stream.format, rate: stream.rate, channels: stream.channels)
        } catch {
            throw CaptureError(error)
        }
    }
    public var device: String { settings.device }
    public var sampleRate: Int { settings.sampleRate }
    public var channels: Int { settings.channels }

    // No deinit: the capture thread holds this source until it ends, so by then nothing reads the
    // handle, and `AlsaPCM` closes it if `stop` did not.

    /// Counters so far, in frames at the recording's rate (the device's frames scaled when it runs at
    /// another rate).
    public var stats: CaptureCounters {
        var c = counters.withLock { $0 }
        c.framesCaptured = recordingFrames(c.framesCaptured)
        return c
    }

    /// Starts the capture thread. `deliver` gets each captured block (interleaved, in `deviceFormat`,
    /// `frames` frames) on the capture thread and must not block; `onEnd` is called once on that thread
    /// when capture ends: with nil after `stop()`, or with the error that ended it.
    /// With a `clock`, the thread anchors it after every read (for muxing with video by capture time),
    /// in frames at the recording's rate.
    public func start(clock: AudioClock? = nil, deliver: @escaping @Sendable (UnsafeRawBufferPointer, Int) -> Void,
                      onEnd: @escaping @Sendable ((any Error)?) -> Void) {
        self.clock = clock
        let already = state.withLock { s -> Bool in defer { s.started = true }; return s.started }
        precondition(!already, "AlsaCaptureSource.start called twice")
        let thread = Thread { [self] in
            onEnd(self.captureLoop(deliver: deliver))
            self.finished.signal()
        }
        thread.name = "recd-capture \(settings.device)"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Ends capture (the thread sees the request within one 200 ms wait), waits for the thread, closes the
    /// device. Blocks the caller: call it off the cooperative pool. Idempotent.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        // Claim the close in one step, so two callers cannot both close the handle.
        let (started, alreadyClosed) = state.withLock { s -> (Bool, Bool) in
            defer { s.closed = true }
            return (s.started, s.closed)
        }
        guard !alreadyClosed else { return }
        if started { finished.wait(); finished.signal() }
        opened.close()
    }

    /// The capture loop. The PCM is in non-blocking mode and waited on with our own poll(2), not
    /// `snd_pcm_wait`: some plugins (ALSA's pulse plugin before its stream delivers data) keep their
    /// poll descriptor readable while reporting nothing ready, and `snd_pcm_wait` then spins at 100%
    /// CPU inside alsa-lib (measured: 1.1 s of CPU before the first buffer). Here such a spurious
    /// wake-up sleeps a quarter period before polling again.
    private func captureLoop(deliver: (UnsafeRawBufferPointer, Int) -> Void) -> CaptureError? {
        let device = settings.device
        let period = settings.periodFrames * deviceFormat.rate / settings.sampleRate
        let quarterPeriodUs = UInt32(max(1000, period * 250_000 / deviceFormat.rate))
        let bytesPerFrame = deviceFormat.bytesPerFrame
        var buffer = [UInt8](repeating: 0, count: period * bytesPerFrame)
        var lastGoodRead = DispatchTime.now().uptimeNanoseconds
        var consecutiveRecoveries = 0
        var rc = snd_pcm_nonblock(pcm, 1)
        if rc < 0 { return .failed(device: device, call: "snd_pcm_nonblock", code: rc) }
        let count = Int(snd_pcm_poll_descriptors_count(pcm))
        guard count > 0 else { return .failed(device: device, call: "snd_pcm_poll_descriptors_count", code: Int32(count)) }
        var fds = [pollfd](repeating: pollfd(), count: count)
        rc = snd_pcm_poll_descriptors(pcm, &fds, UInt32(count))
        if rc < 0 { return .failed(device: device, call: "snd_pcm_poll_descriptors", code: rc) }
        rc = snd_pcm_start(pcm)
        if rc < 0 { return .failed(device: device, call: "snd_pcm_start", code: rc) }
        let stallLimitNs = UInt64(Self.stallLimitMs) * 1_000_000

        while !stopRequested.load(ordering: .relaxed) {
            let result = buffer.withUnsafeMutableBytes { raw in
                Int(snd_pcm_readi(pcm, raw.baseAddress, snd_pcm_uframes_t(period)))
            }
            if result > 0 {
                consecutiveRecoveries = 0
                lastGoodRead = DispatchTime.now().uptimeNanoseconds
                let total = counters.withLock { c -> Int64 in c.framesCaptured += Int64(result); return c.framesCaptured }
                if let clock { anchor(clock, position: total) }
                buffer.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[0..<(result * bytesPerFrame)]), result) }
                continue
            }
            if result == -Int(EAGAIN) || result == 0 {
                // Nothing there yet. A device that delivers nothing for the stall limit is gone,
                // however its poll descriptor behaves.
                if DispatchTime.now().uptimeNanoseconds &- lastGoodRead >= stallLimitNs {
                    return .noData(device: device, waitedMs: Self.stallLimitMs)
                }
                // Wait for the device (at most 200 ms, so a stop is seen quickly).
                let ready = poll(&fds, nfds_t(count), 200)
                if ready > 0 {
                    var revents: UInt16 = 0
                    rc = snd_pcm_poll_descriptors_revents(pcm, &fds, UInt32(count), &revents)
                    if rc < 0 { return .failed(device: device, call: "snd_pcm_poll_descriptors_revents", code: rc) }
                    // Readable but nothing to read (spurious), or an error the next read did not show:
                    // back off a quarter period instead of spinning.
                    if revents & UInt16(POLLIN) == 0 { usleep(quarterPeriodUs) }
                } else if ready < 0 && errno != EINTR {
                    return .failed(device: device, call: "poll", code: -errno)
                }
                continue
            }
            // An error: count overruns, then recover (EPIPE = overrun, ESTRPIPE = suspend).
            if result == -Int(EPIPE) {
                let lost = overrunLength(lastGoodRead: lastGoodRead)
                counters.withLock { $0.overruns += 1; $0.overrunFrames += lost }
            }
            consecutiveRecoveries += 1
            let recovered = result == -Int(ESTRPIPE) ? resumeAfterSuspend() : snd_pcm_recover(pcm, Int32(result), 1)
            if recovered < 0 || consecutiveRecoveries > Self.maxConsecutiveRecoveries {
                return .failed(device: device, call: "snd_pcm_readi", code: Int32(result))
            }
            _ = snd_pcm_start(pcm)
        }
        return nil
    }

    /// Anchors `clock`: frame `position` (the last one read) was captured when the hardware pointer
    /// stood `avail` frames ago. ALSA's timestamp of the pointer when the device gives a monotonic
    /// one near now; else now (plugins such as pulse stamp with another clock or not at all).
    private func anchor(_ clock: AudioClock, position: Int64) {
        var avail: snd_pcm_uframes_t = 0
        var ts = timespec()
        let now = MonotonicClock.nowNs()
        var at = now
        if monotonicTimestamps, snd_pcm_htimestamp(pcm, &avail, &ts) >= 0, ts.tv_sec > 0 {
            let t = UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
            if t <= now && now - t < 1_000_000_000 { at = t } else { avail = snd_pcm_uframes_t(max(0, snd_pcm_avail_update(pcm))) }
        } else {
            avail = snd_pcm_uframes_t(max(0, snd_pcm_avail_update(pcm)))
        }
        let behindNs = UInt64(Double(avail) * 1e9 / Double(deviceFormat.rate))
        clock.set(position: recordingFrames(position), monotonicNs: at &- behindNs)
    }

    /// After a system suspend: `snd_pcm_resume` until the driver is back (it answers EAGAIN
    /// meanwhile), checking for a stop request, then prepare if the driver cannot resume.
    /// `snd_pcm_recover` would loop on EAGAIN without end, and a stop could not get through.
    private func resumeAfterSuspend() -> Int32 {
        var rc = snd_pcm_resume(pcm)
        var waitedMs = 0
        while rc == -EAGAIN && !stopRequested.load(ordering: .relaxed) && waitedMs < Self.stallLimitMs {
            usleep(100_000)
            waitedMs += 100
            rc = snd_pcm_resume(pcm)
        }
        if rc < 0 { rc = snd_pcm_prepare(pcm) }
        return rc
    }

    /// Frames lost in the overrun the device is in now. As arecord does: the time from the xrun
    /// (the trigger timestamp of `snd_pcm_status`, on the monotonic clock set in the software
    /// parameters) to now. A device whose status has no trigger time gives the time since the last
    /// good read less what the buffer held (a lower bound: after an xrun the kernel still hands out
    /// the frames the buffer held before it reports EPIPE).
    private func overrunLength(lastGoodRead: UInt64) -> Int64 {
        var status: OpaquePointer?
        if monotonicTimestamps, snd_pcm_status_malloc(&status) >= 0, let status {
            defer { snd_pcm_status_free(status) }
            if snd_pcm_status(pcm, status) >= 0, snd_pcm_status_get_state(status) == SND_PCM_STATE_XRUN {
                var trigger = snd_timestamp_t()
                snd_pcm_status_get_trigger_tstamp(status, &trigger)
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let us = (Int64(now.tv_sec) - Int64(trigger.tv_sec)) * 1_000_000
                    + Int64(now.tv_nsec) / 1000 - Int64(trigger.tv_usec)
                // Clamp: a bogus timestamp must not overflow or report hours of loss.
                if trigger.tv_sec != 0, us > 0, us < 600_000_000 { return us * Int64(settings.sampleRate) / 1_000_000 }
            }
        }
        let elapsedNs = DispatchTime.now().uptimeNanoseconds &- lastGoodRead
        let estimate = Int64(Double(elapsedNs) / 1e9 * Double(settings.sampleRate)) - Int64(settings.bufferFrames)
        return max(0, min(estimate, Int64(settings.sampleRate) * 600))
    }
}
