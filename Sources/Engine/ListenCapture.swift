// One opening of the microphone for listening (issue 49): the device's capture thread into a
// `CaptureHistory`, and a detector thread that reads the history, asks the voice detector and the
// segmenter, and tells the `Listener` what to do, in order, through a stream.
import Capture
import Foundation
import MediaWorker
import RecdAPI
import Synchronization

/// What the detector thread tells the `Listener`.
package enum ListenMessage: Sendable {
    case decision(UtteranceSegmenter.Decision)
    case level(ListenLevelEvent)
    /// Silero failed: the level gate decides from now on (`note` says why).
    case detectorChanged(VoiceDetectorKind, note: String)
    /// Capture ended: nil when listening was stopped, the device's error otherwise. The last message.
    case ended((any Error)?)
}

/// The microphone open for listening, with its history and its detector thread. Made by the
/// `Listener` when it arms (and again when a lost device comes back); `stop` ends it.
package final class ListenCapture: @unchecked Sendable {
    let source: any CaptureSource
    let history: CaptureHistory
    package let messages: AsyncStream<ListenMessage>
    private let continuation: AsyncStream<ListenMessage>.Continuation
    private let stopRequested = Atomic<Bool>(false)
    /// What the taps may deliver: up to what the detector judged, but no further than an end or a
    /// split decided until the `Listener` has told the tap (`resumeRelease`, once per end or split,
    /// in order): a recording then ends, and the next begins, exactly there.
    private let release = Mutex<(holds: [Int64], judged: Int64)>(([], 0))
    private let loopDone = DispatchSemaphore(value: 0)
    /// Seconds of sound the history holds beyond the pre-roll and `min`: the time a recording's
    /// stop and the next one's start may take (a split) without a frame lost.
    static let slackSeconds = 30.0
    /// How often the detector runs (and the level is told): four times a second.
    static let intervalSeconds = 0.25
    /// A quarter second quieter than this (RMS of the detector's 16 kHz) is silence without asking
    /// the detector. Why: Silero's model was half of listening's CPU in a quiet room (0.9 % of a core
    /// of 2.05 %, bench/listen.py). A quarter holding even 10 ms of speech at -42 dBFS over a -60 dBFS
    /// room is louder than this; speech quieter than it all through is not heard.
    static let quietDb = -55.0

    /// Starts capture from `source` (opened) and the detector thread with `detector`.
    package init(source: any CaptureSource, detector: any SpeechDetector, settings: UtteranceSegmenter.Settings) {
        self.source = source
        history = CaptureHistory(format: source.deviceFormat, seconds: settings.preRoll + settings.min + Self.slackSeconds, gated: true)
        (messages, continuation) = AsyncStream.makeStream(of: ListenMessage.self)
        let (history, continuation) = (self.history, self.continuation)
        source.start(clock: nil, deliver: { raw, frames in history.write(raw, frames: frames) },
                     onEnd: { error in history.close(error: error) })
        let handed = UncheckedBox(detector)
        let thread = Thread { [self] in
            self.detectLoop(handed.value, settings: settings)
            continuation.finish()
            self.loopDone.signal()
        }
        thread.name = "recd-listen"
        thread.start()
    }

    /// The `Listener` has applied the oldest end or split: the taps may go on (to the next one).
    func resumeRelease() {
        release.withLock { r in
            if !r.holds.isEmpty { r.holds.removeFirst() }
            history.release(upTo: min(r.judged, r.holds.first ?? .max))
        }
    }

    private func judged(upTo position: Int64) {
        release.withLock { r in
            r.judged = max(r.judged, position)
            history.release(upTo: min(r.judged, r.holds.first ?? .max))
        }
    }

    private func hold(at position: Int64) {
        release.withLock { r in
            r.holds.append(position)
            history.release(upTo: min(r.judged, r.holds.first!))
        }
    }

    /// Ends the detector thread (its last decisions are sent: an utterance under way ends where
    /// capture is now), then capture. Blocking.
    package func stop() {
        stopRequested.store(true, ordering: .relaxed)
        loopDone.wait()
        loopDone.signal()
        source.stop()
        history.close(error: nil)
    }

    private func detectLoop(_ first: any SpeechDetector, settings: UtteranceSegmenter.Settings) {
        var detector = first
        defer { detector.close() }
        var segmenter = UtteranceSegmenter(settings)
        var input = SpeechInput(format: history.format)
        let format = history.format
        let window = VoiceDetectorWire.windowSamples
        let step = Double(format.rate) / Double(VoiceDetectorWire.sampleRate)   // device frames per 16 kHz sample
        let chunk = max(1, Int(Double(format.rate) * Self.intervalSeconds))
        var raw = [UInt8](repeating: 0, count: chunk * format.bytesPerFrame)
        var pending: [Int16] = []
        pending.reserveCapacity(Int(Double(VoiceDetectorWire.sampleRate) * Self.intervalSeconds) + window * 2)
        // Position of `pending[0]`, in device frames (fractional: 16 kHz samples fall between them).
        var base: Double? = nil
        var read: Int64 = 0   // from the first frame captured (capture started before this thread)
        var endError: (any Error)? = nil
        // The last quarter passed over as quiet: when sound comes, the detector hears it first, so
        // that the sound's first window follows what came just before it. Its state is kept over the
        // quiet, not reset: reset, Silero took the onsets of loud sounds (a door's slam, music) for
        // speech — 6 times in bench/listen.py's 10 minutes of noise, 0 when it hears every quarter,
        // once in 30 minutes kept (each shorter than `min`, so dropped).
        var passedOver: [Int16]? = nil
        loop: while true {
            if stopRequested.load(ordering: .relaxed) { break }
            let result = raw.withUnsafeMutableBytes { history.read(from: read, into: $0, limit: chunk, unreleased: true, timeoutMs: 100) }
            let frames: Int
            switch result {
            case .timedOut: continue
            case .ended(let error): endError = error; break loop
            case .frames(let n, let from, _):
                if base == nil || from != read {
                    base = Double(from); pending.removeAll(keepingCapacity: true); passedOver = nil; detector.reset()
                }
                frames = n
                read = from + Int64(n)
            }
            raw.withUnsafeBytes { input.convert(UnsafeRawBufferPointer(rebasing: $0[0..<(frames * format.bytesPerFrame)]), frames: frames, into: &pending) }
            // Only when a quarter second has gathered (a read may return one period).
            guard pending.count >= Int(Double(VoiceDetectorWire.sampleRate) * Self.intervalSeconds) else { continue }
            let whole = pending.count / window * window
            var probabilities: [Double]
            do {
                if Self.rmsDb(pending[0..<whole]) < Self.quietDb {
                    probabilities = Array(repeating: 0, count: whole / window)
                    passedOver = Array(pending[0..<whole])
                } else {
                    if let before = passedOver {
                        _ = try before.withUnsafeBufferPointer { try detector.probabilities($0) }
                        passedOver = nil
                    }
                    probabilities = try pending.withUnsafeBufferPointer { try detector.probabilities(UnsafeBufferPointer(rebasing: $0[0..<whole])) }
                }
            } catch {
                let gate = LevelGateDetector()
                continuation.yield(.detectorChanged(.level, note: "the Silero voice detector failed (\(error)); a level gate decides instead"))
                detector.close()
                detector = gate
                probabilities = (try? pending.withUnsafeBufferPointer { try gate.probabilities(UnsafeBufferPointer(rebasing: $0[0..<whole])) }) ?? []
            }
            let oldest = history.oldest
            for (k, p) in probabilities.enumerated() {
                let start = Int64(base! + Double(k * window) * step)
                let end = Int64(base! + Double((k + 1) * window) * step)
                // A decision at this window falls after its start.
                judged(upTo: start)
                for d in segmenter.feed(probability: p, start: start, end: end, oldest: oldest) {
                    if case .end(let at, _) = d { hold(at: at) }
                    if case .split(let at, _) = d { hold(at: at) }
                    continuation.yield(.decision(d))
                }
            }
            base! += Double(whole) * step
            pending.removeFirst(whole)
            judged(upTo: Int64(base!))
            let level = input.takeLevel()
            continuation.yield(.level(ListenLevelEvent(peak: level.peak, rms: level.rms, speech: probabilities.max() ?? 0)))
        }
        for d in segmenter.finish(at: read) { continuation.yield(.decision(d)) }
        continuation.yield(.ended(endError))
    }
}

extension ListenCapture {
    /// RMS of 16 kHz samples, in dBFS (-160 for none or digital silence).
    static func rmsDb(_ samples: ArraySlice<Int16>) -> Double {
        guard !samples.isEmpty else { return -160 }
        let sum = samples.reduce(0.0) { let v = Double($1) / 32768; return $0 + v * v }
        return sum > 0 ? max(-160, 10 * log10(sum / Double(samples.count))) : -160
    }
}

/// Hands a non-Sendable value to the one thread that uses it from then on.
private struct UncheckedBox<T>: @unchecked Sendable { let value: T; init(_ value: T) { self.value = value } }
