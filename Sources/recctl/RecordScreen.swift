// `recctl record` with no subcommand: the seed's recording screen (5.3.2) and preview-then-save
// (5.3.3) in a terminal.
import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import NIOHTTP1
import RecdAPI
import Synchronization

/// What is typed on standard input, read on a thread of their own (read(2) blocks): whole lines for
/// the title and notes, single keys for the choices (on a terminal in key mode, a key arrives as it is
/// pressed; without a terminal a "key" is the first character of the next line).
final class InputReader: Sendable {
    private struct Buffer { var bytes: [UInt8] = []; var ended = false }
    private let buffer = Mutex(Buffer())

    init() {
        detachThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(STDIN_FILENO, &chunk, chunk.count)
                if n < 0 && errno == EINTR { continue }
                self.buffer.withLock { b in
                    if n > 0 { b.bytes += chunk[0..<n] } else { b.ended = true }
                }
                if n <= 0 { return }
            }
        }
    }

    /// Whether something (or the end of input) is waiting.
    var ready: Bool { buffer.withLock { !$0.bytes.isEmpty || $0.ended } }

    /// Drops what was typed so far (keys pressed before a question was asked).
    func discardTyped() { buffer.withLock { $0.bytes.removeAll() } }

    /// The next line; nil at the end of input or when Ctrl-C was pressed.
    func nextLine() async -> String? {
        while !interrupted.load(ordering: .relaxed) {
            let taken = buffer.withLock { b -> String?? in
                if let nl = b.bytes.firstIndex(of: UInt8(ascii: "\n")) {
                    defer { b.bytes.removeSubrange(...nl) }
                    return .some(String(decoding: b.bytes[..<nl], as: UTF8.self))
                }
                if b.ended {
                    defer { b.bytes.removeAll() }
                    return b.bytes.isEmpty ? .some(nil) : .some(String(decoding: b.bytes, as: UTF8.self))
                }
                return .none
            }
            if let line = taken { return line }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// The next key (lower-cased); nil at the end of input or on Ctrl-C. `wait` false: nil at once
    /// when nothing was pressed.
    func nextKey(keyMode: Bool, wait: Bool = true) async -> Character? {
        guard keyMode else {
            if !wait && !ready { return nil }
            return await nextLine().map { $0.trimmingWhitespace().lowercased().first ?? "\n" }
        }
        while !interrupted.load(ordering: .relaxed) {
            let taken = buffer.withLock { b -> Character?? in
                guard !b.bytes.isEmpty else { return b.ended ? .some(nil) : .none }
                // One UTF-8 character (a lead byte and its continuation bytes).
                var end = 1
                while end < b.bytes.count, b.bytes[end] & 0xC0 == 0x80 { end += 1 }
                defer { b.bytes.removeSubrange(..<end) }
                return .some(String(decoding: b.bytes[..<end], as: UTF8.self).lowercased().first)
            }
            if let key = taken { return key }
            if !wait { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}

/// The terminal in key mode (no line editing, no echo; Ctrl-C still a signal unless `signals` is
/// false) while a choice is asked, and back as it was afterwards, also when recctl exits.
enum KeyMode {
    private static let saved = Mutex<termios?>(nil)

    /// False when standard input has no terminal settings to change.
    @discardableResult
    static func enter(signals: Bool = true) -> Bool {
        var t = termios()
        guard tcgetattr(STDIN_FILENO, &t) == 0 else { return false }
        saved.withLock { if $0 == nil { $0 = t } }
        t.c_lflag &= ~tcflag_t(signals ? ICANON | ECHO : ICANON | ECHO | ISIG)
        withUnsafeMutableBytes(of: &t.c_cc) { cc in cc[Int(VMIN)] = 1; cc[Int(VTIME)] = 0 }
        tcsetattr(STDIN_FILENO, TCSANOW, &t)
        return true
    }

    static func leave() {
        saved.withLock { s in
            guard var t = s else { return }
            tcsetattr(STDIN_FILENO, TCSANOW, &t)
            s = nil
        }
    }
}

/// Level meter bars for a terminal line.
enum LevelBar {
    static let cells = 20
    static let floorDB = -60.0

    /// `▕██████▍      ▏` for a peak in dBFS (-60 … 0 across `cells` cells, in eighths).
    static func bar(_ db: Double) -> String {
        let fraction = max(0, min(1, (db - floorDB) / -floorDB))
        let eighths = Int((fraction * Double(cells * 8)).rounded())
        let partial = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        var s = String(repeating: "█", count: eighths / 8) + partial[eighths % 8]
        s += String(repeating: " ", count: max(0, cells - s.count))
        return "▕" + s + "▏"
    }

    /// Every channel's bar, with its peak: "L ▕…▏ -12 dB  R ▕…▏ -20 dB" (no labels for mono).
    static func line(_ channels: [ChannelLevel]) -> String {
        let labels = channels.count == 2 ? ["L ", "R "] : channels.indices.map { channels.count == 1 ? "" : "\($0 + 1) " }
        return channels.enumerated().map { i, c in
            labels[i] + bar(c.peak) + (c.peak <= -160 ? "   -∞ dB" : String(cFormat: " %4.0f dB", c.peak))
        }.joined(separator: "  ")
    }
}

/// What the screen knows while recording, shared between the event task and the drawing loop.
struct RecordScreenState: Sendable {
    var levels: [ChannelLevel] = []
    var stoppedByItself: RecordingStoppedEvent?
    /// recd's event stream ended under the screen: recd stopped or died.
    var daemonGone = false
    /// The last pause or resume (from this screen or any other client), and when it was seen.
    var pause: RecordingPauseState?
    var pauseSeenAt = Date()

    mutating func saw(_ p: RecordingPauseState) {
        pause = p
        pauseSeenAt = Date()
        if p.paused { levels = [] }
    }

    /// The time recorded so far, pauses not counted.
    func elapsed(startedAt: Date) -> Double {
        guard let pause else { return Date().timeIntervalSince(startedAt) }
        return pause.elapsed + (pause.paused ? 0 : Date().timeIntervalSince(pauseSeenAt))
    }

    var paused: Bool { pause?.paused ?? false }
}

extension Record {
    /// Records until Enter (or Ctrl-C), then offers preview, save (with title, notes and purpose
    /// prompts) or discard. With standard output not a terminal it prints plain lines.
    static func interactive(_ global: GlobalOptions, _ request: StartRecordingRequest) async throws {
        let client = global.client
        let tty = isatty(STDOUT_FILENO) != 0
        let keyMode = tty && isatty(STDIN_FILENO) != 0
        let input = InputReader()
        let (start, _) = try await client.call(.POST, "/v1/record/start", body: request, as: StartRecordingResponse.self)
        let id = start.recording.id
        let startedAt = Date()
        let state = Mutex(RecordScreenState())
        // The take's events (meters, pause, its end, recd's going away).
        let events = Task {
            try? await client.events("/v1/events?type=meter,recording.stopped,recording.paused,recording.resumed") { json in
                guard let event = try? APIJSON.decoder().decode(RecdEvent.self, from: Data(json.utf8)) else { return }
                switch event.payload {
                case .meter(let m) where m.recordingID == id && m.source == .recording:
                    state.withLock { if !$0.paused { $0.levels = m.channels } }
                case .recordingPaused(let p) where p.recordingID == id, .recordingResumed(let p) where p.recordingID == id:
                    state.withLock { $0.saw(p) }
                case .recordingStopped(let s) where s.recordingID == id:
                    state.withLock { $0.stoppedByItself = s }
                default: break
                }
            }
            // The stream ends only with recd (a heartbeat keeps it open meanwhile).
            if !Task.isCancelled { state.withLock { $0.daemonGone = true } }
        }
        defer { events.cancel() }

        let from = [start.video.map { "\($0.device) (\($0.width)x\($0.height))" }, start.device].compactMap { $0 }.joined(separator: " + ")
        say(tty ? "Recording from \(from). Press Enter to stop, p to pause, m to mark this moment."
                : "⏺ recording \(id.uuidString) from \(from); a line \"p\" pauses or resumes, \"m\" marks the moment, any other line (or end of input) stops it")
        // Enter, end of input, or Ctrl-C stops; so does the recording ending by itself. p pauses and
        // resumes (in key mode as it is pressed; without a terminal, a line "p").
        signal(SIGINT, SIG_IGN)
        let sigint = DispatchSource.makeSignalSource(signal: SIGINT)
        sigint.setEventHandler { interrupted.store(true, ordering: .relaxed) }
        sigint.resume()
        if keyMode { KeyMode.enter() }
        recording: while true {
            if interrupted.load(ordering: .relaxed) { break }
            if input.ready, try await !take(await input.nextKey(keyMode: keyMode, wait: false), id: id, client: client, state: state,
                                            tty: tty, keyMode: keyMode) {
                break recording
            }
            let s = state.withLock { $0 }
            if s.stoppedByItself != nil || s.daemonGone { break }
            if tty {
                let line = s.paused
                    ? "\r⏸ \(Output.duration(s.elapsed(startedAt: startedAt)))  paused: p resumes, Enter stops"
                    : "\r⏺ \(Output.duration(s.elapsed(startedAt: startedAt)))  " + LevelBar.line(s.levels)
                Console.out(Data((line + "\u{1B}[K").utf8))
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        if keyMode { KeyMode.leave() }
        interrupted.store(false, ordering: .relaxed)   // a Ctrl-C that stopped the recording is used up
        if tty { Console.out(Data("\n".utf8)) }

        guard let recording = try await stop(state.withLock { $0 }, client: client) else { return }
        say("⏹ Recorded \(Output.duration(recording.duration)).")
        // From here Ctrl-C leaves the take pending, and says so (SIGINT stays caught: the loops below
        // see `interrupted`).
        defer { sigint.cancel(); signal(SIGINT, SIG_DFL) }
        try await previewAndSave(recording, client: client, input: input, keyMode: keyMode)
    }

    /// Does what `key` asks during the take (p pauses or resumes, m marks); false when it stops it
    /// (Enter, a line, the end of input; without a terminal, any other line too).
    private static func take(_ key: Character?, id: UUID, client: RecdClient, state: borrowing Mutex<RecordScreenState>,
                             tty: Bool, keyMode: Bool) async throws -> Bool {
        switch key {
        case "p":
            let path = state.withLock { $0.paused } ? "/v1/record/resume" : "/v1/record/pause"
            do {
                let (p, _) = try await client.call(.POST, path, as: RecordingPauseState.self)
                state.withLock { $0.saw(p) }
                if !tty { say(p.paused ? Say.paused(p, already: false, resume: "a line \"p\" resumes") : Say.resumed(p, already: false)) }
            } catch ClientFailure.refused(_, let body) {
                say("\n" + body.error.message)
            }
        case "m":
            do {
                let (m, _) = try await client.call(.POST, "/v1/recordings/\(id.uuidString)/markers", body: MarkerRequest(), as: Marker.self)
                say((tty ? "\r" : "") + Mark.said(m) + (tty ? "\u{1B}[K" : ""))
            } catch ClientFailure.refused(_, let body) {
                say("\n" + body.error.message)
            }
        case "\n", nil:
            return false
        default:
            if !keyMode { return false }   // any other line stops, as before pausing existed
        }
        return true
    }

    /// The take's end: stopped here (kept pending for the preview), or as it ended by itself. recd
    /// gone: says what it kept and how to finish later (exit 3). Nil when it was discarded meanwhile.
    private static func stop(_ s: RecordScreenState, client: RecdClient) async throws -> Recording? {
        if s.daemonGone || s.stoppedByItself?.reason == .shutdown {
            if let kept = s.stoppedByItself?.recording {
                say("recd was stopped during the recording. What was recorded is kept: '\(Output.text(kept.title))' (\(Output.duration(kept.duration)))"
                    + " is pending; when recd runs again, " + Say.howToFinish(kept))
            } else {
                say("recd stopped during the recording (it was stopped or it died). What reached the disk is kept: recd's"
                    + " next start keeps it as a pending recording (`recctl list --state pending` shows it), to save or discard then.")
            }
            throw ExitCode(ExitStatus.unreachable)
        }
        if let ended = s.stoppedByItself, let kept = ended.recording {
            say("The recording ended by itself: \(ended.error ?? ended.reason.rawValue)")
            return kept
        }
        let (stop, _) = try await client.call(.POST, "/v1/record/stop", body: StopRecordingRequest(then: .keep), as: StopRecordingResponse.self)
        guard let kept = stop.recording else { say(Say.discardedWhileStopping()); return nil }
        return kept
    }

    /// The seed's preview: play it, save it (title, notes, purpose), or discard it. End of input
    /// leaves it pending (nothing is lost) and says how to finish later.
    private static func previewAndSave(_ r: Recording, client: RecdClient, input: InputReader, keyMode: Bool) async throws {
        let path = "/v1/recordings/\(r.id.uuidString)"
        input.discardTyped()
        defer { KeyMode.leave() }
        func key(_ question: String) async -> Character? {
            prompt(question)
            if keyMode { KeyMode.enter() }
            let k = await input.nextKey(keyMode: keyMode)
            if keyMode { KeyMode.leave(); say(k.map { $0 == "\n" ? "" : String($0) } ?? "") }
            return k
        }
        while true {
            guard let answer = await key("[s]ave, [p]lay it, or [d]iscard? ") else { return leftPending(r) }
            switch answer {
            case "s":
                guard let patch = await askMetadata(input) else { return leftPending(r) }
                do {
                    let (saved, _) = try await client.call(.POST, path + "/save", body: patch, as: Recording.self)
                    say(Say.saved(saved))
                    return
                } catch ClientFailure.refused(_, let body) {
                    say("Not saved: \(body.error.message)")
                }
            case "p":
                try await preview(path, client: client, input: input, keyMode: keyMode)
                if interrupted.load(ordering: .relaxed) { return leftPending(r) }
            case "d":
                guard let sure = await key(Say.confirmDiscard + " [y/N] ") else { return leftPending(r) }
                if sure == "y" {
                    let (gone, _) = try await client.call(.POST, path + "/discard", as: Recording.self)
                    say(Say.discarded(gone))
                    return
                }
                say(Say.nothingDiscarded)
            default:
                continue
            }
        }
    }

    /// Plays the take (a preview: never counted) with its progress; any key (Enter without a
    /// terminal) stops it, and so does Ctrl-C (which then leaves the take pending).
    private static func preview(_ path: String, client: RecdClient, input: InputReader, keyMode: Bool) async throws {
        let (reply, _) = try await client.call(.POST, path + "/play", body: PlayRequest(), as: PlayResponse.self)
        let session = reply.playback.session
        let live = isatty(STDOUT_FILENO) != 0
        say("▶ Playing the take (not counted as a play); \(keyMode ? "press any key" : "Enter") to stop.")
        if keyMode { KeyMode.enter() }
        defer { if keyMode { KeyMode.leave() } }
        var position = 0.0
        while true {
            let pressed = await input.nextKey(keyMode: keyMode, wait: false) != nil
            if interrupted.load(ordering: .relaxed) || pressed {
                let (s, _) = try await client.call(.POST, "/v1/playback/stop", as: PlaybackStatus.self)
                if live { Console.out(Data("\n".utf8)) }
                say("⏹ Stopped at \(Output.duration(s.lastEnded?.position ?? position)).")
                return
            }
            let (s, _) = try await client.call(.GET, "/v1/playback", as: PlaybackStatus.self)
            guard let p = s.playback, p.session == session else {
                if live { Console.out(Data("\n".utf8)) }
                say("⏹ Played to the end.")
                return
            }
            position = p.position
            if live {
                Console.out(Data("\r▶ \(Output.duration(p.position)) / \(Output.duration(p.duration))\u{1B}[K".utf8))
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Title, notes and purpose, each optional, each asked again until it fits.
    private static func askMetadata(_ input: InputReader) async -> MetadataPatch? {
        func ask(_ question: String, valid: (String) -> String?) async -> String?? {
            while true {
                prompt(question)
                guard let line = await input.nextLine() else { return .none }
                let text = line.trimmingWhitespace()
                if let problem = valid(text) { say(problem); continue }
                return .some(text.isEmpty ? nil : text)
            }
        }
        guard let title = await ask("Title (optional, \(MetadataLimits.titleMaxCharacters) characters max): ", valid: {
            $0.count > MetadataLimits.titleMaxCharacters ? "That is \($0.count) characters; the limit is \(MetadataLimits.titleMaxCharacters)."
                : $0.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) } ? "A title cannot hold control characters." : nil
        }) else { return nil }
        guard let notes = await ask("Notes (optional, \(MetadataLimits.notesMaxCharacters) characters max): ", valid: {
            $0.count > MetadataLimits.notesMaxCharacters ? "That is \($0.count) characters; the limit is \(MetadataLimits.notesMaxCharacters)." : nil
        }) else { return nil }
        let names = Purpose.allCases.map(\.rawValue)
        // A unique prefix will do ("motivation", "m"), as it does for ids.
        guard let purpose = await ask("Purpose (optional: \(names.joined(separator: ", "))): ", valid: {
            $0.isEmpty || Purpose.named($0) != nil ? nil : "Choose one of \(names.joined(separator: ", ")), or leave it blank."
        }) else { return nil }
        return MetadataPatch(title: PatchField(title), notes: PatchField(notes), purpose: PatchField(purpose.flatMap { Purpose.named($0) }))
    }

    private static func leftPending(_ r: Recording) {
        KeyMode.leave()
        say("\n" + Say.leftPending(r))
        if interrupted.load(ordering: .relaxed) { Glibc.exit(130) }
    }
}

/// Output of the screen goes straight to the file descriptor (no stdio buffer): a prompt shows at
/// once, and nothing waits on stdio's locks, which the thread blocked in readLine holds (fflush(NULL)
/// would wait for the next line typed).
func say(_ text: String) { Console.out(Data((text + "\n").utf8)) }
func prompt(_ text: String) { Console.out(Data(text.utf8)) }
