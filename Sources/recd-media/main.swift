// recd-media: a media worker. recd starts one per job (MediaWorkerPool) with its socket as
// descriptor 3; all of recd's FFmpeg work happens here, never in the daemon (docs/design.md, "One
// FFmpeg boundary"). With --transcriber it starts recd's transcriber instead. No logic here.
import Foundation
import JournalLog
import Logging
import MediaWorkerServer

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count > 1 && arguments[1] == "--transcriber" {
    TranscriberLauncher.run(arguments: [arguments[0]] + arguments.dropFirst(2))
}
let journal = JournalLogHandler.stderrIsJournal()
MediaWorkerProcess.run(arguments: arguments) { label, level in
    if journal { return JournalLogHandler(label: label, level: level) }
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = level
    return handler
}
