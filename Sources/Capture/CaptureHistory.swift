// The last seconds a microphone delivered, by absolute frame position, and capture sources that read
// from it: how listening (issue 49) keeps the words before speech was detected (the pre-roll), and
// hands one capture, never reopened, from one utterance's recording to the next without a frame lost.
import Foundation
import Synchronization

/// A ring of the device's bytes as captured (a frame's bytes as they came), addressed by frame
/// position since capture began. One writer (the capture thread: `write` never blocks), any number of
/// readers, each with its own position (`read` blocks until frames past it are there). What is
/// older than the ring's capacity is overwritten; a reader that fell that far behind is moved to
/// the oldest frame held, and told how many it lost.
public final class CaptureHistory: @unchecked Sendable {
    public let format: CaptureStreamFormat
    public let capacityFrames: Int
    private var storage: [UInt8]
    /// Frames written since the start: the position of the next frame.
    private var end: Int64 = 0
    /// Set once capture ended: nil error after a stop, the device's error otherwise.
    private var ended = false
    private var endError: (any Error)?
    /// Readers get frames up to here only (`release`): listening's taps deliver what its detector has
    /// judged, so that an utterance's recording ends (and the next begins) exactly where it decided.
    /// Everything once capture ended.
    private var released: Int64
    private let condition = NSCondition()

    /// `gated`: readers wait for `release` (see `released`); otherwise they get each frame as it comes.
    public init(format: CaptureStreamFormat, seconds: Double, gated: Bool = false) {
        self.format = format
        released = gated ? 0 : .max
        capacityFrames = max(1, Int(seconds * Double(format.rate)))
        storage = [UInt8](repeating: 0, count: capacityFrames * format.bytesPerFrame)
    }

    /// The position of the next frame to be captured.
    public var position: Int64 { condition.lock(); defer { condition.unlock() }; return end }
    /// The oldest position still held.
    public var oldest: Int64 { condition.lock(); defer { condition.unlock() }; return max(0, end - Int64(capacityFrames)) }

    /// Capture thread: appends `frames` frames (`format`'s bytes).
    public func write(_ raw: UnsafeRawBufferPointer, frames: Int) {
        guard frames > 0 else { return }
        let bpf = format.bytesPerFrame
        condition.lock()
        var done = 0
        // Only the last `capacityFrames` of a write longer than the ring can be kept.
        if frames > capacityFrames { done = frames - capacityFrames; end += Int64(done) }
        storage.withUnsafeMutableBytes { dst in
            while done < frames {
                let at = Int(end % Int64(capacityFrames))
                let n = min(frames - done, capacityFrames - at)
                dst.baseAddress!.advanced(by: at * bpf).copyMemory(from: raw.baseAddress!.advanced(by: done * bpf), byteCount: n * bpf)
                done += n
                end += Int64(n)
            }
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Lets readers have the frames before `position`.
    public func release(upTo position: Int64) {
        condition.lock()
        if position > released { released = position; condition.broadcast() }
        condition.unlock()
    }

    /// Capture ended (nil: stopped; otherwise the device's error). Readers get what is held, then the end.
    public func close(error: (any Error)?) {
        condition.lock()
        if !ended { ended = true; endError = error }
        condition.broadcast()
        condition.unlock()
    }

    /// The outcome of a `read`.
    public enum ReadResult {
        /// `frames` frames copied from `from` (which is past the position asked for when frames were
        /// overwritten before they were read: `lost` of them).
        case frames(Int, from: Int64, lost: Int64)
        /// Nothing past the position yet after the wait.
        case timedOut
        /// Capture ended and everything up to its end was read (nil: stopped; or the device's error).
        case ended((any Error)?)
    }

    /// Copies frames from `position` on (at most `limit`, and never past `upTo` nor, unless
    /// `unreleased`, past what was released), waiting up to `timeoutMs` for the first one.
    /// `unreleased`: the detector's own reads, which decide what is released.
    public func read(from position: Int64, into buffer: UnsafeMutableRawBufferPointer, limit: Int, upTo: Int64 = .max,
                     unreleased: Bool = false, timeoutMs: Int) -> ReadResult {
        let bpf = format.bytesPerFrame
        let capacity = min(limit, buffer.count / bpf)
        precondition(capacity > 0, "a buffer of at least one frame")
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        condition.lock()
        defer { condition.unlock() }
        var available: Int64 { ended || unreleased ? end : min(end, released) }
        while available <= position && !ended {
            if !condition.wait(until: deadline) { break }
        }
        guard available > position else {
            if ended { return .ended(endError) }
            return .timedOut
        }
        let oldest = max(0, end - Int64(capacityFrames))
        let start = max(position, oldest)
        let frames = Int(min(Int64(capacity), available - start, max(0, upTo - start)))
        storage.withUnsafeBytes { src in
            var done = 0
            while done < frames {
                let at = Int((start + Int64(done)) % Int64(capacityFrames))
                let n = min(frames - done, capacityFrames - at)
                buffer.baseAddress!.advanced(by: done * bpf).copyMemory(from: src.baseAddress!.advanced(by: at * bpf), byteCount: n * bpf)
                done += n
            }
        }
        return .frames(frames, from: start, lost: start - position)
    }
}

/// A capture source that delivers a `CaptureHistory` from a position on: the frames already held
/// at once (a pre-roll), then each as the device delivers it, until `end(at:)`'s position or
/// `stop()`. The history's capture goes on after it: the next tap starts where this one ended.
public final class CaptureHistoryTap: CaptureSource, @unchecked Sendable {
    public let device: String
    public let sampleRate: Int
    public let channels: Int
    public var deviceFormat: CaptureStreamFormat { history.format }
    private let history: CaptureHistory
    private let startPosition: Int64

    private struct Control {
        var started = false
        /// Deliver up to here, then end.
        var endAt: Int64?
        var delivered: Int64 = 0
        var lost: Int64 = 0
        var position: Int64
    }
    private let control: Mutex<Control>
    private let finished = DispatchSemaphore(value: 0)
    /// Frames per delivery: 50 ms (the meters' finest interval is 10 ms, the pipeline's blocks 341 ms).
    private let chunkFrames: Int

    /// `from`: the first frame delivered (clamped to the oldest the history still holds).
    /// `sampleRate`, `channels`: the recording's (see `CaptureSource`).
    public init(history: CaptureHistory, from position: Int64, device: String, sampleRate: Int, channels: Int) {
        self.history = history; self.device = device; self.sampleRate = sampleRate; self.channels = channels
        self.startPosition = position
        chunkFrames = max(1, history.format.rate / 20)
        control = Mutex(Control(position: position))
    }

    /// Where this tap began (its first frame's history position).
    public var firstPosition: Int64 { startPosition }
    /// The position after the last frame delivered.
    public var position: Int64 { control.withLock { $0.position } }

    public var stats: CaptureCounters {
        control.withLock { c in
            CaptureCounters(framesCaptured: recordingFrames(c.delivered), overruns: 0, overrunFrames: recordingFrames(c.lost))
        }
    }

    /// Delivers up to `position` (exclusive), then ends capture (`onEnd(nil)`); does not wait.
    public func end(at position: Int64) {
        control.withLock { $0.endAt = min($0.endAt ?? .max, position) }
    }

    public func start(clock: AudioClock?, deliver: @escaping @Sendable (UnsafeRawBufferPointer, Int) -> Void,
                      onEnd: @escaping @Sendable ((any Error)?) -> Void) {
        let already = control.withLock { c -> Bool in defer { c.started = true }; return c.started }
        precondition(!already, "CaptureHistoryTap.start called twice")
        let thread = Thread { [self] in
            onEnd(self.deliverLoop(deliver))
            self.finished.signal()
        }
        thread.name = "recd-listen-tap"
        thread.start()
    }

    /// Ends at what the history holds now (unless `end(at:)` set an earlier end), waits for the thread.
    public func stop() {
        let now = history.position
        let started = control.withLock { c -> Bool in c.endAt = min(c.endAt ?? .max, now); return c.started }
        if started { finished.wait(); finished.signal() }
    }

    private func deliverLoop(_ deliver: (UnsafeRawBufferPointer, Int) -> Void) -> (any Error)? {
        var buffer = [UInt8](repeating: 0, count: chunkFrames * history.format.bytesPerFrame)
        while true {
            let (position, endAt) = control.withLock { ($0.position, $0.endAt) }
            if let endAt, position >= endAt { return nil }
            // A short wait, so that an end asked for meanwhile is seen within 100 ms.
            let result = buffer.withUnsafeMutableBytes {
                history.read(from: position, into: $0, limit: chunkFrames, upTo: endAt ?? .max, timeoutMs: 100)
            }
            switch result {
            case .timedOut:
                continue
            case .ended(let error):
                // Capture stopped while nobody had asked this tap to end: its recording did not end
                // by itself, and is told so (a fault: the take is kept, and why is said).
                if error == nil && control.withLock({ $0.endAt == nil }) { return CaptureError.closedUnder(device: device) }
                return error
            case .frames(let frames, let from, let lost):
                buffer.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[0..<(frames * history.format.bytesPerFrame)]), frames) }
                control.withLock { c in
                    c.position = from + Int64(frames)
                    c.delivered += Int64(frames)
                    c.lost += lost
                }
            }
        }
    }
}
