// recd: the daemon. Parses options, builds the engine, runs. No logic here.
import ArgumentParser
import Backup
import Engine
import Foundation
import Logging
import MediaWorker
import RecdAPI
import JournalLog
import Server

/// The entry point: synchronous, so that Swift concurrency's global executor is replaced before the
/// first job runs (an async `main` hops to the global executor before its first line), then the
/// command runs as a task and the main thread serves the main queue (`dispatchMain`).
@main
enum RecdMain {
    static func main() {
        ConcurrencyOnEventLoops.install()   // why: in ConcurrencyOnEventLoops
        Task {
            await RecdCommand.main()   // exits by itself on an error or --help
            exit(0)
        }
        dispatchMain()
    }
}

struct RecdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recd",
        abstract: "Media recording manager daemon: records from ALSA (and V4L2 cameras) into Recordings/, keeps a catalog, serves recctl.",
        discussion: """
        Serves HTTP/1.1 with JSON bodies on a Unix socket, e.g.
          curl --unix-socket "$RECD_SOCKET" http://recd/v1/status
        Environment: RECD_DATA_DIR, RECD_SOCKET, RECD_LOG_LEVEL, RECD_FFMPEG_IDLE_UNLOAD (same meaning as the options).
        Under systemd: Type=notify readiness (READY=1 after recovery, STATUS=, WATCHDOG=1, STOPPING=1),
        and log lines with syslog priority prefixes when stderr is the journal.
        """,
        version: RecdVersion.current)

    @Option(name: .long, help: ArgumentHelp("Data directory (catalog.sqlite, Recordings/).", valueName: "dir"))
    var dataDir: String = DefaultPaths.dataDirectory()

    @Option(name: .long, help: ArgumentHelp("Unix socket to serve on.", valueName: "path"))
    var socket: String = DefaultPaths.socket()

    @Option(name: .long, help: ArgumentHelp("Group whose members may use recd: the socket's group, and allowed by the peer-credential check (default: none; only recd's own user and root).", valueName: "group"))
    var socketGroup: String?

    @Option(name: .long, help: ArgumentHelp("Mode of the socket file, in octal.", valueName: "mode"))
    var socketMode: String = "660"

    @Option(name: .long, help: "Connections served at once; more get 503 too_many_connections.")
    var maxConnections: Int = 64

    @Option(name: .long, help: "Connections served at once to one user (uid) other than recd's own and root, at most --max-connections; more get 503 too_many_connections.")
    var maxConnectionsPerPeer: Int = 16

    @Option(name: .long, help: ArgumentHelp("Close a connection whose request head has not arrived this many seconds after its first byte (or after connect), 0.1-3600.", valueName: "seconds"))
    var requestHeadTimeout: Double = 10

    @Option(name: .long, help: ArgumentHelp("Close a keep-alive connection left idle this many seconds after a response, 0.1-3600.", valueName: "seconds"))
    var keepAliveTimeout: Double = 60

    @Option(name: .long, help: ArgumentHelp("ALSA PCM to record from.", valueName: "pcm"))
    var captureDevice: String = "default"

    @Option(name: .long, help: ArgumentHelp("ALSA PCM to play through.", valueName: "pcm"))
    var playbackDevice: String = "default"

    @Option(name: .long, help: "Capture channels (1 or 2).")
    var channels: Int = 1

    @Option(name: .long, help: "AAC bit rate in bits per second.")
    var bitrate: Int = 128_000

    @Option(name: .long, help: ArgumentHelp("How audio recordings (and imports that are encoded) are stored unless a request says: aac (AAC-LC, what every player plays), opus (Opus at --opus-bitrate: about a quarter of AAC's size) or flac (lossless). All three in an MP4 (.m4a); a video's sound is AAC.", valueName: "aac|opus|flac"))
    var defaultFormat: String = RecordingFormat.aac.rawValue

    @Option(name: .long, help: ArgumentHelp("Opus bit rate in bits per second, 24000-64000 (speech-grade).", valueName: "bps"))
    var opusBitrate: Int = 32_000

    @Option(name: .long, help: ArgumentHelp("Refuse to start a recording when Recordings/ has less free space (MB).",
                                            valueName: "MB"))
    var minFreeMb: Int = 200

    @Option(name: .long, help: ArgumentHelp("Level-matched playback: play every recording at this loudness (LUFS, -70...0; default -18, ReplayGain 2.0's reference), its true peak kept at or below -1 dBTP; off plays them as recorded.", valueName: "LUFS|off"))
    var playbackLoudness: String = String(LevelMatch.defaultTarget)

    @Option(name: .long, help: ArgumentHelp("The largest file an import takes (MB).", valueName: "MB"))
    var maxImportMb: Int = 2048

    @Option(name: .long, help: ArgumentHelp("V4L2 camera for video recordings.", valueName: "path"))
    var videoDevice: String = "/dev/video0"

    @Option(name: .long, help: ArgumentHelp("Picture size asked of the camera: the smallest it offers that covers it is used (same aspect first), else its largest.", valueName: "WxH"))
    var videoSize: String = "1280x720"

    @Option(name: .long, help: "Frame rate asked of the camera.")
    var videoFps: Int = 30

    @Option(name: .long, help: ArgumentHelp("x264 preset: ultrafast ... veryslow (faster = less CPU, more bits).", valueName: "preset"))
    var videoPreset: String = "veryfast"

    @Option(name: .long, help: "x264 constant rate factor, 0-51 (lower = better, larger); ignored with --video-bitrate.")
    var videoCrf: Int = 23

    @Option(name: .long, help: ArgumentHelp("H.264 average bit rate in bits per second, instead of --video-crf.", valueName: "bps"))
    var videoBitrate: Int?

    @Option(name: .long, help: ArgumentHelp("Meter readings (events) every this many milliseconds, 10-1000.", valueName: "ms"))
    var meterIntervalMs: Int = 50

    @Option(name: .long, help: ArgumentHelp("While recording, make the file durable (fdatasync) about this often, so a power cut loses about the last second; 0 turns it off (a kill -9 still loses at most the last fragment).", valueName: "ms"))
    var syncIntervalMs: Int = EngineConfiguration.defaultSyncIntervalMs

    @Option(name: .long, help: ArgumentHelp("End an idle media worker (a process with FFmpeg loaded that starts a take's, a playback's or a trim's job in a millisecond; an import's ends with its job) this many seconds after its last use, 0-86400, or never (default: $RECD_FFMPEG_IDLE_UNLOAD, else 30).", valueName: "seconds|never"))
    var ffmpegIdleUnload: String = ProcessInfo.processInfo.environment["RECD_FFMPEG_IDLE_UNLOAD"]
        ?? String(Int(EngineConfiguration.defaultFFmpegIdleUnloadSeconds))

    /// --ffmpeg-idle-unload: `.some(seconds)`, `.some(nil)` for never; nil when it is neither (validate refuses it).
    var ffmpegIdleUnloadSeconds: Double?? {
        if ffmpegIdleUnload == "never" { return .some(nil) }
        guard let s = Double(ffmpegIdleUnload), (0...86_400).contains(s) else { return nil }
        return .some(s)
    }

    @Option(name: .long, help: ArgumentHelp("Transcribe saved recordings in the background with this Whisper model (base is what scripts/install-deps.sh --transcribe installs), or off. Without the transcriber installed, recd runs without transcripts and says so.", valueName: "model|off"))
    var transcribe: String = "base"

    @Option(name: .long, help: ArgumentHelp("The transcriber's folder (default: PREFIX/lib/recd/transcribe beside recd, or a build tree's .build/transcribe).", valueName: "dir"))
    var transcriber: String?

    /// The transcriber's CPU priority.
    enum TranscribePriority: String, ExpressibleByArgument, CaseIterable { case idle, normal }

    @Option(name: .long, help: ArgumentHelp("idle: the transcriber uses only CPU time nothing else wants, so takes and playback never wait for it, but a machine that is never idle never makes a transcript; normal: at recd's own priority.", valueName: "idle|normal"))
    var transcribePriority: TranscribePriority = .idle

    @Flag(name: .long, help: "Arm listening when recd starts (each thing said becomes a recording; recctl listen stop ends it). Off by default: listening starts only when asked, or again after a restart while it was armed.")
    var listen = false

    @Option(name: .long, help: ArgumentHelp("Back the library up to this restic repository (a path, sftp:host:/path, s3:…, rest:…, rclone:…), made once with `recctl backup init` (default: $RECD_BACKUP; off without it).", valueName: "repository"))
    var backup: String? = ProcessInfo.processInfo.environment["RECD_BACKUP"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(name: .long, help: ArgumentHelp("The file that holds the repository's password (default: $RECD_BACKUP_PASSWORD_FILE, else the systemd credential restic-password: LoadCredential=restic-password:/etc/recd/restic-password).", valueName: "file"))
    var backupPasswordFile: String? = ProcessInfo.processInfo.environment["RECD_BACKUP_PASSWORD_FILE"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(name: .long, help: ArgumentHelp("An option for restic (-o), such as sftp.command=… or s3.storage-class=…; repeat for more.", valueName: "key=value"))
    var backupOption: [String] = []

    @Option(name: .long, help: ArgumentHelp("Back up this many seconds after the library changed, 0-86400 (changes meanwhile go in the same snapshot).", valueName: "seconds"))
    var backupDelay: Double = 300

    @Option(name: .long, help: ArgumentHelp("Back up at least this often, 60-2592000 seconds.", valueName: "seconds"))
    var backupInterval: Double = 86_400

    @Option(name: .long, help: ArgumentHelp("Warn (status, journal, the web app) when the last good backup is older than this while the library changed since, 10-2592000 seconds.", valueName: "seconds"))
    var backupWarnAfter: Double = 86_400

    @Option(name: .long, help: ArgumentHelp("Check the repository (restic check) this often, after a good backup, 3600-31536000 seconds, or never.", valueName: "seconds|never"))
    var backupCheckInterval: String = "604800"

    @Option(name: .long, help: ArgumentHelp("What part of the data a check reads back (restic's --read-data-subset): a percentage (10%), n/t (1/7) or a size (500M).", valueName: "subset"))
    var backupCheckSubset: String = "10%"

    @Option(name: .long, help: ArgumentHelp("Which snapshots to keep: rules last, daily, weekly, monthly, yearly (restic forget's --keep-*), the others forgotten after each good backup and their data pruned at most daily; or all.", valueName: "rule=n,…|all"))
    var backupKeep: String = BackupSettings.defaultKeep!.description

    @Option(name: .long, help: ArgumentHelp("Stop a backup whose restic makes no progress for this long (a repository that stopped answering), 2-86400 seconds; it counts as failed and is tried again later.", valueName: "seconds"))
    var backupStall: Double = 600

    /// --backup-check-interval in seconds; nil: never; -1: not a valid value.
    var backupCheckSeconds: Double? {
        if backupCheckInterval == "never" { return nil }
        guard let s = Double(backupCheckInterval), (3_600...31_536_000).contains(s) else { return -1 }
        return s
    }

    /// The password file: the option, else the systemd credential.
    var backupPasswordPath: String? {
        if let backupPasswordFile { return backupPasswordFile }
        guard let dir = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"] else { return nil }
        let credential = (dir as NSString).appendingPathComponent("restic-password")
        return FileManager.default.fileExists(atPath: credential) ? credential : nil
    }

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical (default: $RECD_LOG_LEVEL, else info).")
    var logLevel: String = ProcessInfo.processInfo.environment["RECD_LOG_LEVEL"] ?? "info"

    func validate() throws {
        guard (1...2).contains(channels) else { throw ValidationError("--channels must be 1 or 2") }
        guard (32_000...320_000).contains(bitrate) else { throw ValidationError("--bitrate must be 32000...320000") }
        guard RecordingFormat(rawValue: defaultFormat) != nil else {
            throw ValidationError("--default-format must be one of \(RecordingFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (24_000...64_000).contains(opusBitrate) else { throw ValidationError("--opus-bitrate must be 24000...64000") }
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
        guard EngineConfiguration.syncIntervalRange.contains(syncIntervalMs) else {
            throw ValidationError("--sync-interval-ms must be \(EngineConfiguration.syncIntervalRange.lowerBound)...\(EngineConfiguration.syncIntervalRange.upperBound)")
        }
        guard (1...10_000).contains(maxConnections) else { throw ValidationError("--max-connections must be 1...10000") }
        guard (1...10_000).contains(maxConnectionsPerPeer) else { throw ValidationError("--max-connections-per-peer must be 1...10000") }
        guard (0.1...3600).contains(requestHeadTimeout) else { throw ValidationError("--request-head-timeout must be 0.1...3600 seconds") }
        guard (0.1...3600).contains(keepAliveTimeout) else { throw ValidationError("--keep-alive-timeout must be 0.1...3600 seconds") }
        guard minFreeMb >= 0 else { throw ValidationError("--min-free-mb must not be negative") }
        guard (1...1_000_000).contains(maxImportMb) else { throw ValidationError("--max-import-mb must be 1...1000000") }
        guard playbackLoudness == "off" || Double(playbackLoudness).map({ (-70...0).contains($0) }) == true else {
            throw ValidationError("--playback-loudness must be off or a loudness in LUFS from -70 to 0, such as -18")
        }
        guard ffmpegIdleUnloadSeconds != nil else {
            throw ValidationError("--ffmpeg-idle-unload must be never or seconds from 0 to 86400, such as 30")
        }
        guard Self.size(videoSize) != nil else { throw ValidationError("--video-size \(videoSize) is not WIDTHxHEIGHT such as 1280x720") }
        guard (1...240).contains(videoFps) else { throw ValidationError("--video-fps must be 1...240") }
        guard VideoSettings.presets.contains(videoPreset) else {
            throw ValidationError("--video-preset must be one of \(VideoSettings.presets.joined(separator: ", "))")
        }
        guard (0...51).contains(videoCrf) else { throw ValidationError("--video-crf must be 0...51") }
        guard transcribe == "off" || transcribe.range(of: "^[a-z0-9][a-z0-9.-]{0,40}$", options: .regularExpression) != nil else {
            throw ValidationError("--transcribe must be off or the name of a Whisper model, such as base")
        }
        if let videoBitrate, !(50_000...100_000_000).contains(videoBitrate) {
            throw ValidationError("--video-bitrate must be 50000...100000000")
        }
        if let backup {
            guard !backup.isEmpty, !backup.hasPrefix("-") else { throw ValidationError("--backup \(backup) is not a restic repository") }
            guard let password = backupPasswordPath else {
                throw ValidationError("--backup needs the repository's password: --backup-password-file FILE (or the systemd credential restic-password)")
            }
            guard access(password, R_OK) == 0 else {
                throw ValidationError("--backup-password-file \(password): \(String(cString: strerror(errno)))")
            }
        }
        for option in backupOption where !option.contains("=") || option.hasPrefix("=") {
            throw ValidationError("--backup-option \(option) is not key=value (restic's -o)")
        }
        guard (0...86_400).contains(backupDelay) else { throw ValidationError("--backup-delay must be 0...86400 seconds") }
        guard (60...2_592_000).contains(backupInterval) else { throw ValidationError("--backup-interval must be 60...2592000 seconds") }
        guard (10...2_592_000).contains(backupWarnAfter) else { throw ValidationError("--backup-warn-after must be 10...2592000 seconds") }
        guard (2...86_400).contains(backupStall) else { throw ValidationError("--backup-stall must be 2...86400 seconds") }
        guard backupKeep == "all" || ResticRetention(backupKeep) != nil else {
            throw ValidationError("--backup-keep must be all, or rules from last, daily, weekly, monthly, yearly, each =1...10000, such as daily=7,weekly=5 (got \(backupKeep))")
        }
        guard backupCheckSeconds != -1 else { throw ValidationError("--backup-check-interval must be never or 3600...31536000 seconds") }
        guard backupCheckSubset.range(of: #"^([0-9]{1,3}(\.[0-9]+)?%|[0-9]+/[0-9]+|[0-9]+[KMGT]?)$"#, options: .regularExpression) != nil else {
            throw ValidationError("--backup-check-subset must be a percentage (10%), n/t (1/7) or a size (500M)")
        }
    }

    /// `1280x720` → (1280, 720); even sizes from 16x16 to 7680x4320 (H.264 4:2:0 needs even sides).
    static func size(_ text: String) -> (Int, Int)? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
              (16...7680).contains(w), (16...4320).contains(h), w % 2 == 0, h % 2 == 0 else { return nil }
        return (w, h)
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
        logger.info("\(MediaWorkerPool.refuseExecGain())")
        var config = EngineConfiguration(
            dataDirectory: URL(fileURLWithPath: dataDir), captureDevice: captureDevice,
            playbackDevice: playbackDevice, channels: channels, bitRate: bitrate,
            minFreeBytes: Int64(minFreeMb) * 1_000_000, meterIntervalMs: meterIntervalMs,
            video: VideoSettings(device: videoDevice, width: Self.size(videoSize)?.0 ?? 1280, height: Self.size(videoSize)?.1 ?? 720,
                                 fps: videoFps, preset: videoPreset, crf: videoCrf, bitRate: videoBitrate))
        config.maxImportBytes = Int64(maxImportMb) * 1_000_000
        config.defaultFormat = RecordingFormat(rawValue: defaultFormat) ?? .aac
        config.opusBitRate = opusBitrate
        config.syncIntervalMs = syncIntervalMs
        if let seconds = ffmpegIdleUnloadSeconds { config.ffmpegIdleUnloadSeconds = seconds }
        config.playbackLoudness = playbackLoudness == "off" ? nil : Double(playbackLoudness)
        config.listenAtStart = listen
        config.transcription = TranscriptionSettings(directory: transcriber ?? TranscriptionSettings.defaultDirectory(),
                                                     model: transcribe == "off" ? nil : transcribe,
                                                     idle: transcribePriority == .idle)
        if let backup, let password = backupPasswordPath {
            guard let restic = ResticRepository.findExecutable() else {
                logger.critical("--backup needs restic, which is not installed (apt install restic)")
                FileHandle.standardError.write(Data("recd: --backup needs restic, which is not installed (apt install restic)\n".utf8))
                throw ExitCode.failure
            }
            let repository = ResticRepository(location: backup, passwordFile: password, options: backupOption,
                                              cacheDirectory: URL(fileURLWithPath: dataDir).appendingPathComponent(".backup/cache").path,
                                              executable: restic, host: ProcessInfo.processInfo.hostName)
            config.backup = BackupSettings(repository: repository, delay: backupDelay, interval: backupInterval, warnAfter: backupWarnAfter,
                                           checkInterval: backupCheckSeconds, checkSubset: backupCheckSubset, stallSeconds: backupStall,
                                           keep: ResticRetention(backupKeep))
        }
        do {
            let engine = try Engine(config: config, logger: logger)
            var daemon = RecdDaemon(engine: engine, socketPath: socket, socketMode: mode_t(socketMode, radix: 8) ?? 0o660,
                                    socketGroup: socketGroup.flatMap(RecdDaemon.group(named:)), logger: logger)
            daemon.maxConnections = maxConnections
            daemon.maxConnectionsPerPeer = maxConnectionsPerPeer
            daemon.timeouts.requestHead = .nanoseconds(Int64(requestHeadTimeout * 1e9))
            daemon.timeouts.keepAlive = .nanoseconds(Int64(keepAliveTimeout * 1e9))
            try await daemon.run()
        } catch {
            logger.critical("\(error)")
            FileHandle.standardError.write(Data("recd: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
