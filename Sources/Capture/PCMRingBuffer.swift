// The bounded queue between the capture thread and the encoder thread.
import Foundation

/// A single-producer, single-consumer ring of interleaved frames: S16 samples (`PCMRingBuffer`),
/// or a device's own bytes (`FrameRing<UInt8>`, a frame's bytes as its "channels") where they are
/// converted on another thread than the one that captured them.
///
/// The capture thread `write`s and never blocks: when the ring is full (the encoder or the disk has
/// stalled for longer than the ring holds) the frames that do not fit are dropped and counted, so the
/// device is never overrun because of a slow consumer. The encoder thread `read`s, blocking until a
/// requested amount is there or the producer has `close`d the ring.
public final class FrameRing<Sample: FixedWidthInteger>: @unchecked Sendable {
    public let channels: Int
    public let capacityFrames: Int
    private var storage: [Sample]
    private var readFrame = 0      // index of the oldest frame (mod capacity)
    private var count = 0          // frames held
    private var closed = false
    private var dropped: Int64 = 0
    /// Frames the waiting reader asked for: the writer signals only once they are there, so the
    /// reader wakes once per block, not once per device period.
    private var wanted = Int.max
    /// Frames written and read since the start, and the written count at the last `markFlush()`.
    private var writtenTotal: Int64 = 0
    private var readTotal: Int64 = 0
    private var flushMark: Int64?
    private let condition = NSCondition()

    public init(capacityFrames: Int, channels: Int) {
        precondition(capacityFrames > 0 && channels > 0)
        self.channels = channels
        self.capacityFrames = capacityFrames
        storage = [Sample](repeating: 0, count: capacityFrames * channels)
    }

    /// Frames dropped because the ring was full.
    public var droppedFrames: Int64 { condition.lock(); defer { condition.unlock() }; return dropped }
    /// Frames written and not yet read.
    public var heldFrames: Int { condition.lock(); defer { condition.unlock() }; return count }

    /// Copies up to `frames` frames in; returns how many fit (the rest are counted as dropped).
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Sample>, frames: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let n = min(frames, capacityFrames - count)
        dropped += Int64(frames - n)
        var writeFrame = (readFrame + count) % capacityFrames
        var done = 0
        storage.withUnsafeMutableBufferPointer { dst in
            while done < n {
                let run = min(n - done, capacityFrames - writeFrame)
                let src = samples.baseAddress! + done * channels
                (dst.baseAddress! + writeFrame * channels).update(from: src, count: run * channels)
                done += run
                writeFrame = (writeFrame + run) % capacityFrames
            }
        }
        count += n
        writtenTotal += Int64(n)
        if count >= wanted { condition.signal() }
        return n
    }

    /// Asks the reader to take what has been written so far without waiting for a full block, and
    /// tells it (`readBlock`'s `flush`) when it has read up to here: the writer has paused, and what
    /// came before the pause should reach the file now.
    public func markFlush() {
        condition.lock()
        flushMark = writtenTotal
        condition.signal()
        condition.unlock()
    }

    /// Marks the end of the stream: readers get what is left, then 0.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until `minFrames` frames are held (or the ring is closed), then copies up to
    /// `buffer.count / channels` frames out. Returns the number of frames copied; 0 means closed and empty.
    public func read(into buffer: UnsafeMutableBufferPointer<Sample>, minFrames: Int) -> Int {
        while true {
            let (frames, flush) = readBlock(into: buffer, minFrames: minFrames)
            if frames > 0 || !flush { return frames }
        }
    }

    /// `read`, which also returns early at a `markFlush()`; `flush` is true when this read reached
    /// the mark (everything written before it has now been read). `(0, true)` is not the end: that
    /// is `(0, false)`.
    public func readBlock(into buffer: UnsafeMutableBufferPointer<Sample>, minFrames: Int) -> (frames: Int, flush: Bool) {
        let maxFrames = buffer.count / channels
        let want = min(max(1, minFrames), maxFrames, capacityFrames)
        condition.lock()
        defer { condition.unlock() }
        wanted = want
        while count < want && !closed && flushMark == nil { condition.wait() }
        wanted = Int.max
        let n = min(count, maxFrames)
        var done = 0
        storage.withUnsafeBufferPointer { src in
            while done < n {
                let run = min(n - done, capacityFrames - readFrame)
                (buffer.baseAddress! + done * channels).update(from: src.baseAddress! + readFrame * channels,
                                                               count: run * channels)
                done += run
                readFrame = (readFrame + run) % capacityFrames
            }
        }
        count -= n
        readTotal += Int64(n)
        var flush = false
        if let mark = flushMark, readTotal >= mark {
            flushMark = nil
            flush = true
        }
        return (n, flush)
    }
}

/// The ring between the capture (or conversion) thread and the encoder thread: S16 frames.
public typealias PCMRingBuffer = FrameRing<Int16>
