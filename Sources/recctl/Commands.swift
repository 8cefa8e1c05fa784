// recctl's command tree. Each command sends one request and prints the reply.
import ArgumentParser
import FoundationEssentials
import Glibc
import NIOHTTP1
import RecdAPI

struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("recd's socket (default: $RECD_SOCKET, else the daemon's default).",
                                            valueName: "path"))
    var socket: String = DefaultPaths.socket()

    @Flag(name: .long, help: "Print the daemon's JSON reply instead of a readable summary.")
    var json = false

    var client: RecdClient { RecdClient(socketPath: socket) }

    func validate() throws {
        if socket.isEmpty { throw ValidationError("--socket needs the path of recd's socket") }
    }

    /// Prints the raw JSON reply (as the daemon sent it) or the readable form.
    func emit(_ raw: Data, _ readable: @autoclosure () -> String) {
        if json {
            Console.out(raw.last == UInt8(ascii: "\n") ? raw : raw + Data("\n".utf8))
        } else {
            print(readable())
        }
    }

    /// A request whose reply is only shown. With --json the daemon's reply is printed as it came and
    /// nil returned, without decoding it (an error reply fails as with `call`): decoding it was a tenth
    /// of `recctl --json top 3`. Otherwise the decoded reply and its bytes, for `emit`.
    func fetchToShow<T: Decodable>(_ method: HTTPMethod, _ path: String, as type: T.Type) async throws -> (T, Data)? {
        guard json else { return try await client.call(method, path, as: type) }
        let reply = try await client.send(method, path)
        try RecdClient.check(reply)
        emit(reply.body, "")
        return nil
    }
}

/// --title/--notes/--purpose as a metadata patch.
struct MetadataOptions: ParsableArguments {
    // `.unconditional`: the next argument is the text even when it starts with a dash
    // (`--title "- memo"`, `--notes "-- a note"`); a title is free text, never an option.
    // (ArgumentParser refuses any argument that starts with three dashes before this applies:
    // `--notes=--- draft` passes one.)
    @Option(parsing: .unconditional,
            help: ArgumentHelp("Title (at most \(MetadataLimits.titleMaxCharacters) characters; blank = automatic).",
                               valueName: "text"))
    var title: String?

    @Option(parsing: .unconditional,
            help: ArgumentHelp("Notes (at most \(MetadataLimits.notesMaxCharacters) characters).", valueName: "text"))
    var notes: String?

    @Option(help: ArgumentHelp("Purpose: \(Purpose.allCases.map(\.rawValue).joined(separator: ", ")), or none.",
                               valueName: "purpose"))
    var purpose: String?

    /// `--title` is taken unconditionally, so `--title --json` (a value left out) would make `--json`
    /// the title: a text that is exactly one of recctl's options is refused as a missing value.
    func validate() throws {
        let options: Set<String> = ["--json", "--socket", "--help", "-h", "--title", "--notes", "--purpose", "--save",
                                    "--discard", "--yes", "-y", "--format", "--video", "--video-only", "--version",
                                    "--force", "--wait", "--from", "--as-new", "--start", "--end"]
        for (name, value) in [("--title", title), ("--notes", notes)] {
            if let value, options.contains(value) {
                throw ValidationError("missing value for '\(name)' ('\(value)' is one of recctl's options)")
            }
        }
        if let purpose, purpose.lowercased() != "none", Purpose.named(purpose) == nil {
            let typed = purpose.trimmingWhitespace().lowercased()
            let matches = Purpose.allCases.map(\.rawValue).filter { !typed.isEmpty && $0.hasPrefix(typed) }
            let names = Purpose.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError(matches.count > 1
                ? "--purpose \(Output.text(purpose)) is ambiguous: \(matches.joined(separator: " or ")); give more of it"
                : "--purpose \(Output.text(purpose)) is not one of \(names), or none (or a start of one of them)")
        }
    }

    var patch: MetadataPatch {
        MetadataPatch(title: PatchField(title), notes: PatchField(notes),
                      purpose: purpose.map { $0.lowercased() == "none" ? .null : .value(Purpose.named($0) ?? $0.lowercased()) } ?? .absent)
    }
}

extension Purpose {
    /// The purpose a person typed: its name, or a prefix of one name only ("motivation", "crav"),
    /// in any case. Nil when nothing or more than one matches (recd then refuses it by name).
    static func named(_ typed: String) -> String? {
        let t = typed.trimmingWhitespace().lowercased()
        guard !t.isEmpty else { return nil }
        let names = allCases.map(\.rawValue)
        if names.contains(t) { return t }
        let matches = names.filter { $0.hasPrefix(t) }
        return matches.count == 1 ? matches[0] : nil
    }
}

/// Path segment for a user-given id or prefix.
/// An empty one is a usage error here: `/v1/recordings/` is the whole list (and, with DELETE, the
/// delete-all route), so it must never reach the daemon as an id.
func idPath(_ id: String) throws -> String {
    if id.isEmpty { throw ValidationError("give a recording id (or a unique prefix of at least 4 characters)") }
    // What cannot be an id is a usage error here (exit 2), as the docs say, not recd's refusal (1).
    guard id.count >= 4, id.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
        throw ValidationError("'\(Output.text(id))' is not a recording id: give the id or a unique prefix of at least 4 of its characters (hex digits), as recctl list shows them")
    }
    return id.percentEncoded(keeping: "-")
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show what recd is doing.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        guard case let (s, raw)? = try await global.fetchToShow(.GET, "/v1/status", as: DaemonStatus.self) else { return }
        var lines = ["recd \(s.version) (pid \(s.pid)), up \(Output.duration(s.uptime))"]
        if let a = s.active {
            let what = "'\(Output.text(a.recording.title))' (\(Output.shortID(a.recording.id)))"
            switch s.activity {
            case .recording:
                let overruns = a.capture.map { $0.overruns > 0 ? ", \($0.overruns) overruns" : "" } ?? ""
                if a.paused {
                    lines.append("⏸ paused \(what) at \(Output.duration(a.elapsed)), for \(Output.duration(a.pausedFor))"
                                 + " (resume: recctl record resume)")
                } else {
                    lines.append("⏺ recording \(what) for \(Output.duration(a.elapsed))" + overruns
                                 + (a.pausedTotal > 0 ? " (paused \(Output.duration(a.pausedTotal)) in all)" : "")
                                 + Output.conversion(a.deviceFormat, a.recordedFormat))
                }
            case .starting: lines.append("starting to record \(what)")
            case .stopping: lines.append("⏹ stopping \(what): finalizing the file")
            case .idle: lines.append("idle")
            }
        } else {
            lines.append("idle")
        }
        if let p = s.playback { lines.append(Playback.describe(PlaybackStatus(playback: p, lastEnded: nil))) }
        // Listening is said first thing while armed (a person's privacy), its details in `recctl listen`.
        if let l = s.listening, l.armed {
            lines.insert("👂 " + (ListenCommand.describe(l).split(separator: "\n").first.map(String.init) ?? "listening")
                         + " (\(Output.count(l.utterances, "recording")) kept; recctl listen stop ends it)", at: 1)
        }
        lines.append("capture: \(s.captureDevice), \(s.sampleRate) Hz, \(s.channels) ch; playback: \(s.playbackDevice)")
        lines.append("library: \(s.counts["ready"] ?? 0) saved, \(s.counts["pending"] ?? 0) pending")
        lines.append("transcripts: " + Self.transcription(s.transcription))
        lines.append("data: \(s.dataDirectory)")
        if let f = s.lastFault {
            lines.append("last fault: recording \(Output.shortID(f.recordingID)) ended by itself at \(Output.date(f.at)): \(f.reason)")
        }
        if let r = s.recovery, !r.isClean { lines.append("recovery at start: " + Check.summary(r)) }
        global.emit(raw, lines.joined(separator: "\n"))
    }

    /// "base, 3 waiting, one 40 % done" / "off" / why not.
    static func transcription(_ t: TranscriptionStatus) -> String {
        switch t.state {
        case "off": return "off (recd --transcribe)"
        case "idle", "working":
            var parts = [t.model ?? "on"]
            if t.pending > 0 { parts.append("\(t.pending) waiting") }
            if let p = t.progress { parts.append("one \(Int(p * 100)) % done") }
            if t.done > 0 { parts.append("\(t.done) made since start") }
            return parts.joined(separator: ", ")
        default: return Output.text(t.message ?? t.state)
        }
    }
}

/// Audio (the default), video with sound, or a silent video; and how the sound is stored.
struct RecordingKindOptions: ParsableArguments {
    @Flag(help: "Record video from the camera, with sound from the microphone.") var video = false
    @Flag(help: "Record a silent video: the camera only, no sound.") var videoOnly = false
    @Option(help: ArgumentHelp("How the sound is stored: aac (plays everywhere), opus (a quarter of the size, for speech) or flac (lossless). Default: recd's --default-format. A video's sound is AAC.",
                               valueName: "aac|opus|flac"))
    var format: RecordingFormat?

    func validate() throws {
        if video && videoOnly { throw ValidationError("--video and --video-only exclude each other") }
        if let format, format != .aac, video || videoOnly {
            throw ValidationError("--format \(format.rawValue) is for audio recordings: a video's sound is AAC")
        }
    }

    var type: RecordingType { video || videoOnly ? .video : .audio }
    var audio: Bool { !videoOnly }
    var request: StartRecordingRequest { StartRecordingRequest(type: type, audio: audio, format: format?.rawValue) }
}

struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record in the terminal (no subcommand), or start, pause, resume or stop a recording.",
        discussion: """
        With no subcommand: starts recording, shows a timer and a level bar per channel, pauses and resumes \
        on p, stops on Enter or Ctrl-C, then offers to play the take, save it (asking for title, notes and \
        purpose) or discard it.
        """,
        subcommands: [Screen.self, Start.self, Pause.self, Resume.self, Stop.self],
        defaultSubcommand: Screen.self)

    /// `recctl record [--video | --video-only]`: a subcommand of its own (the default one) rather than
    /// flags of `record`, which ArgumentParser would also take from `record start --video`.
    struct Screen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "screen",
            abstract: "The recording screen (what `recctl record` runs): timer, level bars, Enter stops, then play/save/discard.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var kind: RecordingKindOptions

        func run() async throws {
            try await Record.interactive(global, kind.request)
        }
    }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start",
            abstract: "Start recording from the microphone (or, with --video, the camera and the microphone).",
            discussion: """
            --video records the camera with sound into a .mov; when the camera is missing or busy recd says so \
            and you can record audio only (without --video); when the microphone is missing, --video-only \
            records a silent video.
            """)
        @OptionGroup var global: GlobalOptions
        @OptionGroup var metadata: MetadataOptions
        @OptionGroup var kind: RecordingKindOptions

        func run() async throws {
            var request = kind.request
            request.metadata = metadata.patch
            let (reply, raw) = try await global.client.call(.POST, "/v1/record/start", body: request, as: StartRecordingResponse.self)
            let sources = [reply.video.map { "\($0.device) (\($0.width)x\($0.height) at \(String(cFormat: "%g", $0.fps)) fps)" }, reply.device]
                .compactMap { $0 }.joined(separator: " + ")
            let what = reply.video == nil ? "audio" : reply.device == nil ? "frame" : "sound"
            global.emit(raw, Say.started(reply.recording, from: sources)
                             + String(cFormat: ", first \(what) after %.0f ms", reply.startLatencyMs)
                             + Output.conversion(reply.deviceFormat, reply.recordedFormat))
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause",
            abstract: "Pause the recording: the sound (and picture) meanwhile stays out of the file; resume goes on in the same file.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let before = try await global.client.call(.GET, "/v1/status", as: DaemonStatus.self).0.active?.paused ?? false
            let (reply, raw) = try await global.client.call(.POST, "/v1/record/pause", as: RecordingPauseState.self)
            global.emit(raw, Say.paused(reply, already: before))
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused recording, in the same file.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let before = try await global.client.call(.GET, "/v1/status", as: DaemonStatus.self).0.active?.paused ?? true
            let (reply, raw) = try await global.client.call(.POST, "/v1/record/resume", as: RecordingPauseState.self)
            global.emit(raw, Say.resumed(reply, already: !before))
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop",
            abstract: "Stop the recording: keep it pending (default), --save it, or --discard it.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var metadata: MetadataOptions
        @Flag(help: "Save the recording into the library at once.") var save = false
        @Flag(help: "Throw the recording away.") var discard = false

        func validate() throws {
            if save && discard { throw ValidationError("--save and --discard exclude each other") }
        }

        func run() async throws {
            let then: StopDisposition = save ? .save : discard ? .discard : .keep
            // What is being discarded, to say it as `recctl discard` does (the reply has no recording then).
            let active = discard && !global.json
                ? try? await global.client.call(.GET, "/v1/status", as: DaemonStatus.self).0.active : nil
            let (reply, raw) = try await global.client.call(
                .POST, "/v1/record/stop", body: StopRecordingRequest(then: then, metadata: metadata.patch),
                as: StopRecordingResponse.self)
            let text: String
            if let r = reply.recording {
                text = Say.stopped(r)
                    + (reply.capture.overruns > 0 ? "\n\(Output.count(reply.capture.overruns, "overrun")), \(Output.count(reply.capture.droppedFrames, "frame")) lost" : "")
            } else if let active {
                text = Say.discarded(title: active.recording.title, id: active.recording.id, seconds: active.elapsed)
            } else {
                text = Say.discardedWhileStopping()
            }
            global.emit(raw, text)
        }
    }
}

struct Save: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "save", abstract: "Save a pending recording into the library.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var metadata: MetadataOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String

    func run() async throws {
        let (r, raw) = try await global.client.call(.POST, "/v1/recordings/\(idPath(id))/save", body: metadata.patch,
                                                    as: Recording.self)
        global.emit(raw, Say.saved(r))
    }
}

struct Discard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discard",
        abstract: "Discard a pending recording (file and metadata).",
        discussion: "Asks for confirmation unless --yes is given; without --yes and without a terminal to ask on, refuses.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Flag(name: [.short, .long], help: "Do not ask for confirmation.") var yes = false

    func validate() throws { try Delete.requireConfirmation(yes) }

    func run() async throws {
        let path = "/v1/recordings/\(try idPath(id))"
        let question = { (r: Recording) in Say.confirmDiscard + " ('\(Output.text(r.title))')" }
        guard try await Delete.confirmed(yes, global.client, path, question, else: Say.nothingDiscarded) else { return }
        let (r, raw) = try await global.client.call(.POST, path + "/discard", body: Optional<Int>.none, as: Recording.self)
        global.emit(raw, Say.discarded(r))
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List recordings (newest first by default).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Order: recent (newest first) or plays (most played first).") var by: ListOrder = .recent
    @Option(help: "At most this many (1-1000).") var limit: Int = 100
    @Option(help: "Skip this many.") var offset: Int = 0
    @Option(help: "Only recordings in this state: saved (the API's ready), pending, recording, missing.") var state: RecordingState?
    @Option(help: "Only this type: audio or video.") var type: RecordingType?

    func run() async throws {
        var q = ["by=\(by.rawValue)", "limit=\(limit)", "offset=\(offset)"]
        if let state { q.append("state=\(state.rawValue)") }
        if let type { q.append("type=\(type.rawValue)") }
        guard case let (list, raw)? = try await global.fetchToShow(.GET, "/v1/recordings?" + q.joined(separator: "&"),
                                                                   as: RecordingList.self) else { return }
        global.emit(raw, describe(list))
    }

    /// The seed's empty-library text only when the library is empty; otherwise what this page holds
    /// and how to see the rest.
    func describe(_ list: RecordingList) -> String {
        if list.recordings.isEmpty {
            if list.total == 0 && state == nil && type == nil { return Say.emptyLibrary }
            if list.total == 0 { return "No \(Self.noun(state: state, type: type))." }
            return "No recordings from \(list.offset + 1) on: there \(list.total == 1 ? "is" : "are") \(list.total) in all"
                + " (try --offset \(max(0, list.total - limit)))."
        }
        var text = Output.table(list.recordings)
        let last = list.offset + list.recordings.count
        if list.total > last || list.offset > 0 {
            text += "\n(\(list.offset + 1)–\(last) of \(list.total)"
            text += list.total > last ? "; the next page: \(command(offset: last)))" : ")"
        }
        return text
    }

    /// This list's command at another offset: the same order, filters and page size, so the next page
    /// follows on from this one.
    func command(offset: Int) -> String {
        var words = ["recctl list"]
        if by != .recent { words.append("--by \(by.rawValue)") }
        if let state { words.append("--state \(state == .ready ? "saved" : state.rawValue)") }
        if let type { words.append("--type \(type.rawValue)") }
        words.append("--offset \(offset)")
        if limit != 100 { words.append("--limit \(limit)") }
        return words.joined(separator: " ")
    }

    /// "pending audio recordings", "video recordings being recorded", "recordings missing their file".
    static func noun(state: RecordingState?, type: RecordingType?) -> String {
        let before = [state == .pending ? "pending" : state == .ready ? "saved" : nil, type?.rawValue].compactMap { $0 }
        let after = state == .recording ? " being recorded" : state == .missing ? " missing their file" : ""
        return (before + ["recordings"]).joined(separator: " ") + after
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one recording.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String

    func run() async throws {
        guard case let (r, raw)? = try await global.fetchToShow(.GET, "/v1/recordings/\(idPath(id))", as: Recording.self)
        else { return }
        global.emit(raw, Output.details(r))
    }
}

struct Edit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Change a recording's title, notes or purpose (a blank title becomes the automatic one).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var metadata: MetadataOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String

    func validate() throws {
        if metadata.patch.isEmpty { throw ValidationError("nothing to change: give --title, --notes or --purpose") }
    }

    func run() async throws {
        let (r, raw) = try await global.client.call(.PATCH, "/v1/recordings/\(idPath(id))", body: metadata.patch,
                                                    as: Recording.self)
        global.emit(raw, Say.updated(r))
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the library's metadata (not the files) as CSV or JSON.",
        discussion: """
        Writes recd_export_YYYY-MM-DD.csv|json in the current directory unless -o names a file or - (stdout). \
        An existing file is not replaced unless you confirm, or give --force.
        """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "csv or json.") var format: ExportFormat = .csv
    @Option(name: .shortAndLong, help: ArgumentHelp("Output file, or - for standard output.", valueName: "file"))
    var output: String?
    @Flag(name: .long, help: "Replace an existing file without asking.") var force = false

    func run() async throws {
        let reply = try await global.client.send(.GET, "/v1/export?format=\(format.rawValue)")
        try RecdClient.check(reply)
        let name = output ?? Self.fileName(from: reply.headers) ?? "recd_export.\(format.rawValue)"
        try global.mayWrite(name, force: force)
        try global.save(reply.body, to: name) { name, _ in "Data exported ✓ \(name)" }
    }

    static func fileName(from headers: HTTPHeaders) -> String? {
        guard let d = headers.first(name: "Content-Disposition"),
              let r = d.firstRange(of: "filename=\"") else { return nil }
        let rest = d[r.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        let name = String(rest[..<end])
        return name.contains("/") ? nil : name
    }
}

extension ListOrder: ExpressibleByArgument {}
/// `saved` (the word people use) or the API's `ready`, and the others by their API names.
extension RecordingState: ExpressibleByArgument {
    public init?(argument: String) { self.init(word: argument) }
    public static var allValueStrings: [String] { ["saved", "pending", "recording", "missing"] }
}
extension RecordingType: ExpressibleByArgument {}
extension RecordingFormat: ExpressibleByArgument {}
extension ExportFormat: ExpressibleByArgument {}

struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a recording, or all of them, for good (file and metadata).",
        discussion: "Asks for confirmation unless --yes is given; without --yes and without a terminal to ask on, refuses.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String?
    @Flag(help: "Delete every recording (pending ones and the one being recorded included).") var all = false
    @Flag(name: [.short, .long], help: "Do not ask for confirmation.") var yes = false

    func validate() throws {
        if all == (id != nil) { throw ValidationError("give either a recording id or --all") }
        try Self.requireConfirmation(yes)
    }

    /// Without --yes a person must be there to answer.
    static func requireConfirmation(_ yes: Bool) throws {
        if !yes && isatty(STDIN_FILENO) == 0 {
            throw ValidationError("refusing without confirmation: standard input is not a terminal; add --yes")
        }
    }

    func run() async throws {
        let client = global.client
        if all {
            if !yes, !Self.confirm(Say.confirmDeleteAll) {
                print(Say.nothingDeleted)
                return
            }
            let (reply, raw) = try await client.call(.DELETE, "/v1/recordings?confirm=all", as: DeleteAllResponse.self)
            global.emit(raw, Say.allDeleted(recordings: reply.deletedRecordings, files: reply.deletedFiles))
            return
        }
        let path = "/v1/recordings/\(try idPath(id!))"
        guard try await Self.confirmed(yes, client, path, Say.confirmDelete, else: Say.nothingDeleted) else { return }
        let (r, raw) = try await client.call(.DELETE, path, as: Recording.self)
        global.emit(raw, Say.deleted(r))
    }

    /// Unless `yes`: whether the person confirms `question` about the recording at `path`; `refused`
    /// is said when they do not.
    static func confirmed(_ yes: Bool, _ client: RecdClient, _ path: String, _ question: (Recording) -> String,
                          else refused: String) async throws -> Bool {
        if yes { return true }
        let (r, _) = try await client.call(.GET, path, as: Recording.self)
        if confirm(question(r)) { return true }
        print(refused)
        return false
    }

    /// Asks on the terminal; only an explicit yes confirms. On a terminal one key answers, as the
    /// record screen's questions do (no Enter); from a pipe, a line ("y" or "yes").
    static func confirm(_ question: String) -> Bool {
        Console.out(Data((question + " [y/N] ").utf8))
        guard isatty(STDIN_FILENO) != 0 else {
            guard let answer = readLine()?.trimmingWhitespace().lowercased() else { return false }
            return answer == "y" || answer == "yes"
        }
        return oneKey() == "y"
    }

    /// One key from the terminal, echoed with its newline. ISIG is off meanwhile, so Ctrl-C comes as
    /// its byte (a no) and the terminal is always put back as it was.
    static func oneKey() -> Character? {
        guard KeyMode.enter(signals: false) else { return nil }
        defer { KeyMode.leave() }
        var bytes: [UInt8] = []
        var b: UInt8 = 0
        guard read(STDIN_FILENO, &b, 1) == 1 else { Console.out(Data("\n".utf8)); return nil }
        bytes.append(b)
        // The rest of one UTF-8 character: its lead byte says how many follow.
        let more = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0
        for _ in 0..<more where read(STDIN_FILENO, &b, 1) == 1 { bytes.append(b) }
        let key = String(decoding: bytes, as: UTF8.self).lowercased().first
        let shown = key.map { $0.isLetter || $0.isNumber ? String($0) : "" } ?? ""
        Console.out(Data((shown + "\n").utf8))
        return key
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the catalog against Recordings/ and show what recovery found; --repair fixes what it can.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Apply the start-up recovery now (salvage, adopt, quarantine, mark missing, settle interrupted removals).")
    var repair = false

    func run() async throws {
        guard case let (report, raw)? = repair
            ? try await global.fetchToShow(.POST, "/v1/check/repair", as: ConsistencyReport.self)
            : try await global.fetchToShow(.GET, "/v1/check", as: ConsistencyReport.self) else { return }
        var lines: [String] = []
        if let done = report.repaired { lines.append("repair: " + Self.summary(done)) }
        if report.isConsistent {
            lines.append("consistent: every saved or pending recording has its file, every file has a recording")
        } else {
            for id in report.rowsWithoutFile { lines.append("file missing for recording \(id.uuidString)") }
            for id in report.filesBack { lines.append("file back for missing recording \(id.uuidString)") }
            for f in report.filesWithoutRow { lines.append("file with no recording: Recordings/\(f)") }
            for id in report.interruptedRecordings { lines.append("interrupted recording not salvaged: \(id.uuidString)") }
            for u in report.unsettled { lines.append("leftover of an interrupted operation: Recordings/\(u)") }
            lines.append("run `recctl check --repair` to fix these")
        }
        let stillMissing = report.missing.count - report.filesBack.count
        if stillMissing > 0 { lines.append("\(stillMissing) recording(s) marked missing (delete them, or put their files back and run `recctl check --repair`)") }
        if let last = report.lastRecovery, report.repaired == nil {
            lines.append("last recovery (\(Output.date(last.ranAt))): " + Self.summary(last))
        }
        global.emit(raw, lines.joined(separator: "\n"))
    }

    static func summary(_ r: RecoveryReport) -> String {
        if r.isClean { return "nothing to do" }
        var parts: [String] = []
        if !r.salvaged.isEmpty { parts.append("\(r.salvaged.count) interrupted recording(s) salvaged") }
        if !r.removedEmpty.isEmpty { parts.append("\(r.removedEmpty.count) empty interrupted recording(s) removed") }
        if !r.adopted.isEmpty { parts.append("\(r.adopted.count) file(s) adopted") }
        if !r.quarantined.isEmpty { parts.append("\(r.quarantined.count) non-media file(s) quarantined: \(r.quarantined.joined(separator: ", "))") }
        if !r.markedMissing.isEmpty { parts.append("\(r.markedMissing.count) recording(s) marked missing") }
        if !r.foundAgain.isEmpty { parts.append("\(r.foundAgain.count) missing recording(s) restored (their file is back)") }
        if !r.replacementsFinished.isEmpty { parts.append("\(r.replacementsFinished.count) interrupted trim(s) finished") }
        if !r.removalsUndone.isEmpty { parts.append("\(r.removalsUndone.count) interrupted removal(s) undone") }
        if !r.removalsFinished.isEmpty { parts.append("\(r.removalsFinished.count) interrupted removal(s) finished") }
        if r.deleteAllRolledBack { parts.append("an interrupted 'delete all' rolled back") }
        if r.deleteAllFinished { parts.append("an interrupted 'delete all' finished") }
        if !r.temporaryFilesRemoved.isEmpty { parts.append("\(r.temporaryFilesRemoved.count) temporary file(s) removed") }
        parts += r.problems.map { "problem: \($0)" }
        return parts.joined(separator: "; ")
    }
}
