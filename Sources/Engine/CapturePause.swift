// Pause and resume of a recording, applied to the sound by the capture thread.
import Foundation
import Storage
import Synchronization

/// Where a recording's sound is paused, in frames of the recording's format counted from the first
/// one delivered (the capture's position, `AudioClock`'s unit).
///
/// The Recorder asks (`set(paused:)`); the capture thread applies the request at its next period
/// (`plan(frames:)`), so a pause starts and ends on frame boundaries it knows exactly: a pause is the
/// half-open range of positions left out of the file. The file's timestamps count samples, so what
/// is left out leaves no gap or time jump; the joins are faded (5 ms out, 5 ms in) so that the
/// discontinuity does not click. The video thread places camera frames with the same ranges
/// (`filePosition(of:)`), so both streams pause at the same instant.
///
/// Shared by the Recorder's thread (requests), the capture thread (applies) and the video thread
/// (reads); every access is under one lock.
package final class CapturePause: Sendable {
    /// Frames left out of the file: `[start, end)`; `end` is nil while the pause lasts.
    package struct Cut: Equatable, Sendable {
        var start: Int64; var end: Int64?
        package init(start: Int64, end: Int64?) { (self.start, self.end) = (start, end) }
    }

    /// What the capture thread does with one period.
    package enum Plan: Equatable {
        /// Write it all.
        case keep
        /// Leave it out (paused).
        case drop
        /// Write its first `frames` frames fading to silence, then leave the rest out (the pause
        /// starts after them).
        case fadeOut(frames: Int)
        /// Write it all, the first frames fading in: frame `i` of the period has gain
        /// `(from + i) / fadeFrames` until that reaches 1.
        case fadeIn(from: Int)
    }

    private struct State {
        var wanted = false
        var applied = false
        var cuts: [Cut] = []
        var delivered: Int64 = 0
        /// Frames of the current fade-in already written (`fadeFrames` when none is under way).
        var fadedIn: Int
    }

    /// Length of each fade: 5 ms.
    package let fadeFrames: Int
    /// The encoder thread reports here when what came before a pause is in the file.
    let flushes = PauseFlushes()
    private let state: Mutex<State>
    /// Wakes the video thread waiting for the sound to reach a camera frame's instant.
    private let progress = NSCondition()
    /// Threads in `waitForSound`: the capture thread takes `progress` to wake them only when there
    /// are any (it runs once per period; a video with no pause asked never waits).
    private let waiters = Atomic<Int>(0)

    private func wakeWaiters() {
        guard waiters.load(ordering: .sequentiallyConsistent) > 0 else { return }
        progress.lock(); progress.broadcast(); progress.unlock()
    }

    package init(sampleRate: Int) {
        fadeFrames = max(1, sampleRate / 200)
        state = Mutex(State(fadedIn: fadeFrames))
    }

    // MARK: the Recorder

    /// Asks for the sound to pause (true) or go on (false) from the capture thread's next period.
    package func set(paused: Bool) {
        let pausing = state.withLock { s -> Bool in
            defer { s.wanted = paused }
            return paused && !s.wanted
        }
        if pausing { flushes.asked() }
    }

    // MARK: the capture thread

    /// Decides the fate of the next `frames` frames (one period, in the recording's format) and
    /// counts them as delivered.
    package func plan(frames: Int) -> Plan {
        let plan = state.withLock { s -> Plan in
            let position = s.delivered
            s.delivered += Int64(frames)
            if s.wanted != s.applied {
                s.applied = s.wanted
                if s.wanted {
                    let n = min(fadeFrames, frames)
                    s.cuts.append(Cut(start: position + Int64(n), end: nil))
                    return .fadeOut(frames: n)
                }
                s.cuts[s.cuts.count - 1].end = position
                s.fadedIn = min(fadeFrames, frames)
                return .fadeIn(from: 0)
            }
            if s.applied { return .drop }
            if s.fadedIn < fadeFrames {
                let from = s.fadedIn
                s.fadedIn = min(fadeFrames, from + frames)
                return .fadeIn(from: from)
            }
            return .keep
        }
        wakeWaiters()
        return plan
    }

    /// Applies `plan`'s fade to `frames` interleaved frames in place.
    package func fade(_ plan: Plan, _ samples: UnsafeMutableBufferPointer<Int16>, frames: Int, channels: Int) {
        let scale = 1.0 / Float(fadeFrames)
        switch plan {
        case .fadeOut(let n):
            for i in 0..<min(n, frames) {
                let gain = Float(n - 1 - i) / Float(max(1, n))
                for c in 0..<channels { samples[i * channels + c] = Int16(Float(samples[i * channels + c]) * gain) }
            }
        case .fadeIn(let from):
            for i in 0..<min(frames, fadeFrames - from) {
                let gain = Float(from + i) * scale
                for c in 0..<channels { samples[i * channels + c] = Int16(Float(samples[i * channels + c]) * gain) }
            }
        case .keep, .drop:
            break
        }
    }

    /// The capture has ended: nobody waits for it any more.
    func captureEnded() {
        state.withLock { $0.delivered = .max }
        flushes.written()   // nothing more comes: nobody waits for a flush
        wakeWaiters()
    }

    // MARK: the video thread and the stop

    package var isPaused: Bool { state.withLock { $0.applied } }
    /// Frames delivered so far, as placed in the file (pauses taken out).
    package var deliveredInFile: Double {
        let (delivered, cuts) = state.withLock { ($0.delivered, $0.cuts) }
        return delivered == .max ? .infinity : Self.place(Double(delivered), cuts: cuts).at
    }
    package var cuts: [Cut] { state.withLock { $0.cuts } }

    /// Waits (at most `timeoutMs`) until the sound has been delivered up to `position`, so that any
    /// pause asked for before that instant has been placed. Returns at once when no pause was ever
    /// asked for.
    func waitForSound(through position: Double, timeoutMs: Int) {
        let deadline = Date().addingTimeInterval(Double(timeoutMs) / 1000)
        progress.lock()
        // Counted before `delivered` is read (under the lock the capture thread wakes with): a
        // period delivered after the read finds the count and broadcasts.
        waiters.add(1, ordering: .sequentiallyConsistent)
        defer { waiters.subtract(1, ordering: .sequentiallyConsistent); progress.unlock() }
        while true {
            let (asked, delivered) = state.withLock { ($0.wanted || !$0.cuts.isEmpty, $0.delivered) }
            if !asked || Double(delivered) >= position { return }
            if !progress.wait(until: deadline) { return }
        }
    }

    /// Waits (at most `timeoutMs`) until the sound in the file reaches `frames` (counted from the
    /// first frame delivered), or a pause holds it short of them: a video's stop, for the sound to
    /// reach its last picture.
    func waitForFile(through frames: Double, timeoutMs: Int) {
        let deadline = Date().addingTimeInterval(Double(timeoutMs) / 1000)
        progress.lock()
        waiters.add(1, ordering: .sequentiallyConsistent)   // before the reads: as `waitForSound`
        defer { waiters.subtract(1, ordering: .sequentiallyConsistent); progress.unlock() }
        while !isPaused && deliveredInFile < frames {
            if !progress.wait(until: deadline) { return }
        }
    }

    /// Where capture position `position` lands in the file (still counted from the first frame
    /// delivered): earlier than the position by every pause before it. Nil when it falls in a pause.
    package func filePosition(of position: Double) -> Double? {
        let (at, inPause) = Self.place(position, cuts: cuts)
        return inPause ? nil : at
    }

    /// As `filePosition(of:)`, but a position in a pause is placed where that pause started.
    package func clampedFilePosition(of position: Double) -> Double { Self.place(position, cuts: cuts).at }

    /// `position` with the pauses before it taken out, and whether it falls in one (then `at` is
    /// where that pause started).
    static func place(_ position: Double, cuts: [Cut]) -> (at: Double, inPause: Bool) {
        var removed: Int64 = 0
        for cut in cuts {
            if position < Double(cut.start) { break }
            guard let end = cut.end, position >= Double(end) else { return (Double(cut.start - removed), true) }
            removed += end - cut.start
        }
        return (position - Double(removed), false)
    }
}

/// Counts pauses asked for and pauses whose recording so far has been written to the file, so the
/// pause request can return once what came before it is on the disk (a kill right after the reply
/// then loses nothing of it). Any thread.
final class PauseFlushes: Sendable {
    private struct Counts { var asked = 0; var written = 0 }
    private let counts = Mutex(Counts())
    private let changed = NSCondition()

    func asked() { counts.withLock { $0.asked += 1 } }

    /// What came before the latest pause is in the file (or nothing more will be written).
    func written() {
        counts.withLock { $0.written = $0.asked }
        changed.lock(); changed.broadcast(); changed.unlock()
    }

    /// Blocks until the last pause asked for has been written, at most `timeoutMs`. Returns whether it was.
    @discardableResult
    func wait(timeoutMs: Int) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeoutMs) / 1000)
        changed.lock(); defer { changed.unlock() }
        while true {
            let c = counts.withLock { $0 }
            if c.written >= c.asked { return true }
            if !changed.wait(until: deadline) { return false }
        }
    }
}

/// Pauses of a silent video, by capture time on CLOCK_MONOTONIC (there is no sound to count).
package final class MonotonicPause: Sendable {
    private let cuts = Mutex<[CapturePause.Cut]>([])
    package init() {}
    /// The video thread reports here when what came before a pause is in the file.
    let flushes = PauseFlushes()

    package func set(paused: Bool, atNs now: UInt64) {
        let pausing = cuts.withLock { c -> Bool in
            let open = c.last.map { $0.end == nil } ?? false
            if paused && !open { c.append(CapturePause.Cut(start: Int64(now), end: nil)) }
            if !paused && open { c[c.count - 1].end = Int64(now) }
            return paused && !open
        }
        if pausing { flushes.asked() }
    }

    package var isPaused: Bool { cuts.withLock { $0.last.map { $0.end == nil } ?? false } }

    /// The frame's time with the pauses before it taken out; nil when it was captured in a pause.
    package func fileTime(ofNs ns: UInt64) -> UInt64? {
        var removed: UInt64 = 0
        for cut in cuts.withLock({ $0 }) {
            if ns < UInt64(cut.start) { break }
            guard let end = cut.end, ns >= UInt64(end) else { return nil }
            removed += UInt64(end - cut.start)
        }
        return ns - removed
    }
}
