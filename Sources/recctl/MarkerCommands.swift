// recctl mark and recctl markers (issue 47): a moment of a recording to come back to.
import ArgumentParser
import FoundationEssentials
import RecdAPI

struct Mark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mark a moment of a recording, with an optional label: now (the take being recorded, or the recording recd is playing), or --at a time.",
        discussion: "recctl mark                  the take (or the playback) now\nrecctl mark \"the dentist\"    the same, labelled\nrecctl mark ID Intro --at 1:05    a recording, at 1:05\nIn recctl record and recctl play --wait, the m key marks too.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("A recording id (or a unique prefix of at least 4 characters), then the label; without an id, the take being recorded or the recording playing.", valueName: "id-or-label"))
    var words: [String] = []
    @Option(help: ArgumentHelp("The label (instead of giving it after the id).", valueName: "label")) var label: String?
    @Option(help: ArgumentHelp("Where: seconds (90), m:ss (1:30) or h:mm:ss; default now.", valueName: "time")) var at: String?

    /// The id when the first word looks like one (4 or more hex digits and dashes, as recctl list
    /// shows them) and more words follow or `--label` is given; otherwise every word is the label.
    var split: (id: String?, label: String?) {
        guard let first = words.first else { return (nil, label) }
        let looksLikeID = first.count >= 4 && first.allSatisfy { $0.isHexDigit || $0 == "-" }
        if looksLikeID && (words.count > 1 || label != nil || at != nil) {
            return (first, label ?? (words.count > 1 ? words.dropFirst().joined(separator: " ") : nil))
        }
        if label != nil { return (nil, nil) }   // refused in validate
        return (nil, words.joined(separator: " "))
    }

    func validate() throws {
        if label != nil, words.count > (split.id == nil ? 0 : 1) { throw ValidationError("give the label once: after the id, or with --label") }
        if let at { _ = try Self.seconds(at) }
        if at != nil, split.id == nil { throw ValidationError("--at needs the recording's id: recctl mark ID --at TIME") }
    }

    static func seconds(_ text: String) throws -> Double {
        do {
            let seek = try SeekArgument.parse(text)
            guard let to = seek.to else { throw ValidationError("--at takes a time from the start (90, 1:30), not a move (+N)") }
            return to
        } catch let e as SeekArgument.ParseError {
            throw ValidationError(e.description.replacing("a position", with: "a time"))
        }
    }

    func run() async throws {
        let (idArg, label) = split
        let id: String
        if let idArg {
            id = try idPath(idArg)
        } else {
            let (s, _) = try await global.client.call(.GET, "/v1/status", as: DaemonStatus.self)
            if let take = s.active?.recording.id {
                id = take.uuidString
            } else if let playing = s.playback?.recording.id {
                id = playing.uuidString
            } else {
                Console.err("recctl: nothing is being recorded or played: give the recording's id (recctl mark ID --at TIME)\n")
                throw ExitCode(ExitStatus.refused)
            }
        }
        let body = MarkerRequest(time: try at.map(Self.seconds), label: label)
        let (m, raw) = try await global.client.call(.POST, "/v1/recordings/\(id)/markers", body: body, as: Marker.self)
        global.emit(raw, Self.said(m))
    }

    static func said(_ m: Marker) -> String {
        "⚑ marked \(Output.duration(m.time))" + (m.label.isEmpty ? "" : " '\(Output.text(m.label))'") + " (\(Output.shortID(m.id)))"
    }
}

struct Markers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a recording's markers, or rename, move or delete one.",
        discussion: "recctl markers ID\nrecctl markers ID --rename MARKER --label \"new label\"\nrecctl markers ID --move MARKER --to 1:30\nrecctl markers ID --delete MARKER\nMARKER is a marker's id or a unique prefix of it, as the list shows.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Option(help: ArgumentHelp("Give a marker the --label given (\"\" for none).", valueName: "marker")) var rename: String?
    @Option(help: ArgumentHelp("Move a marker --to a time.", valueName: "marker")) var move: String?
    @Option(help: ArgumentHelp("Delete a marker.", valueName: "marker")) var delete: String?
    @Option(help: ArgumentHelp("The new label, with --rename.", valueName: "label")) var label: String?
    @Option(help: ArgumentHelp("The new time, with --move: seconds (90), m:ss (1:30) or h:mm:ss.", valueName: "time")) var to: String?

    func validate() throws {
        if [rename, move, delete].compactMap({ $0 }).count > 1 { throw ValidationError("--rename, --move and --delete: one at a time") }
        if rename != nil, label == nil { throw ValidationError("--rename needs the new --label (\"\" for none)") }
        if move != nil, to == nil { throw ValidationError("--move needs --to TIME") }
        if label != nil, rename == nil { throw ValidationError("--label goes with --rename MARKER") }
        if to != nil, move == nil { throw ValidationError("--to goes with --move MARKER") }
        if let to { _ = try Mark.seconds(to) }
    }

    func run() async throws {
        let path = "/v1/recordings/\(try idPath(id))/markers"
        guard let target = rename ?? move ?? delete else {
            guard let (list, raw) = try await global.fetchToShow(.GET, path, as: MarkerList.self) else { return }
            return global.emit(raw, Self.describe(list))
        }
        let (list, _) = try await global.client.call(.GET, path, as: MarkerList.self)
        let marker = try Self.resolve(target, in: list)
        let one = path + "/" + marker.id.uuidString
        if delete != nil {
            let (left, raw) = try await global.client.call(.DELETE, one, as: MarkerList.self)
            return global.emit(raw, "Marker \(Output.duration(marker.time)) deleted ✓" + (left.markers.isEmpty ? "" : "\n" + Self.describe(left)))
        }
        let patch = MarkerPatch(time: try to.map(Mark.seconds), label: label)
        let (m, raw) = try await global.client.call(.PATCH, one, body: patch, as: Marker.self)
        global.emit(raw, "Marker updated ✓ " + Self.line(m))
    }

    /// A marker by its id or a unique prefix of it.
    static func resolve(_ text: String, in list: MarkerList) throws -> Marker {
        let found = list.markers.filter { $0.id.uuidString.lowercased().hasPrefix(text.lowercased()) }
        guard !text.isEmpty, found.count == 1, let m = found.first else {
            Console.err("recctl: " + (found.count > 1 ? "'\(Output.text(text))' is the start of \(found.count) markers' ids: give more of it"
                                      : "recording \(Output.shortID(list.recordingID)) has no marker '\(Output.text(text))' (recctl markers \(Output.shortID(list.recordingID)) lists them)") + "\n")
            throw ExitCode(ExitStatus.refused)
        }
        return m
    }

    static func line(_ m: Marker) -> String {
        "\(Output.shortID(m.id))  \(Output.duration(m.time))  \(m.label.isEmpty ? "(no label)" : Output.text(m.label))"
    }

    static func describe(_ list: MarkerList) -> String {
        list.markers.isEmpty ? "No markers (recctl mark \(Output.shortID(list.recordingID)) --at TIME adds one)."
            : list.markers.map(line).joined(separator: "\n")
    }
}
