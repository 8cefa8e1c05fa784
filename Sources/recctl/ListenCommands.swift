// recctl listen (start, stop, status): hands-free listening (issue 49), each thing said a recording.
import ArgumentParser
import FoundationEssentials
import RecdAPI

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Hands-free: recd listens, and keeps each thing said as a recording of its own.",
        discussion: """
        While listening is armed, recd keeps the microphone open and a voice detector (Silero VAD when the \
        transcriber is installed, a level gate otherwise) decides speech. Each utterance becomes a recording, \
        from --pre-roll before its first word to --silence after its last; pauses shorter than --silence \
        stay in it. Listening shows in `recctl status`, the web app and the journal for as long as it is armed.
        """,
        subcommands: [Start.self, Stop.self, Show.self], defaultSubcommand: Show.self)

    static func describe(_ s: ListenStatus) -> String {
        guard s.armed, let settings = s.settings else {
            var line = "not listening"
            if let last = s.lastStop { line += " (stopped \(Output.date(last.at)): \(Output.text(last.message)))" }
            return line
        }
        let what: String = switch s.state {
        case .listening: "listening for speech"
        case .speaking: "hearing speech: recording \(s.recordingID.map(Output.shortID) ?? "")"
        case .yielded: "paused: a recording started by hand has the microphone (listening goes on when it ends)"
        case .deviceLost: "the microphone is lost: \(Output.text(s.lastStop?.message ?? "")) (trying again every 2 s)"
        case .off: "not listening"
        }
        var lines = [what + " on \(Output.text(s.device ?? ""))"]
        lines.append("since \(s.since.map(Output.date) ?? "?")\(s.resumedAfterRestart ? " (armed again after recd restarted)" : "")"
                     + (settings.until.map { ", until \(Output.date($0))" } ?? ""))
        lines.append("detector: \(s.detector == .silero ? "Silero VAD" : "level gate")" + (s.detectorNote.map { " (\(Output.text($0)))" } ?? ""))
        lines.append("silence \(seconds(settings.silence)), pre-roll \(seconds(settings.preRoll)), min \(seconds(settings.min)), max \(seconds(settings.max)); \(settings.format)"
                     + (settings.purpose.map { ", purpose \($0)" } ?? ""))
        lines.append("\(Output.count(s.utterances, "recording")) kept, \(s.dropped) too short")
        return lines.joined(separator: "\n")
    }

    private static func seconds(_ s: Double) -> String { s == s.rounded() ? "\(Int(s)) s" : "\(s) s" }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "start", abstract: "Arm listening.")
        @OptionGroup var global: GlobalOptions
        @Option(help: ArgumentHelp("Silence that ends an utterance (shorter pauses stay in it): 2s, 1.5, 500ms (0.3 s to 60 s; default 2 s).", valueName: "duration"))
        var silence: String?
        @Option(help: ArgumentHelp("Kept before the first word detected (0 to 10 s; default 1 s).", valueName: "duration"))
        var preRoll: String?
        @Option(help: ArgumentHelp("Utterances with less speech are dropped: a cough, a door (0 to 60 s; default 1 s).", valueName: "duration"))
        var min: String?
        @Option(help: ArgumentHelp("Longer utterances are split into recordings this long, no frame lost (5 s to 4 h; default 10m).", valueName: "duration"))
        var max: String?
        @Option(help: ArgumentHelp("Stop listening then: a time (18:30, today or tomorrow), a date (2026-12-01T08:00:00Z) or a delay (2h).", valueName: "time"))
        var until: String?
        @Option(help: ArgumentHelp("The recordings' format: aac, opus or flac (default: recd's --default-format).", valueName: "format"))
        var format: String?
        @Option(help: ArgumentHelp("The recordings' purpose chip.", valueName: "purpose"))
        var purpose: String?

        func run() async throws {
            func parse(_ text: String?, _ name: String) throws -> Double? {
                guard let text else { return nil }
                guard let s = ListenRequest.parseDuration(text) else {
                    throw ValidationError("--\(name) takes a duration (2s, 1.5, 500ms, 10m, 1h), not '\(text)'")
                }
                return s
            }
            var untilDate: Date?
            if let until {
                guard let d = ListenRequest.parseUntil(until, now: Date()) else {
                    throw ValidationError("--until takes a time (18:30), a date (2026-12-01T08:00:00Z) or a delay (2h), not '\(until)'")
                }
                untilDate = d
            }
            let body = ListenRequest(silence: try parse(silence, "silence"), preRoll: try parse(preRoll, "pre-roll"), min: try parse(min, "min"),
                                     max: try parse(max, "max"), until: untilDate, format: format,
                                     purpose: purpose.map { $0.lowercased() == "none" ? "none" : Purpose.named($0) ?? $0.lowercased() })
            let (s, raw) = try await global.client.call(.POST, "/v1/listen", body: body, as: ListenStatus.self)
            global.emit(raw, ListenCommand.describe(s))
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stop", abstract: "Disarm listening (an utterance being recorded ends now and is kept).")
        @OptionGroup var global: GlobalOptions
        func run() async throws {
            let (s, raw) = try await global.client.call(.DELETE, "/v1/listen", as: ListenStatus.self)
            global.emit(raw, ListenCommand.describe(s))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Whether recd is listening, and what it has kept.")
        @OptionGroup var global: GlobalOptions
        func run() async throws {
            guard let (s, raw) = try await global.fetchToShow(.GET, "/v1/listen", as: ListenStatus.self) else { return }
            global.emit(raw, ListenCommand.describe(s))
        }
    }
}
