// Transcripts (issue 38): what Whisper heard in a recording, word by word with times, made on the
// device in the background; and search over them, titles and notes.
import FoundationEssentials

/// One word as heard: its text (with the space Whisper puts before it), when it starts and ends in the
/// recording (seconds), and how sure the model was (0…1).
public struct TranscriptWord: Codable, Sendable, Equatable {
    public var word: String
    public var start: Double
    public var end: Double
    public var probability: Double
    public init(word: String, start: Double, end: Double, probability: Double) {
        self.word = word; self.start = start; self.end = end; self.probability = probability
    }
}

/// A stretch of speech (about a sentence): a cue of the WebVTT.
public struct TranscriptSegment: Codable, Sendable, Equatable {
    public var start: Double
    public var end: Double
    public var text: String
    public var words: [TranscriptWord]
    public init(start: Double, end: Double, text: String, words: [TranscriptWord]) {
        self.start = start; self.end = end; self.text = text; self.words = words
    }

    /// The part of this segment between `from` and `to` of the recording, moved to start at 0 (a trim):
    /// the words that start inside, nil when none does.
    public func cut(from: Double, to: Double) -> TranscriptSegment? {
        let kept = words.filter { $0.start >= from && $0.start < to }.map {
            TranscriptWord(word: $0.word, start: $0.start - from, end: min($0.end, to) - from, probability: $0.probability)
        }
        guard let first = kept.first, let last = kept.last else { return nil }
        return TranscriptSegment(start: first.start, end: last.end, text: kept.map(\.word).joined(), words: kept)
    }
}

/// Where a recording's transcript is.
public enum TranscriptState: String, Codable, Sendable, CaseIterable {
    /// Waiting for its turn, or being made.
    case pending
    case done
    /// The transcriber could not make it (the error is in `error`); not tried again until recd restarts.
    case failed
    /// None, and none will be made: transcription is off or not installed, or the recording is not
    /// saved (a take being recorded, a preview not yet saved, a missing file).
    case none
}

/// `GET /v1/recordings/{id}/transcript`.
public struct Transcript: Codable, Sendable, Equatable {
    public var recordingID: UUID
    public var state: TranscriptState
    /// The language Whisper heard (ISO 639-1, "en"); null when not done.
    @Nullable public var language: String?
    /// The model that made it ("base").
    @Nullable public var model: String?
    /// Why it failed, or why there is none.
    @Nullable public var error: String?
    /// The whole text, the segments' joined.
    public var text: String
    public var segments: [TranscriptSegment]

    public init(recordingID: UUID, state: TranscriptState, language: String? = nil, model: String? = nil,
                error: String? = nil, segments: [TranscriptSegment] = []) {
        self.recordingID = recordingID; self.state = state; self.language = language; self.model = model
        self.error = error; self.segments = segments
        self.text = Self.text(of: segments)
    }

    /// The segments' text, one space between them.
    public static func text(of segments: [TranscriptSegment]) -> String {
        segments.map { trimmed($0.text) }.filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// Without the spaces Whisper puts around a segment's text.
    static func trimmed(_ text: String) -> String {
        String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }

    /// WebVTT: a cue per segment (what a player shows as captions).
    public var webVTT: String { webVTT(markers: []) }

    /// The WebVTT with the recording's markers as NOTE blocks among the cues, in time order ("NOTE
    /// marker 00:00:12.500 Intro"): players show captions only, readers and editors see the markers.
    public func webVTT(markers: [Marker]) -> String {
        var out = "WEBVTT\n"
        var pending = markers.sorted { $0.time < $1.time }[...]
        func notes(before time: Double) {
            while let m = pending.first, m.time < time {
                pending.removeFirst()
                // "-->" may not appear in a NOTE; a label is one line already.
                let label = m.label.replacing("-->", with: "->")
                out += "\nNOTE marker \(Self.vttTime(m.time))\(label.isEmpty ? "" : " " + label)\n"
            }
        }
        for (i, s) in segments.enumerated() {
            notes(before: s.start)
            out += "\n\(i + 1)\n\(Self.vttTime(s.start)) --> \(Self.vttTime(s.end))\n\(Self.trimmed(s.text))\n"
        }
        notes(before: .infinity)
        return out
    }

    /// hh:mm:ss.ttt
    static func vttTime(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        let h = ms / 3_600_000, m = ms / 60_000 % 60, s = ms / 1000 % 60
        return "\(pad(h)):\(pad(m)):\(pad(s)).\(String(ms % 1000 + 1000).dropFirst())"
    }

    private static func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}

/// One recording found by `GET /v1/search`: where the words were found, the text around them with the
/// words marked «like this», and for a transcript hit the time they are said at (play from there).
public struct SearchHit: Codable, Sendable, Equatable {
    public var recording: Recording
    /// "title", "notes" or "transcript": the best field matched.
    public var field: String
    public var snippet: String
    /// Seconds into the recording where the first matched word is said (transcript hits only).
    @Nullable public var time: Double?
    public init(recording: Recording, field: String, snippet: String, time: Double?) {
        self.recording = recording; self.field = field; self.snippet = snippet; self.time = time
    }
}

/// `GET /v1/search?q=…`: the best matches first.
public struct SearchResults: Codable, Sendable, Equatable {
    public var query: String
    public var results: [SearchHit]
    /// When nothing was found: for each word that no recording holds (not even spelled another
    /// way), the closest words the library does hold, nearest first ("did you mean"). Empty otherwise.
    public var suggestions: [SearchSuggestion]
    public init(query: String, results: [SearchHit], suggestions: [SearchSuggestion] = []) {
        self.query = query; self.results = results; self.suggestions = suggestions
    }
}

/// A word of a search that nothing holds, and the library's closest words to it.
public struct SearchSuggestion: Codable, Sendable, Equatable {
    public var word: String
    public var closest: [String]
    public init(word: String, closest: [String]) { self.word = word; self.closest = closest }
}

/// The background transcription, in `GET /v1/status`.
public struct TranscriptionStatus: Codable, Sendable, Equatable {
    /// "off" (--transcribe off), "not_installed", "idle", "working" or "unavailable" (it failed to start).
    public var state: String
    /// The model ("base"); null when off or not installed.
    @Nullable public var model: String?
    /// Recordings waiting for a transcript.
    public var pending: Int
    /// The one being transcribed, and how far (0…1).
    @Nullable public var current: UUID?
    @Nullable public var progress: Double?
    /// Transcripts made since recd started.
    public var done: Int
    /// Why the transcriber is unavailable, or how to install it.
    @Nullable public var message: String?

    public init(state: String, model: String? = nil, pending: Int = 0, current: UUID? = nil, progress: Double? = nil,
                done: Int = 0, message: String? = nil) {
        self.state = state; self.model = model; self.pending = pending; self.current = current
        self.progress = progress; self.done = done; self.message = message
    }
}

/// `transcript.progress` (as a long recording is transcribed: after each stretch of speech) and
/// `transcript.done` (its transcript made, or failed).
public struct TranscriptProgressEvent: Codable, Sendable, Equatable {
    public var recordingID: UUID
    public var state: TranscriptState
    /// How far (0…1); 1 when done.
    public var progress: Double
    public init(recordingID: UUID, state: TranscriptState, progress: Double) {
        self.recordingID = recordingID; self.state = state; self.progress = progress
    }
}
