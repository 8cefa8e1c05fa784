// recctl transcript and recctl search (issue 38): what a recording says, and the recordings that say it.
import ArgumentParser
import FoundationEssentials
import RecdAPI

struct TranscriptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transcript",
        abstract: "Show what was said in a recording: its transcript, made on this machine (automatic, and sometimes wrong).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Flag(help: "As WebVTT captions (a cue per stretch of speech, with times): --format vtt.") var vtt = false
    @Flag(help: "Each word with the time it is said: --format words.") var words = false
    @Option(help: ArgumentHelp("text (a line per stretch of speech), words (each word with its time) or vtt (WebVTT captions), as export and waveform take --format.",
                               valueName: "format"))
    var format: Form?

    enum Form: String, ExpressibleByArgument, CaseIterable { case text, words, vtt }

    /// The form asked for, by --format or by its flag.
    var form: Form { format ?? (vtt ? .vtt : words ? .words : .text) }

    func validate() throws {
        if [vtt, words, format != nil].filter({ $0 }).count > 1 { throw ValidationError("--format, --vtt and --words: choose one") }
    }

    func run() async throws {
        let path = "/v1/recordings/\(try idPath(id))/transcript"
        guard let (t, raw) = try await global.fetchToShow(.GET, path, as: Transcript.self) else { return }
        guard form == .vtt else { return global.emit(raw, Self.describe(t, words: form == .words)) }
        // Captions only of a transcript that is there: otherwise a bare "WEBVTT" would say nothing
        // of why (a file of captions made by `> file.vtt` would look empty and fine).
        guard t.state == .done else {
            Console.err("recctl: " + Self.describe(t, words: false) + "\n")
            throw ExitCode(ExitStatus.refused)
        }
        let reply = try await global.client.send(.GET, path + "?format=vtt")
        try RecdClient.check(reply)
        Console.out(reply.body)
    }

    static func describe(_ t: Transcript, words: Bool) -> String {
        switch t.state {
        case .pending: return "The transcript is being made (recctl status shows how far)."
        case .failed: return "No transcript: \(Output.text(t.error ?? "the transcriber failed"))."
        case .none: return "No transcript: \(Output.text(t.error ?? "none is made"))."
        case .done:
            if t.segments.isEmpty { return "No words were heard." }
            if words {
                return t.segments.flatMap(\.words).map { w in
                    "\(at(w.start))  \(Output.text(String(w.word.drop { $0 == " " })))"
                }.joined(separator: "\n")
            }
            return t.segments.map { s in
                "[\(at(s.start))] \(Output.text(String(s.text.drop { $0 == " " })))"
            }.joined(separator: "\n")
        }
    }

    /// m:ss.t — a word's time, to a tenth (what --from takes, as seconds).
    static func at(_ seconds: Double) -> String {
        String(cFormat: "%d:%04.1f", Int(seconds) / 60, seconds - Double(Int(seconds) / 60 * 60))
    }
}

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find recordings by what was said in them (their transcripts), their titles and notes.",
        discussion: "Every word must be found; a word also finds longer ones that start with it (harb: harbour), and numbers are found as digits or words (three: 3). Play from a hit with: recctl play ID --from SECONDS.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The words to look for.") var words: [String]
    @Option(help: "At most this many recordings, 1-100.") var limit: Int = 20

    func validate() throws {
        if !(1...100).contains(limit) { throw ValidationError("--limit must be 1...100") }
        // recd's rule (a word is letters or digits), said in recctl's words rather than as its "q".
        if !words.joined().contains(where: { $0.isLetter || $0.isNumber }) {
            throw ValidationError("give at least one word to look for (letters or digits)")
        }
    }

    func run() async throws {
        let q = words.joined(separator: " ").percentEncoded(keeping: "-._~")
        guard let (found, raw) = try await global.fetchToShow(.GET, "/v1/search?q=\(q)&limit=\(limit)", as: SearchResults.self) else { return }
        global.emit(raw, Self.describe(found))
    }

    static func describe(_ found: SearchResults) -> String {
        guard !found.results.isEmpty else {
            let hints = found.suggestions.filter { !$0.closest.isEmpty }.map { s in
                "\n\(Output.text(s.word)): did you mean \(s.closest.map { Output.text($0) }.joined(separator: ", "))?"
            }
            return "No recording says \"\(Output.text(found.query))\"." + hints.joined()
        }
        return found.results.map { hit in
            let r = hit.recording
            var line = "\(r.id.uuidString.prefix(8))  \(Output.text(r.title))"
            if let time = hit.time {
                line += "  at \(TranscriptCommand.at(time))  (recctl play \(r.id.uuidString.prefix(8)) --from \(String(cFormat: "%.1f", time)))"
            }
            return line + "\n    \(hit.field): \(Output.text(hit.snippet))"
        }.joined(separator: "\n")
    }
}
