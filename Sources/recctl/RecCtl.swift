// recctl: the command-line client of recd.
import ArgumentParser
import FoundationEssentials
import Glibc
import RecdAPI

struct RecCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recctl",
        abstract: "Control recd, the recording daemon, over its Unix socket.",
        discussion: """
        Ids may be given as any unique prefix of at least 4 characters.
        --json on any command prints the daemon's JSON reply.

        Exit codes:
          0  ok
          1  the daemon refused the request (its message is printed)
          2  usage error
          3  the daemon is not reachable (the socket that was tried is printed)
          4  the daemon is busy: it serves as many connections as it may; try again shortly
        """,
        version: RecdVersion.current,
        subcommands: [Status.self, Record.self, Save.self, Discard.self, List.self, Show.self, Edit.self, Trim.self, Enhance.self, Import.self, Delete.self,
                      Play.self, Playback.self, Played.self, Top.self, Media.self, Poster.self, Waveform.self, TranscriptCommand.self, Search.self, Mark.self, Markers.self, Devices.self, Events.self, Export.self, Check.self,
                      BackupCommand.self, Restore.self, ListenCommand.self, UI.self])
}

enum ExitStatus {
    static let ok: Int32 = 0, refused: Int32 = 1, usage: Int32 = 2, unreachable: Int32 = 3, busy: Int32 = 4
}

/// `recctl --socket S --json status` reads naturally, but ArgumentParser takes a subcommand's options
/// only after its name; so leading global options are moved to the end of the arguments.
func hoistingGlobalOptions(_ args: [String]) -> [String] {
    var leading: [String] = []
    var i = 0
    while i < args.count {
        let a = args[i]
        if a == "--json" || a.hasPrefix("--socket=") {
            leading.append(a); i += 1
        } else if a == "--socket", i + 1 < args.count {
            leading += [a, args[i + 1]]; i += 2
        } else {
            break
        }
    }
    guard !leading.isEmpty, i < args.count else { return args }
    // Right after the command's words, before its first option (or `--`): at the end they would be
    // taken as the value of an option left without one (`record start --title --json`, where a
    // title is any text, even one that starts with dashes).
    let rest = Array(args[i...])
    let at = rest.firstIndex(where: { $0.hasPrefix("-") }) ?? rest.endIndex
    return Array(rest[..<at]) + leading + Array(rest[at...])
}

/// `playback seek -15` as the help offers it: ArgumentParser would take `-15` for an option, so a
/// negative number after `seek` gets the `--` that makes it an argument.
func allowingNegativeSeek(_ args: [String]) -> [String] {
    guard let seek = args.firstIndex(of: "seek"), seek > 0, args[seek - 1] == "playback", !args.contains("--"),
          let target = args[(seek + 1)...].firstIndex(where: { $0.hasPrefix("-") && $0.dropFirst().first?.isNumber == true })
    else { return args }
    var out = args
    out.insert("--", at: target)
    return out
}

/// `--limit -1`, `trim --start -2`: ArgumentParser takes a value that starts with a dash for an option
/// and says the value is missing. A negative number after an option that takes a number is joined to
/// it (`--limit=-1`), so the command's own check says what is wrong with it.
func joiningNegativeValues(_ args: [String]) -> [String] {
    let numeric: Set<String> = ["--limit", "--offset", "--from", "--start", "--end", "--port"]
    var out: [String] = []
    var i = 0
    while i < args.count {
        if args[i] == "--" { out += args[i...]; break }
        if numeric.contains(args[i]), i + 1 < args.count, args[i + 1].hasPrefix("-"),
           args[i + 1].dropFirst().first.map({ $0.isNumber || $0 == "." }) == true {
            out.append(args[i] + "=" + args[i + 1])
            i += 2
            continue
        }
        out.append(args[i])
        i += 1
    }
    return out
}

/// A subcommand name a person probably meant: `lsit` → `list`. Walks the arguments down the
/// command tree and answers for the first word that is no command of the command it follows.
func suggestion(for args: [String]) -> (typed: String, meant: [String])? {
    var command: any ParsableCommand.Type = RecCtl.self
    for arg in args where !arg.hasPrefix("-") {
        let subcommands = command.configuration.subcommands
        guard !subcommands.isEmpty else { return nil }
        if let next = subcommands.first(where: { $0._commandName == arg }) { command = next; continue }
        let names = subcommands.map { $0._commandName }
        let close = names.filter { editDistance($0, arg) <= max(1, min(2, arg.count / 3)) || ($0.hasPrefix(arg) && arg.count >= 2) }
        return (arg, close)
    }
    return nil
}

/// Levenshtein distance, with a swap of two neighbours counting once (`lsit` is one step from `list`).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
    var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
        }
    }
    return d[a.count][b.count]
}

@main
enum Main {
    /// `--json` anywhere before a `--`: errors are printed as JSON too.
    static let jsonErrors: Bool = {
        let args = CommandLine.arguments.dropFirst()
        return args.prefix(while: { $0 != "--" }).contains("--json")
    }()

    static func main() async {
        let command: any ParsableCommand
        let args = hoistingGlobalOptions(joiningNegativeValues(allowingNegativeSeek(Array(CommandLine.arguments.dropFirst()))))
        do {
            command = try RecCtl.parseAsRoot(args)
        } catch {
            if RecCtl.exitCode(for: error) != .success, let (typed, meant) = suggestion(for: args) {
                let hint = meant.isEmpty ? "see `recctl --help`" : "did you mean " + meant.map { "'\($0)'" }.joined(separator: " or ") + "?"
                fail(code: "usage", "unknown command '\(typed)': \(hint)", status: ExitStatus.usage)
            }
            exitForArgumentParser(error)
        }
        do {
            if var async = command as? any AsyncParsableCommand {
                try await async.run()
            } else {
                var sync = command
                try sync.run()
            }
            exit(ExitStatus.ok)
        } catch let failure as ClientFailure {
            switch failure {
            case .refused(_, let body) where failure.isBusy:
                // recd is there and answered: not "start it", but "later".
                if jsonErrors {
                    Console.out(((try? APIJSON.encoder().encode(body)) ?? Data()) + Data("\n".utf8))
                    exit(ExitStatus.busy)
                }
                let said = body.error.message
                fail(code: "busy", "recd is busy: " + (said.hasPrefix("recd is ") ? String(said.dropFirst("recd is ".count)) : said),
                     hint: busyHint, status: ExitStatus.busy)
            case .busy(let socket, let reason):
                fail(code: "busy", "recd is busy at \(socket): its queue of connections waiting to be accepted is full (\(reason))",
                     hint: busyHint, status: ExitStatus.busy)
            case .refused(let status, let body):
                if jsonErrors {
                    let raw = (try? APIJSON.encoder().encode(body)) ?? Data()
                    Console.out(raw + Data("\n".utf8))
                    exit(ExitStatus.refused)
                }
                var message = "recctl: \(body.error.message)"
                if let m = body.error.matches, !m.isEmpty, status == 409 {
                    message += "\n" + (await describeMatches(m)).map { "  " + $0 }.joined(separator: "\n")
                }
                Console.err(Data((message + "\n").utf8))
                exit(ExitStatus.refused)
            case .unreachable(let socket, let reason):
                let start = getuid() == 0 || socket.hasPrefix("/run/recd/") ? "systemctl start recd" : "systemctl --user start recd"
                fail(code: "unreachable", "recd is not reachable at \(socket): \(reason)",
                     hint: "Start it with `recd` (or `\(start)`), or point --socket / RECD_SOCKET at its socket.",
                     status: ExitStatus.unreachable)
            case .badReply(let message):
                fail(code: "bad_reply", message, status: ExitStatus.refused)
            case .local(let message):
                fail(code: "local", message, status: ExitStatus.refused)
            }
        } catch let code as ExitCode {
            // A command that said what went wrong itself (import: some files failed).
            exit(code.rawValue)
        } catch {
            // `recctl help` runs ArgumentParser's help command, which "fails" with the help text.
            exitForArgumentParser(error)
        }
    }

    static let busyHint = "It takes no more connections now: try again shortly, or close some of your clients of recd."

    /// Help and version requests print to stdout and exit 0; every other parsing or validation
    /// error is a usage error: message to stderr, exit 2.
    static func exitForArgumentParser(_ error: any Error) -> Never {
        if RecCtl.exitCode(for: error) == .success {
            print(RecCtl.fullMessage(for: error))
            exit(ExitStatus.ok)
        }
        if jsonErrors { fail(code: "usage", RecCtl.message(for: error), status: ExitStatus.usage) }
        // One prefix for every error recctl prints: ArgumentParser's own start with "Error: ".
        var message = RecCtl.fullMessage(for: error)
        if message.hasPrefix("Error: ") { message = "recctl: " + message.dropFirst("Error: ".count) }
        Console.err(Data((message + "\n").utf8))
        exit(ExitStatus.usage)
    }

    /// An error of recctl's own, said and exited with `status`.
    static func fail(code: String, _ message: String, hint: String? = nil, status: Int32) -> Never {
        report(code: code, message, hint: hint)
        exit(status)
    }

    /// An error of recctl's own: `recctl: message` (and a hint) on stderr, or with --json
    /// `{"error": {"code", "message"}}` on stdout, as the daemon's errors are.
    static func report(code: String, _ message: String, hint: String? = nil) {
        if jsonErrors {
            var detail = ["code": code, "message": message]
            if let hint { detail["hint"] = hint }
            let raw = (try? APIJSON.encoder().encode(["error": detail])) ?? Data()
            Console.out(raw + Data("\n".utf8))
        } else {
            Console.err(Data(("recctl: \(message)\n" + (hint.map { $0 + "\n" } ?? "")).utf8))
        }
    }

    /// The recordings an ambiguous prefix matches, once each, with their titles.
    static func describeMatches(_ ids: [String]) async -> [String] {
        let client = RecdClient(socketPath: socketArgument() ?? DefaultPaths.socket())
        var lines: [String] = []
        for id in ids {
            if let (r, _) = try? await client.call(.GET, "/v1/recordings/\(id)", as: Recording.self) {
                lines.append("\(r.id.uuidString)  '\(Output.text(r.title))'  \(Output.date(r.createdAt))")
            } else {
                lines.append(id)
            }
        }
        return lines
    }

    /// --socket as given on the command line (the command's own parse is not at hand here).
    static func socketArgument() -> String? {
        let args = Array(CommandLine.arguments.dropFirst())
        for (i, a) in args.enumerated() {
            if a.hasPrefix("--socket=") { return String(a.dropFirst("--socket=".count)) }
            if a == "--socket", i + 1 < args.count { return args[i + 1] }
        }
        return nil
    }
}
