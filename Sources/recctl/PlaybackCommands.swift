// recctl play / playback / played / top / media.
import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import NIOHTTP1
import RecdAPI
import Synchronization

/// Set by SIGINT while `play --wait` is attached.
let interrupted = Atomic<Bool>(false)

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a recording through recd's playback device (a saved one counts as a play; a pending one is a preview).",
        discussion: """
        Returns once the first audio is written to the device, unless --wait: then it shows position / duration \
        until the playback ends; Ctrl-C stops the playback (exit status 130). Playing another recording ends \
        the one playing. A playback counts once when it ends (completed, stopped or replaced), however often it \
        was paused or moved; a preview of a pending recording never counts.
        """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Option(help: ArgumentHelp("Start here: seconds or m:ss.", valueName: "position")) var from: String?
    @Flag(help: "Stay attached until the playback ends, showing its progress (on a terminal, m marks the moment heard).") var wait = false
    @Flag(help: "Play it as recorded, without the gain that brings every recording to recd's --playback-loudness.")
    var asRecorded = false
    @Flag(help: "Skip the pauses (a second or more of quiet; a fifth of a second is kept at each end).")
    var skipSilence = false
    @Option(help: ArgumentHelp("Play faster or slower, the pitch kept: 0.5 to 2 (1.5, 1.5x or 150%).", valueName: "speed"))
    var speed: String?
    @Flag(help: "Play its enhanced copy (recctl enhance makes one).") var enhanced = false

    func validate() throws {
        if let speed { _ = try Playback.parseSpeed(speed) }
        if let from, (try? SeekArgument.parse(from))?.to == nil {
            throw ValidationError("--from \(from): give a position from the start, such as 90 or 1:30")
        }
    }

    func run() async throws {
        let position = try from.flatMap { try SeekArgument.parse($0).to }
        let (reply, raw) = try await global.client.call(.POST, "/v1/recordings/\(idPath(id))/play",
                                                        body: PlayRequest(position: position, normalize: asRecorded ? false : nil, skipSilence: skipSilence ? true : nil,
                                                                          speed: try speed.map(Playback.parseSpeed), enhanced: enhanced ? true : nil),
                                                        as: PlayResponse.self)
        let p = reply.playback
        var said = "▶ playing '\(Output.text(p.recording.title))' (\(Output.shortID(p.recording.id))), "
            + "\(Output.duration(p.duration)) on \(p.device)"
        if p.gain != 0 { said += String(cFormat: " at %+.1f dB (level-matched)", p.gain) }
        if p.skipSilence { said += ", skipping pauses" }
        if p.speed != 1 { said += " at \(Playback.speed(p.speed))" }
        if p.enhanced { said += ", its enhanced copy" }
        // Handed to the device: a sound server (PulseAudio, PipeWire) may take a while more to start
        // its stream, and the position shown under --wait is what the device says it has played.
        said += String(cFormat: ", first audio to the device after %.0f ms", reply.startLatencyMs)
        if !p.counts { said += "\n(preview of a pending recording: not counted as a play)" }
        global.emit(raw, said)
        guard wait else { return }
        try await follow(session: p.session)
    }

    /// Polls the playback until `session` ends; Ctrl-C stops it.
    func follow(session: UUID) async throws {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT)
        source.setEventHandler { interrupted.store(true, ordering: .relaxed) }
        source.resume()
        defer { source.cancel() }
        let live = isatty(STDERR_FILENO) != 0 && !global.json
        // The level of what is heard, from the event stream, for the progress line.
        let levels = Mutex<[ChannelLevel]>([])
        let client = global.client
        let meters = Task {
            guard live else { return }
            try? await client.events("/v1/events?type=meter") { json in
                guard let e = try? APIJSON.decoder().decode(RecdEvent.self, from: Data(json.utf8)),
                      case .meter(let m) = e.payload, m.source == .playback else { return }
                levels.withLock { $0 = m.channels }
            }
        }
        defer { meters.cancel() }
        // On a terminal, m marks the moment heard (a key as it is pressed; nothing is read otherwise,
        // so a script's standard input is left alone).
        let keys = live && isatty(STDIN_FILENO) != 0 && KeyMode.enter() ? InputReader() : nil
        defer { if keys != nil { KeyMode.leave() } }
        do {
            try await poll(session: session, live: live, levels: levels, keys: keys)
        } catch {
            // recd gone (or refusing) mid-way: end the progress line first, so the error that
            // follows is a line of its own and not glued to "▶ 0:03 / 0:05".
            if live { Console.err(Data("\n".utf8)) }
            throw error
        }
    }

    private func poll(session: UUID, live: Bool, levels: borrowing Mutex<[ChannelLevel]>, keys: InputReader?) async throws {
        var duration: Double?
        var playing: UUID?
        while true {
            if let keys, keys.ready, await keys.nextKey(keyMode: true, wait: false) == "m", let playing {
                do {
                    let (m, _) = try await global.client.call(.POST, "/v1/recordings/\(playing.uuidString)/markers", body: MarkerRequest(), as: Marker.self)
                    Console.err(Data(("\r" + Mark.said(m) + "\u{1B}[K\n").utf8))
                } catch ClientFailure.refused(_, let body) {
                    Console.err(Data(("\r" + body.error.message + "\u{1B}[K\n").utf8))
                }
            }
            if interrupted.load(ordering: .relaxed) {
                let (s, raw) = try await global.client.call(.POST, "/v1/playback/stop", as: PlaybackStatus.self)
                if live { Console.err(Data("\n".utf8)) }
                report(s.lastEnded.flatMap { $0.session == session ? $0 : nil }, raw: raw)
                Glibc.exit(130)
            }
            let (s, raw) = try await global.client.call(.GET, "/v1/playback", as: PlaybackStatus.self)
            if let p = s.playback, p.session == session {
                duration = p.duration ?? duration
                playing = p.recording.id
                if live {
                    let level = p.state == .paused ? "" : LevelBar.line(levels.withLock { $0 })
                    let line = "\r\(p.state == .paused ? "⏸" : "▶") \(Output.duration(p.position)) / \(Output.duration(p.duration))  "
                        + level + "\u{1B}[K"
                    Console.err(Data(line.utf8))
                }
            } else {
                let ended = s.lastEnded.flatMap { $0.session == session ? $0 : nil }
                // Played to the end: the line ends at the end ("0:05 / 0:05"), not at the last poll's
                // position a fraction of a second before it.
                if live, let e = ended, e.reason == .completed, let d = duration ?? Optional(e.position) {
                    Console.err(Data("\r▶ \(Output.duration(d)) / \(Output.duration(d))\u{1B}[K".utf8))
                }
                if live { Console.err(Data("\n".utf8)) }
                report(ended, raw: raw)
                return
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    func report(_ ended: PlaybackEnded?, raw: Data) {
        guard let e = ended else {
            global.emit(raw, "playback ended")
            return
        }
        let json = (try? APIJSON.encoder().encode(e)) ?? raw
        let how: String
        switch e.reason {
        case .completed: how = "⏹ played to the end"
        case .stopped: how = "⏹ stopped at \(Output.duration(e.position))"
        case .replaced: how = "⏹ replaced by another playback at \(Output.duration(e.position))"
        case .deleted: how = "⏹ ended: the recording was deleted"
        case .shutdown: how = "⏹ ended: recd shut down"
        case .failed: how = "⏹ failed at \(Output.duration(e.position)): \(e.error ?? "unknown error")"
        }
        global.emit(json, how + (e.counted ? " (counted as a play)" : ""))
    }
}

struct Playback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playback",
        abstract: "Control the playback in progress: pause, resume, seek, stop, or show it.",
        subcommands: [Show.self, Pause.self, Resume.self, Seek.self, Speed.self, Stop.self], defaultSubcommand: Show.self)

    static func describe(_ s: PlaybackStatus) -> String {
        guard let p = s.playback else {
            if let e = s.lastEnded {
                return "nothing is playing (last: '\(Output.text(e.title))' \(e.reason.rawValue) at \(Output.duration(e.position)))"
            }
            return "nothing is playing"
        }
        return "\(p.state == .paused ? "⏸ paused" : "▶ playing") '\(Output.text(p.recording.title))' (\(Output.shortID(p.recording.id)))"
            + " \(Output.duration(p.position)) / \(Output.duration(p.duration))" + (p.speed == 1 ? "" : " at \(Playback.speed(p.speed))")
            + (p.enhanced ? ", its enhanced copy" : "") + (p.counts ? "" : " (preview)")
    }

    /// "1.5×".
    static func speed(_ x: Double) -> String {
        var text = String(cFormat: "%.2f", x)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "×"
    }

    /// 0.5-2, as a person writes it ("1.5", "1.5x", "150%").
    static func parseSpeed(_ text: String) throws -> Double {
        var t = text.lowercased()
        var scale = 1.0
        if t.hasSuffix("x") || t.hasSuffix("×") { t.removeLast() } else if t.hasSuffix("%") { t.removeLast(); scale = 0.01 }
        guard let v = Double(t).map({ $0 * scale }), v.isFinite, SpeedRequest.range.contains(v) else {
            throw ValidationError("speed \(text): give 0.5 to 2 (1.5, 1.5x or 150%)")
        }
        return v
    }

    /// Sends one transport request and prints the playback it leaves.
    static func control(_ global: GlobalOptions, _ method: HTTPMethod, _ path: String) async throws {
        guard case let (s, raw)? = try await global.fetchToShow(method, path, as: PlaybackStatus.self) else { return }
        global.emit(raw, Playback.describe(s))
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Show what is playing.")
        @OptionGroup var global: GlobalOptions
        func run() async throws { try await Playback.control(global, .GET, "/v1/playback") }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause the playback.")
        @OptionGroup var global: GlobalOptions
        func run() async throws { try await Playback.control(global, .POST, "/v1/playback/pause") }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused playback.")
        @OptionGroup var global: GlobalOptions
        func run() async throws { try await Playback.control(global, .POST, "/v1/playback/resume") }
    }

    struct Seek: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "seek",
            abstract: "Move the playback: +15 / -15 (seconds, default +15), or to a position (90, 1:30). Clamped to the recording.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp("+N, -N, seconds or m:ss.", valueName: "where")) var target: String?

        func validate() throws {
            do { _ = try SeekArgument.parse(target) } catch { throw ValidationError(error.description) }
        }

        func run() async throws {
            let request = try SeekArgument.parse(target)
            var (s, raw) = try await global.client.call(.POST, "/v1/playback/seek", body: request, as: PlaybackStatus.self)
            // A seek to the end leaves the playback at its last instant, ending on its own a moment later:
            // say how it ended rather than "▶ playing 0:25 / 0:25".
            let session = s.playback?.session
            var waited = 0
            while let p = s.playback, p.session == session, p.state == .playing, let d = p.duration,
                  p.position >= d - 0.05, waited < 40 {
                try await Task.sleep(for: .milliseconds(50)); waited += 1
                (s, raw) = try await global.client.call(.GET, "/v1/playback", as: PlaybackStatus.self)
            }
            global.emit(raw, Playback.describe(s))
        }
    }

    struct Speed: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "speed",
            abstract: "Play on faster or slower, the pitch kept: 0.5 to 2 (1: as recorded).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp("0.5-2 (1.5, 1.5x or 150%).", valueName: "speed")) var speed: String

        func validate() throws { _ = try Playback.parseSpeed(speed) }

        func run() async throws {
            let (s, raw) = try await global.client.call(.POST, "/v1/playback/speed", body: SpeedRequest(speed: try Playback.parseSpeed(speed)),
                                                        as: PlaybackStatus.self)
            global.emit(raw, Playback.describe(s))
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the playback (it counts as a play, unless a preview).")
        @OptionGroup var global: GlobalOptions
        func run() async throws {
            let (s, raw) = try await global.client.call(.POST, "/v1/playback/stop", as: PlaybackStatus.self)
            let counted = s.lastEnded?.counted == true ? " (counted as a play)" : ""
            global.emit(raw, "⏹ stopped" + (s.lastEnded.map { " '\(Output.text($0.title))' at \(Output.duration($0.position))" } ?? "") + counted)
        }
    }
}

struct Played: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "played",
        abstract: "Count a playback that happened elsewhere (a GUI's own player) as one play of a saved recording.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String

    func run() async throws {
        let (r, raw) = try await global.client.call(.POST, "/v1/recordings/\(idPath(id))/played",
                                                    body: Optional<Int>.none, as: Recording.self)
        global.emit(raw, "Counted: '\(Output.text(r.title))' now has \(Output.plays(r.playCount))")
    }
}

struct Top: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Quick Play: the most played saved recordings (3 unless N is given).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "How many (1-1000).") var count: Int = 3

    func run() async throws {
        guard case let (list, raw)? = try await global.fetchToShow(.GET, "/v1/top?limit=\(count)", as: RecordingList.self) else { return }
        global.emit(raw, list.recordings.isEmpty
                    ? Say.noSavedRecordings   // Quick Play holds saved ones; the same command as `list` suggests
                    : "Quick Play:\n" + Output.table(list.recordings))
    }
}

struct Media: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "media",
        abstract: "Copy a recording's media file out of recd (not counted as a play).",
        discussion: """
        Writes "<title>.m4a" (or .mov) in the current directory unless -o names a file or - (stdout). \
        An existing file is not replaced unless you confirm, or give --force.
        """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Option(name: .shortAndLong, help: ArgumentHelp("Output file, or - for standard output.", valueName: "file"))
    var output: String?
    @Flag(name: .long, help: "Replace an existing file without asking.") var force = false
    @Flag(help: "Copy its enhanced copy (\"<title> (enhanced).m4a\") instead.") var enhanced = false

    func run() async throws {
        let (r, _) = try await global.client.call(.GET, "/v1/recordings/\(idPath(id))", as: Recording.self)
        // No copy: said before a file of that name is asked about.
        if enhanced, try await global.client.call(.GET, "/v1/recordings/\(r.id.uuidString)/enhanced", as: EnhanceStatus.self).0.copy == nil {
            throw ClientFailure.refused(status: 409, APIErrorBody(code: .noMedia, message:
                "recording \(r.id.uuidString) has no enhanced copy (recctl enhance \(Output.shortID(r.id)) makes one)"))
        }
        let name = output ?? (enhanced ? Self.fileName(title: r.title + " (enhanced)", file: "enhanced.m4a") : Self.fileName(title: r.title, file: r.file))
        try global.mayWrite(name, force: force)
        let reply = try await global.client.send(.GET, "/v1/recordings/\(r.id.uuidString)/\(enhanced ? "enhanced/" : "")media")
        try RecdClient.check(reply)
        try global.save(reply.body, to: name) { name, size in
            "Copied '\(Output.text(r.title))' to \(name) (\(size))"
        }
    }

    /// "Morning walk.m4a": the title as a file name (no '/', no controls, no leading dot), with the
    /// file's own extension; the stored name when nothing of the title is left.
    static func fileName(title: String, file: String) -> String {
        let ext = file.pathExtension
        var base = String(String.UnicodeScalarView(title.unicodeScalars.filter {
            $0 != "/" && $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value)
        }))
        base = base.trimmingWhitespace()
        while base.hasPrefix(".") { base.removeFirst() }
        guard !base.isEmpty else { return file.lastPathComponent }
        return ext.isEmpty ? base : base + "." + ext
    }
}

extension GlobalOptions {
    /// Puts a downloaded body where `-o` says: standard output for `-`, else the file `name`, written
    /// whole (see `writeFile`). Then says what was written: `{"file", "bytes"}` with --json, else
    /// `summary(name, size)`.
    func save(_ body: Data, to name: String, summary: (_ name: String, _ size: String) -> String) throws {
        if name == "-" {
            Console.out(body)
            return
        }
        try writeFile(body, to: name)
        if json {
            let data = try APIJSON.encoder().encode(WrittenFile(file: name, bytes: body.count))
            Console.out(data + Data("\n".utf8))
        } else {
            print(summary(name, byteCountString(Int64(body.count))))
        }
    }
}

/// What `--json` prints for a file recctl wrote.
struct WrittenFile: Encodable {
    var file: String
    var bytes: Int
}

extension GlobalOptions {
    /// Whether `name` may be written: a new file, `-`, --force, or a person who says yes. Checked
    /// before anything is downloaded.
    func mayWrite(_ name: String, force: Bool) throws {
        guard name != "-", !force, access(name, F_OK) == 0 else { return }
        guard isatty(STDIN_FILENO) != 0 else {
            throw ClientFailure.local("\(name) exists; add --force to replace it, or -o to write elsewhere")
        }
        guard Delete.confirm("\(name) exists. Replace it?") else { throw ClientFailure.local("\(name) was left as it is") }
    }
}

/// Writes `data` to standard output for `-`, else beside `name` and renames it into place: an
/// interrupted copy never leaves a partial file under the name.
func writeFile(_ data: Data, to name: String) throws {
    if name == "-" { Console.out(data); return }
    let temporary = name + ".part"
    func fail() -> ClientFailure {
        let reason = errnoText()
        unlink(temporary)
        return ClientFailure.local("cannot write \(name): \(reason)")
    }
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
    guard fd >= 0 else { throw fail() }
    guard Console.write(data, to: fd) else { close(fd); throw fail() }
    guard close(fd) == 0, rename(temporary, name) == 0 else { throw fail() }
}

struct Poster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "poster",
        abstract: "Save a video recording's poster: a JPEG of its first frame.",
        discussion: "Writes poster_<id>.jpg in the current directory unless -o names a file or - (stdout).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Option(name: .shortAndLong, help: ArgumentHelp("Output file, or - for standard output.", valueName: "file"))
    var output: String?
    @Flag(name: .long, help: "Replace an existing file without asking.") var force = false

    func run() async throws {
        let name = output ?? "poster_\(id).jpg"
        try global.mayWrite(name, force: force)
        let reply = try await global.client.send(.GET, "/v1/recordings/\(idPath(id))/poster")
        try RecdClient.check(reply)
        try global.save(reply.body, to: name) { name, size in
            "Poster of \(id) saved to \(name) (\(size))"
        }
    }
}

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List capture devices: ALSA PCMs and V4L2 cameras with their formats, sizes and rates.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        guard case let (list, raw)? = try await global.fetchToShow(.GET, "/v1/devices", as: DeviceList.self) else { return }
        var lines = ["Microphones (ALSA PCMs; recd records from \(list.configuredAudio)):"]
        if list.audio.isEmpty { lines.append("  (none)") }
        for a in list.audio {
            lines.append("  \(a.device)\(a.device == list.configuredAudio ? "  *" : "")" + (a.description.isEmpty ? "" : "  \(a.description)"))
            if let c = a.capabilities {
                lines.append("    \(c.formats.joined(separator: " "))  \(c.minRate == c.maxRate ? "\(c.minRate)" : "\(c.minRate)-\(c.maxRate)") Hz"
                             + "  \(c.minChannels == c.maxChannels ? "\(c.minChannels)" : "\(c.minChannels)-\(c.maxChannels)") channel(s)")
            }
            if let e = a.error { lines.append("    cannot be probed: \(e)") }
        }
        lines.append("Cameras (V4L2; recd records from \(list.configuredCamera)):")
        if list.cameras.isEmpty { lines.append("  (none)") }
        for c in list.cameras {
            lines.append("  \(c.device)\(c.device == list.configuredCamera ? "  *" : "")  \(c.name)\(c.driver.isEmpty ? "" : " (\(c.driver))")")
            if let e = c.error { lines.append("    cannot be queried: \(e)") }
            for f in c.formats {
                let sizes = f.sizes.map { s in
                    "\(s.width)x\(s.height)" + (s.fps.isEmpty ? "" : "@" + s.fps.map { String(cFormat: "%g", $0) }.joined(separator: "/"))
                }
                lines.append("    \(f.pixelFormat)\(f.compressed ? " (compressed)" : "")  \(sizes.joined(separator: " "))")
            }
        }
        global.emit(raw, lines.joined(separator: "\n"))
    }
}
