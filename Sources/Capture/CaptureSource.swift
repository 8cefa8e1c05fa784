// What a recording's sound pipeline needs of a microphone: ALSA's (AlsaCaptureSource), or memory
// (MemoryCaptureSource, for the engine's unit tests).
import Alsa

/// What a capture source delivers once opened: a sample format of ALSA's (the formats every
/// source here speaks, and the ones the pipeline converts from), a rate and a channel count.
public struct CaptureStreamFormat: Sendable, Equatable {
    public var format: AlsaSampleFormat
    public var rate: Int
    public var channels: Int
    public var bytesPerFrame: Int { format.bytesPerSample * channels }

    public init(format: AlsaSampleFormat, rate: Int, channels: Int) {
        self.format = format; self.rate = rate; self.channels = channels
    }
}

/// A source of captured sound, opened (by its initializer) and used once: `start`, then `stop`.
///
/// Threads: the source owns the thread that delivers periods (never the cooperative pool: a period
/// must not wait for a busy pool); `deliver` and `onEnd` run on it. `stats` may be read from any
/// thread. `start` and `stop` are called by the pipeline's owner, `stop` off the cooperative pool
/// (it blocks until the delivering thread has ended).
public protocol CaptureSource: AnyObject, Sendable {
    /// The device's name, for messages and errors (`hw:1,0`, `default`).
    var device: String { get }
    /// The recording's rate and channel count. When `deviceFormat` differs (another rate, channel
    /// count or sample format), the pipeline converts what is delivered into these.
    var sampleRate: Int { get }
    var channels: Int { get }
    /// What `deliver` hands over.
    var deviceFormat: CaptureStreamFormat { get }
    /// Counters so far, in frames at the recording's rate.
    var stats: CaptureCounters { get }
    /// Starts the delivering thread. `deliver` gets each captured period (interleaved, in
    /// `deviceFormat`, `frames` frames) and must not block; `onEnd` is called once, after the last
    /// period: with nil after `stop()`, or with the error that ended capture (a `CaptureError`: the
    /// device gone, or no data for too long). With a `clock`, the thread anchors it after every
    /// period, in frames at the recording's rate (for muxing with video by capture time).
    /// Called once.
    func start(clock: AudioClock?, deliver: @escaping @Sendable (UnsafeRawBufferPointer, Int) -> Void,
               onEnd: @escaping @Sendable ((any Error)?) -> Void)
    /// Ends capture, waits for the delivering thread, releases the device. Blocking; idempotent.
    func stop()
}

extension CaptureSource {
    /// Device frames (of `deviceFormat`) as frames at the recording's rate: a source's counters and
    /// the pipeline's are in these, whatever rate the device runs at.
    public func recordingFrames(_ deviceFrames: Int64) -> Int64 {
        deviceFormat.rate == sampleRate ? deviceFrames : deviceFrames * Int64(sampleRate) / Int64(deviceFormat.rate)
    }
}
