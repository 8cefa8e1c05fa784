// recd-media: a media worker. recd starts one per job (MediaWorkerPool) with its socket as
// descriptor 3; all of recd's FFmpeg work happens here, never in the daemon (docs/design.md, "One
// FFmpeg boundary"). With --transcriber it starts recd's transcriber instead, with --voice-detector
// listening's voice detector. No logic here.
import Foundation
import JournalLog
import Logging
import MediaWorkerServer
import RecdAPI

// recd-media PARENT_PID VERSION …: recd passes its own version, and a worker of another (the package
// upgraded under a running recd) refuses to serve rather than speak a wire it may not share.
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count > 1 {
    guard arguments[1] == RecdVersion.current else {
        FileHandle.standardError.write(Data("recd-media \(RecdVersion.current), recd \(arguments[1]): restart recd (its media worker was replaced, as by a package upgrade)\n".utf8))
        exit(75)
    }
    arguments.remove(at: 1)
}
if arguments.count > 1 && arguments[1] == "--transcriber" {
    TranscriberLauncher.run(arguments: [arguments[0]] + arguments.dropFirst(2))
}
if arguments.count > 1 && arguments[1] == "--voice-detector" {
    TranscriberLauncher.runVoiceDetector(arguments: [arguments[0]] + arguments.dropFirst(2))
}
let journal = JournalLogHandler.stderrIsJournal()
MediaWorkerProcess.run(arguments: arguments) { label, level in
    if journal { return JournalLogHandler(label: label, level: level) }
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = level
    return handler
}
