// `recctl import`: bring recordings made elsewhere into the library.
import ArgumentParser
import FoundationEssentials
import Glibc
import RecdAPI

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add audio or video files made elsewhere to the library (saved at once).",
        discussion: """
        The file's bytes are sent to recd over its socket (no shared filesystem is assumed). AAC in MP4/M4A, \
        Opus and FLAC (in any container) and H.264 + AAC videos are kept as they are; ALAC becomes FLAC (both \
        lossless); other audio (WAV, MP3, Ogg Vorbis, ...) is encoded to --format (else recd's default). The title comes from the file's tags, else its name; the created time from its \
        tags, else its modification time. A file already imported is reported, not stored twice. Files that \
        cannot be imported are said, and the others still go in (exit status 1 if any failed).
        """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var metadata: MetadataOptions
    @Option(help: ArgumentHelp("What a file that has to be encoded becomes: aac, opus or flac (default: recd's --default-format).",
                               valueName: "aac|opus|flac"))
    var format: RecordingFormat?
    @Argument(help: "Files to import.") var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give the files to import") }
        if metadata.title != nil && files.count > 1 { throw ValidationError("--title names one recording: give one file with it") }
    }

    /// `?name=…&title=…` with every value percent-encoded (a query value may hold '&', '=', '+').
    static func query(_ items: [(String, String?)]) -> String {
        items.compactMap { k, v in v.map { "\(k)=\($0.percentEncoded(keeping: "-._~"))" } }
            .joined(separator: "&")
    }

    func run() async throws {
        var failed = 0
        for file in files {
            let url = URL(fileURLWithPath: file)
            var info = stat()
            let found = stat(file, &info) == 0
            let problem = !found ? (errno == ENOENT ? "no such file" : String(cString: strerror(errno)))
                : info.st_mode & S_IFMT == S_IFDIR ? "is a directory: give the files in it" : nil
            if let problem {
                // Said as the daemon's refusals are, one per file, so the others' replies still come.
                Main.report(code: "local", "\(file): \(problem)")
                failed += 1
                continue
            }
            // As Foundation's FileManager gave the modification date (a `Date` of seconds and nanoseconds).
            let modified = String(cFormat: "%.3f", Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
                .timeIntervalSince1970)
            let path = "/v1/recordings/import?" + Self.query([
                ("name", url.lastPathComponent), ("title", metadata.title), ("notes", metadata.notes),
                ("purpose", metadata.purpose.map { $0.lowercased() }), ("modified", modified), ("format", format?.rawValue)])
            do {
                let reply = try await global.client.upload(path, file: file)
                try RecdClient.check(reply)
                let r = try APIJSON.decoder().decode(Recording.self, from: reply.body)
                // Dated when it was recorded (docs/usage.md): when that is not now, say where it sorts
                // (under newer takes, unless none is newer: then it is the top of Recent all the same).
                var dated = ""
                if Date().timeIntervalSince(r.createdAt) > 60 {
                    let newest = try? await global.client.call(.GET, "/v1/recordings?limit=1", as: RecordingList.self).0.recordings.first?.id
                    dated = "\n  dated \(Output.date(r.createdAt)) (when it was recorded)"
                        + (newest == r.id ? "" : ": listed there in Recent, not at the top")
                }
                global.emit(reply.body, "Imported ✓ \(Output.oneLine(r)) from \(url.lastPathComponent)" + dated)
            } catch let failure as ClientFailure where failure.isBusy {
                throw failure   // recd takes nothing now: the next files would be refused the same way
            } catch ClientFailure.refused(_, let body) {
                if global.json {
                    Console.out((try? APIJSON.encoder().encode(body)).map { $0 + Data("\n".utf8) } ?? Data())
                } else {
                    Console.err(Data("recctl: \(body.error.message)\n".utf8))
                }
                failed += 1
            }
        }
        if failed > 0 { throw ExitCode(ExitStatus.refused) }
    }
}
