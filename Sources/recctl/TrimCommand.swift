// `recctl trim`: cut the dead air off a recording's ends, losslessly.
import ArgumentParser
import FoundationEssentials
import Glibc
import RecdAPI

struct Trim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Keep only --start to --end of a recording (no re-encoding); --as-new keeps the original.",
        discussion: """
        Times are seconds or m:ss from the recording's start (90, 1:30.5); --start defaults to the start, \
        --end to the end. The cut is lossless (the compressed audio is copied; an edit list makes it exact) \
        and crash-safe: at any instant the recording is either the old one or the trimmed one, whole. In \
        place, the waveform and duration follow the cut and the play count stays; --as-new adds the cut as a \
        new recording (play count 0) and leaves the original as it was.
        """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Option(help: ArgumentHelp("Where the kept part begins: seconds or m:ss.", valueName: "time")) var start: String?
    @Option(help: ArgumentHelp("Where the kept part ends: seconds or m:ss.", valueName: "time")) var end: String?
    @Flag(help: "Add the cut as a new recording and keep the original.") var asNew = false

    static func seconds(_ text: String, option: String) throws -> Double {
        guard let t = (try? SeekArgument.parse(text))?.to else {
            throw ValidationError("--\(option) \(text): give a time from the recording's start, such as 90 or 1:30")
        }
        return t
    }

    func validate() throws {
        if start == nil && end == nil { throw ValidationError("give --start, --end or both") }
        if let start { _ = try Self.seconds(start, option: "start") }
        if let end { _ = try Self.seconds(end, option: "end") }
    }

    func run() async throws {
        let request = TrimRequest(start: try start.map { try Self.seconds($0, option: "start") },
                                  end: try end.map { try Self.seconds($0, option: "end") }, asNew: asNew)
        let (r, raw) = try await global.client.call(.POST, "/v1/recordings/\(idPath(id))/trim", body: request, as: Recording.self)
        global.emit(raw, asNew ? "Trimmed copy added ✓ \(Output.oneLine(r))" : "Recording trimmed ✓ \(Output.oneLine(r))")
    }
}
