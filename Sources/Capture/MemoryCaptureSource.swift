// A capture source that plays given samples instead of a device: for unit tests of what sits
// behind a source (the sound pipeline, the Recorder), in milliseconds and without ALSA.
import Foundation
import Synchronization

/// Delivers `samples` (S16, interleaved, at the recording's rate) in periods on a thread of its
/// own, as a device would: as fast as the pipeline takes them (`paced: false`), or one period per
/// period's duration (`paced: true`). When they run out it delivers nothing more, as a silent
/// device does not, until `stop()` (so a test decides when a take ends). It can lose its "device":
/// at a frame given up front (`failAtFrame`), or when told (`fail()`); capture then ends with that
/// error, as the ALSA source's does when a microphone is unplugged.
public final class MemoryCaptureSource: CaptureSource, @unchecked Sendable {
    public let device: String
    public let sampleRate: Int
    public let channels: Int
    public var deviceFormat: CaptureStreamFormat { CaptureStreamFormat(format: .s16, rate: sampleRate, channels: channels) }
    public let periodFrames: Int
    private let samples: [Int16]
    private let paced: Bool
    private let failAtFrame: Int64?
    private let failure: CaptureError

    private struct Control {
        var started = false
        var stopRequested = false
        var failRequested = false
        var framesCaptured: Int64 = 0
    }
    private let control = Mutex(Control())
    /// Wakes the delivering thread early (a stop or a failure asked for while it waits).
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `samples`: interleaved frames of `channels` channels. `failAtFrame`: capture ends with
    /// `failure` once this many frames were delivered (nil: only when `fail()` is called).
    public init(device: String = "memory", sampleRate: Int = 48_000, channels: Int = 1, samples: [Int16],
                periodFrames: Int = 1920, paced: Bool = false, failAtFrame: Int64? = nil,
                failure: CaptureError? = nil) {
        precondition(channels > 0 && samples.count % channels == 0, "samples must hold whole frames")
        self.device = device; self.sampleRate = sampleRate; self.channels = channels
        self.samples = samples; self.periodFrames = max(1, periodFrames); self.paced = paced
        self.failAtFrame = failAtFrame
        // What ALSA reports when a USB microphone is pulled out: ENODEV from snd_pcm_readi.
        self.failure = failure ?? .failed(device: device, call: "snd_pcm_readi", code: -ENODEV)
    }

    /// A sine tone, `seconds` long at full scale times `amplitude`, the same in every channel.
    public static func tone(hz: Double = 440, seconds: Double, sampleRate: Int = 48_000, channels: Int = 1,
                            amplitude: Double = 0.5) -> [Int16] {
        let frames = Int(seconds * Double(sampleRate))
        var out = [Int16](repeating: 0, count: frames * channels)
        for i in 0..<frames {
            let v = Int16(amplitude * 32767 * sin(2 * Double.pi * hz * Double(i) / Double(sampleRate)))
            for c in 0..<channels { out[i * channels + c] = v }
        }
        return out
    }

    public var stats: CaptureCounters {
        CaptureCounters(framesCaptured: control.withLock { $0.framesCaptured })
    }

    /// The device is lost now: capture ends with the failure at the next period.
    public func fail() {
        control.withLock { $0.failRequested = true }
        wake.signal()
    }

    public func start(clock: AudioClock? = nil, deliver: @escaping @Sendable (UnsafeRawBufferPointer, Int) -> Void,
                      onEnd: @escaping @Sendable ((any Error)?) -> Void) {
        let already = control.withLock { c -> Bool in defer { c.started = true }; return c.started }
        precondition(!already, "MemoryCaptureSource.start called twice")
        let thread = Thread { [self] in
            onEnd(self.deliverLoop(clock: clock, deliver: deliver))
            self.finished.signal()
        }
        thread.name = "recd-capture \(device)"
        thread.start()
    }

    public func stop() {
        let started = control.withLock { c -> Bool in c.stopRequested = true; return c.started }
        wake.signal()
        if started { finished.wait(); finished.signal() }
    }

    private func deliverLoop(clock: AudioClock?, deliver: (UnsafeRawBufferPointer, Int) -> Void) -> CaptureError? {
        let totalFrames = samples.count / channels
        let periodNs = UInt64(periodFrames) * 1_000_000_000 / UInt64(sampleRate)
        let startNs = DispatchTime.now().uptimeNanoseconds
        var position = 0
        var periods: UInt64 = 0
        while true {
            let (stop, fail) = control.withLock { ($0.stopRequested, $0.failRequested) }
            if stop { return nil }
            if fail || failAtFrame.map({ Int64(position) >= $0 }) == true { return failure }
            guard position < totalFrames else {
                wake.wait()   // all delivered: nothing more until a stop or a failure
                continue
            }
            var frames = min(periodFrames, totalFrames - position)
            if let failAtFrame { frames = min(frames, max(0, Int(failAtFrame) - position)) }
            samples.withUnsafeBytes { raw in
                let bytes = MemoryLayout<Int16>.size * channels
                deliver(UnsafeRawBufferPointer(rebasing: raw[(position * bytes)..<((position + frames) * bytes)]), frames)
            }
            position += frames
            control.withLock { $0.framesCaptured = Int64(position) }
            clock?.set(position: Int64(position), monotonicNs: MonotonicClock.nowNs())
            periods += 1
            if paced {
                let due = startNs + periods * periodNs
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { _ = wake.wait(timeout: .now() + .nanoseconds(Int(due - now))) }
            }
        }
    }
}
