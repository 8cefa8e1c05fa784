// Where an audio capture stands on CLOCK_MONOTONIC: the common clock of ALSA and V4L2 timestamps.
import Synchronization

/// Maps CLOCK_MONOTONIC times to frame positions of an audio capture (frames delivered since it
/// started), from the anchors the capture thread sets after each read (ALSA's hardware-pointer
/// timestamp of the last frame read). A video frame stamped by its driver on the same clock gets
/// the position of the sound captured at that instant: audio and video are muxed by capture time,
/// and stay together through the slow drift between a sound card's clock and the system clock.
///
/// Written by the capture thread, read by any thread.
public final class AudioClock: Sendable {
    public let sampleRate: Int
    private struct Anchor { var position: Int64; var monotonicNs: UInt64 }
    private let anchor = Mutex<Anchor?>(nil)

    public init(sampleRate: Int) { self.sampleRate = sampleRate }

    /// Frame `position` (counted from 0, the first frame delivered) was captured at `monotonicNs`.
    public func set(position: Int64, monotonicNs: UInt64) {
        anchor.withLock { $0 = Anchor(position: position, monotonicNs: monotonicNs) }
    }

    /// The (fractional) frame position captured at `monotonicNs`; nil until the first anchor.
    /// Negative for times before the first frame.
    public func position(atNs ns: UInt64) -> Double? {
        anchor.withLock { a in
            guard let a else { return nil }
            let dt = Double(Int64(bitPattern: ns &- a.monotonicNs)) / 1e9
            return Double(a.position) + dt * Double(sampleRate)
        }
    }
}
