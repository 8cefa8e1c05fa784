// recctl: the command-line client of recd.
import ArgumentParser
import Foundation
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
        """,
        version: RecdVersion.current,
        subcommands: [Status.self, Record.self, Save.self, Discard.self, List.self, Show.self, Edit.self, Delete.self,
                      Play.self, Playback.self, Played.self, Top.self, Media.self, Poster.self, Waveform.self, Devices.self, Events.self, Export.self, Check.self])
}

enum ExitStatus {
    static let ok: Int32 = 0, refused: Int32 = 1, usage: Int32 = 2, unreachable: Int32 = 3
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
    let rest = Array(args[i...])
    if let dashdash = rest.firstIndex(of: "--") {
        return Array(rest[..<dashdash]) + leading + Array(rest[dashdash...])
    }
    return rest + leading
}

@main
enum Main {
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try RecCtl.parseAsRoot(hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst())))
        } catch {
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
            case .refused(_, let body):
                var message = "recctl: \(body.error.message)"
                if let m = body.error.matches, !m.isEmpty { message += "\nmatching ids:\n  " + m.joined(separator: "\n  ") }
                FileHandle.standardError.write(Data((message + "\n").utf8))
                exit(ExitStatus.refused)
            case .unreachable(let socket, let reason):
                FileHandle.standardError.write(Data("""
                    recctl: recd is not reachable at \(socket): \(reason)
                    Start it with `recd` (or `systemctl --user start recd`), or point --socket / RECD_SOCKET at its socket.

                    """.utf8))
                exit(ExitStatus.unreachable)
            case .badReply(let message):
                FileHandle.standardError.write(Data("recctl: \(message)\n".utf8))
                exit(ExitStatus.refused)
            }
        } catch {
            // `recctl help` runs ArgumentParser's help command, which "fails" with the help text.
            exitForArgumentParser(error)
        }
    }

    /// Help and version requests print to stdout and exit 0; every other parsing or validation
    /// error is a usage error: message to stderr, exit 2.
    static func exitForArgumentParser(_ error: any Error) -> Never {
        if RecCtl.exitCode(for: error) == .success {
            print(RecCtl.fullMessage(for: error))
            exit(ExitStatus.ok)
        }
        FileHandle.standardError.write(Data((RecCtl.fullMessage(for: error) + "\n").utf8))
        exit(ExitStatus.usage)
    }
}
