// `recctl enhance`: a cleaned copy of a recording's sound, kept beside it (issue 47).
import ArgumentParser
import FoundationEssentials
import NIOHTTP1
import RecdAPI

struct Enhance: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enhance",
        abstract: "Make a cleaned copy of a recording (noise reduced, speech levelled); the original is kept as it is.",
        discussion: """
        The copy is made from the recording's sound with FFmpeg's filters (a high-pass under the voice, \
        an FFT denoiser that follows the noise floor, a gain to -16 LUFS and a limiter) and kept beside it; \
        asking again makes it again. Listen to it with `recctl play ID --enhanced`, copy it out with \
        `recctl media ID --enhanced`, compare the two in the web app's player (recctl ui), and remove it \
        with --remove. A trim in place or a delete of the recording removes its copy. Audio recordings only.
        """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Flag(help: "Remove the recording's enhanced copy (the recording stays).") var remove = false
    @Flag(help: "Say whether it has one, and how it was made; make nothing.") var show = false

    func validate() throws {
        if remove && show { throw ValidationError("give --remove or --show, not both") }
    }

    func run() async throws {
        let path = "/v1/recordings/\(try idPath(id))/enhanced"
        let method: HTTPMethod = remove ? .DELETE : show ? .GET : .POST
        guard let (status, raw) = try await global.fetchToShow(method, path, as: EnhanceStatus.self) else { return }
        let id = Output.shortID(status.recordingID)
        guard let copy = status.copy else {
            return global.emit(raw, remove ? "Enhanced copy removed ✓ (\(id)); the recording is as it was"
                                            : "\(id) has no enhanced copy (recctl enhance \(id) makes one)")
        }
        let level = copy.loudness.map { to in copy.originalLoudness.map { String(cFormat: "%.1f → %.1f LUFS", $0, to) } ?? String(cFormat: "%.1f LUFS", to) }
        var said = show ? "Enhanced copy of \(id), made \(Output.date(copy.createdAt))" : "Enhanced copy made ✓ (\(id))"
        said += ": \(Output.duration(copy.duration)), \(byteCountString(copy.sizeBytes))" + (level.map { ", \($0)" } ?? "")
        said += "\n  filters: \(copy.filters)\n  play it: recctl play \(id) --enhanced; copy it out: recctl media \(id) --enhanced"
        global.emit(raw, said)
    }
}
