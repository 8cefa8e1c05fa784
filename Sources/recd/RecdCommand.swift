// recd: the daemon. Parses options, builds the engine, runs. No logic here.
import ArgumentParser
import Engine
import Foundation
import Logging
import RecdAPI
import Server

@main
struct RecdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recd",
        abstract: "Media recording manager daemon: records from ALSA into Recordings/, keeps a catalog, serves recctl.",
        discussion: """
        Serves HTTP/1.1 with JSON bodies on a Unix socket, e.g.
          curl --unix-socket "$RECD_SOCKET" http://recd/v1/status
        Environment: RECD_DATA_DIR, RECD_SOCKET, RECD_LOG_LEVEL (same meaning as the options).
        Under systemd: Type=notify readiness (READY=1 after recovery, STATUS=, WATCHDOG=1, STOPPING=1),
        and log lines with syslog priority prefixes when stderr is the journal.
        """,
        version: RecdVersion.current)

    @Option(name: .long, help: ArgumentHelp("Data directory (catalog.sqlite, Recordings/).", valueName: "dir"))
    var dataDir: String = DefaultPaths.dataDirectory()

    @Option(name: .long, help: ArgumentHelp("Unix socket to serve on.", valueName: "path"))
    var socket: String = DefaultPaths.socket()

    @Option(name: .long, help: ArgumentHelp("Group that may use recd: the socket's group, and allowed by the peer-credential check (default: recd's own group).", valueName: "group"))
    var socketGroup: String?

    @Option(name: .long, help: ArgumentHelp("Mode of the socket file, in octal.", valueName: "mode"))
    var socketMode: String = "660"

    @Option(name: .long, help: "Connections served at once; more get 503 too_many_connections.")
    var maxConnections: Int = 64

    @Option(name: .long, help: ArgumentHelp("ALSA PCM to record from.", valueName: "pcm"))
    var captureDevice: String = "default"

    @Option(name: .long, help: ArgumentHelp("ALSA PCM to play through.", valueName: "pcm"))
    var playbackDevice: String = "default"

    @Option(name: .long, help: "Capture channels (1 or 2).")
    var channels: Int = 1

    @Option(name: .long, help: "AAC bit rate in bits per second.")
    var bitrate: Int = 128_000

    @Option(name: .long, help: ArgumentHelp("Refuse to start a recording when Recordings/ has less free space (MB).",
                                            valueName: "MB"))
    var minFreeMb: Int = 200

    @Option(name: .long, help: ArgumentHelp("Meter readings (events) every this many milliseconds, 10-1000.", valueName: "ms"))
    var meterIntervalMs: Int = 50

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical (default: $RECD_LOG_LEVEL, else info).")
    var logLevel: String = ProcessInfo.processInfo.environment["RECD_LOG_LEVEL"] ?? "info"

    func validate() throws {
        guard (1...2).contains(channels) else { throw ValidationError("--channels must be 1 or 2") }
        guard (32_000...320_000).contains(bitrate) else { throw ValidationError("--bitrate must be 32000...320000") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard LevelMeterInterval.range.contains(meterIntervalMs) else {
            throw ValidationError("--meter-interval-ms must be \(LevelMeterInterval.range.lowerBound)...\(LevelMeterInterval.range.upperBound)")
        }
        if let socketGroup, RecdDaemon.group(named: socketGroup) == nil {
            throw ValidationError("--socket-group \(socketGroup): no such group")
        }
        guard let mode = mode_t(socketMode, radix: 8), mode <= 0o777 else {
            throw ValidationError("--socket-mode \(socketMode) is not an octal file mode such as 660")
        }
        _ = mode
        guard (1...10_000).contains(maxConnections) else { throw ValidationError("--max-connections must be 1...10000") }
        guard minFreeMb >= 0 else { throw ValidationError("--min-free-mb must not be negative") }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        // Under systemd (stderr is the journal stream), lines carry syslog priorities instead of timestamps.
        let journal = JournalLogHandler.stderrIsJournal()
        LoggingSystem.bootstrap { label in
            if journal { return JournalLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "recd")
        let config = EngineConfiguration(
            dataDirectory: URL(fileURLWithPath: dataDir), captureDevice: captureDevice,
            playbackDevice: playbackDevice, channels: channels, bitRate: bitrate,
            minFreeBytes: Int64(minFreeMb) * 1_000_000, meterIntervalMs: meterIntervalMs)
        do {
            let engine = try Engine(config: config, logger: logger)
            var daemon = RecdDaemon(engine: engine, socketPath: socket, socketMode: mode_t(socketMode, radix: 8) ?? 0o660,
                                    socketGroup: socketGroup.flatMap(RecdDaemon.group(named:)), logger: logger)
            daemon.maxConnections = maxConnections
            try await daemon.run()
        } catch {
            logger.critical("\(error)")
            FileHandle.standardError.write(Data("recd: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
