// Listening's decisions (issue 49): from the voice detector's speech probability per window to where
// each utterance's recording begins and ends. Pure: positions in, decisions out (unit-tested alone).
import RecdAPI

/// Where each utterance's recording begins and ends, in the microphone's frame positions
/// (`CaptureHistory`'s).
///
/// Speech starts at a window whose probability reaches `onThreshold`, and goes on while windows stay
/// at `offThreshold` or above (Silero's own hysteresis: 0.5 and 0.35). An utterance ends after
/// `silence` without speech: a shorter pause is part of it. Its recording begins `preRoll` before its
/// first speech (or as far back as the microphone's history reaches) once it holds `min` of speech —
/// with less, it is dropped without a recording ever being made — and ends `silence` after its last
/// speech. One longer than `max` is cut into recordings of `max`, each starting where the last ended.
package struct UtteranceSegmenter {
    package enum Decision: Equatable {
        /// Start a recording at this position (the history holds it).
        case begin(at: Int64)
        /// End the recording at this position (`speech`: seconds heard in it).
        case end(at: Int64, speech: Double)
        /// End the recording at this position and start the next one there (the utterance goes on past `max`).
        case split(at: Int64, speech: Double)
        /// An utterance with less than `min` of speech ended: nothing was recorded.
        case drop(speech: Double)

        /// An end or a split: the taps wait at its position until the Listener has applied it.
        var endsARecording: Bool {
            switch self {
            case .end, .split: true
            case .begin, .drop: false
            }
        }
    }

    package struct Settings: Equatable {
        var rate: Int
        var silence: Double
        var preRoll: Double
        var min: Double
        var max: Double
        var onThreshold = 0.5
        var offThreshold = 0.35
        /// Where speech began: the first of the windows above this that lead without a gap to the one
        /// that reached `onThreshold`. Silero's probability climbs over a few windows at a word's
        /// start, longer for quiet speech (the bench: a phrase 18 dB down was taken for speech
        /// 0.23 s after its first sound); the pre-roll counts from where it began to climb.
        var riseThreshold = 0.15
        /// How far back a climb counts (a long stretch just above `riseThreshold`, music say, is not speech).
        var maxRise = 0.5

        package init(rate: Int, silence: Double, preRoll: Double, min: Double, max: Double, onThreshold: Double = 0.5,
                     offThreshold: Double = 0.35, riseThreshold: Double = 0.15, maxRise: Double = 0.5) {
            (self.rate, self.silence, self.preRoll, self.min, self.max) = (rate, silence, preRoll, min, max)
            (self.onThreshold, self.offThreshold, self.riseThreshold, self.maxRise) = (onThreshold, offThreshold, riseThreshold, maxRise)
        }
    }

    let settings: Settings
    private var silenceFrames: Int64 { Int64(settings.silence * Double(settings.rate)) }

    private struct Utterance {
        var firstSpeech: Int64
        var lastSpeechEnd: Int64
        /// Frames of speech heard (of the current part, once split).
        var speechFrames: Int64
        /// Where its recording (its current part) began; nil until it holds `min` of speech.
        var recordingFrom: Int64?
    }
    private var utterance: Utterance?
    /// The start of the windows above `riseThreshold` just before now (nil after one below it).
    private var riseStart: Int64?

    package init(_ settings: Settings) { self.settings = settings }

    /// Whether an utterance's recording is under way.
    var recording: Bool { utterance?.recordingFrom != nil }

    /// One window of `[start, end)` with its speech probability; `oldest`: the oldest position the
    /// history holds (a pre-roll reaches back no further).
    package mutating func feed(probability p: Double, start: Int64, end: Int64, oldest: Int64) -> [Decision] {
        let rate = Double(settings.rate)
        var out: [Decision] = []
        if p >= settings.riseThreshold { riseStart = riseStart ?? start } else { riseStart = nil }
        if var u = utterance {
            if p >= settings.offThreshold {
                u.lastSpeechEnd = end
                u.speechFrames += end - start
            }
            if u.recordingFrom == nil && Double(u.speechFrames) >= settings.min * rate {
                let from = max(oldest, u.firstSpeech - Int64(settings.preRoll * rate))
                u.recordingFrom = from
                out.append(.begin(at: from))
            }
            if let from = u.recordingFrom, end - from >= Int64(settings.max * rate) {
                let at = from + Int64(settings.max * rate)
                out.append(.split(at: at, speech: Double(u.speechFrames) / rate))
                u.recordingFrom = at
                u.speechFrames = 0
            }
            if end - u.lastSpeechEnd >= silenceFrames {
                let speech = Double(u.speechFrames) / rate
                if u.recordingFrom != nil {
                    out.append(.end(at: u.lastSpeechEnd + silenceFrames, speech: speech))
                } else {
                    out.append(.drop(speech: speech))
                }
                utterance = nil
            } else {
                utterance = u
            }
        } else if p >= settings.onThreshold {
            let first = max(riseStart ?? start, start - Int64(settings.maxRise * rate))
            utterance = Utterance(firstSpeech: first, lastSpeechEnd: end, speechFrames: end - start, recordingFrom: nil)
            if Double(end - start) >= settings.min * rate {
                let from = max(oldest, first - Int64(settings.preRoll * rate))
                utterance?.recordingFrom = from
                out.append(.begin(at: from))
            }
        }
        return out
    }

    /// Capture ended (listening stopped, or the device was lost): the utterance under way ends at
    /// `position` if it is being recorded.
    package mutating func finish(at position: Int64) -> [Decision] {
        defer { utterance = nil }
        guard let u = utterance else { return [] }
        let speech = Double(u.speechFrames) / Double(settings.rate)
        return u.recordingFrom != nil ? [.end(at: max(u.lastSpeechEnd, min(position, u.lastSpeechEnd + silenceFrames)), speech: speech)] : [.drop(speech: speech)]
    }
}
