// recctl events: the daemon's event stream as JSON lines.
import ArgumentParser
import FoundationEssentials
import Glibc
import RecdAPI

extension EventType: ExpressibleByArgument {}

struct Events: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print recd's events as JSON lines until interrupted (meter levels, recording and playback changes, library changes).",
        discussion: "Types: \(EventType.allCases.map(\.rawValue).joined(separator: ", ")).")
    @OptionGroup var global: GlobalOptions
    @Option(name: .customLong("type"), help: ArgumentHelp("Only events of this type (repeatable).", valueName: "type"))
    var types: [EventType] = []

    func run() async throws {
        var path = "/v1/events"
        if !types.isEmpty { path += "?type=" + types.map(\.rawValue).joined(separator: ",") }
        // Written unbuffered: each line as soon as it comes, also into a pipe.
        try await global.client.events(path) { json in Console.out(Data((json + "\n").utf8)) }
    }
}
