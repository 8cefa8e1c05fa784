// `recctl record` with no subcommand: the seed's recording screen (5.3.2) and preview-then-save
// (5.3.3) in a terminal.
import ArgumentParser
import Foundation
import NIOHTTP1
import RecdAPI
import Synchronization

/// Lines typed on standard input, read on a thread of their own (readLine blocks).
final class LineReader: Sendable {
    /// Lines not yet taken; a nil at the end marks the end of input (and stays there).
    private let queue = Mutex<[String?]>([])

    init() {
        let thread = Thread { [self] in
            while true {
                let line = readLine(strippingNewline: true)
                self.queue.withLock { $0.append(line) }
                if line == nil { return }
            }
        }
        thread.start()
    }

    /// Whether a line (or the end of input) is waiting.
    var ready: Bool { queue.withLock { !$0.isEmpty } }

    /// The next line; nil at the end of input.
    func next() async -> String? {
        while true {
            let taken = queue.withLock { q -> String?? in
                guard let first = q.first else { return .none }
                if first != nil { q.removeFirst() }
                return .some(first)
            }
            if let line = taken { return line }
            try? await Task.sleep(for: .milliseconds(20))
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
            labels[i] + bar(c.peak) + (c.peak <= -160 ? "   -∞ dB" : String(format: " %4.0f dB", c.peak))
        }.joined(separator: "  ")
    }
}

/// What the screen knows while recording, shared between the event task and the drawing loop.
struct RecordScreenState: Sendable {
    var levels: [ChannelLevel] = []
    var stoppedByItself: RecordingStoppedEvent?
}

extension Record {
    /// Records until Enter (or Ctrl-C), then offers preview, save (with title, notes and purpose
    /// prompts) or discard. With standard output not a terminal it prints plain lines.
    static func interactive(_ global: GlobalOptions, _ request: StartRecordingRequest) async throws {
        let client = global.client
        let tty = isatty(STDOUT_FILENO) != 0
        let lines = LineReader()
        let (start, _) = try await client.call(.POST, "/v1/record/start", body: request, as: StartRecordingResponse.self)
        let id = start.recording.id
        let startedAt = Date()
        let state = Mutex(RecordScreenState())
        let events = Task {
            try? await client.events("/v1/events?type=meter,recording.stopped") { json in
                guard let event = try? APIJSON.decoder().decode(RecdEvent.self, from: Data(json.utf8)) else { return }
                switch event.payload {
                case .meter(let m) where m.recordingID == id && m.source == .recording:
                    state.withLock { $0.levels = m.channels }
                case .recordingStopped(let s) where s.recordingID == id:
                    state.withLock { $0.stoppedByItself = s }
                default: break
                }
            }
        }
        defer { events.cancel() }

        let from = [start.video.map { "\($0.device) (\($0.width)x\($0.height))" }, start.device].compactMap { $0 }.joined(separator: " + ")
        say(tty ? "Recording from \(from). Press Enter to stop." : "⏺ recording \(id.uuidString) from \(from); Enter (or end of input) stops it")
        // Enter, end of input, or Ctrl-C stops; so does the recording ending by itself.
        signal(SIGINT, SIG_IGN)
        let sigint = DispatchSource.makeSignalSource(signal: SIGINT)
        sigint.setEventHandler { interrupted.store(true, ordering: .relaxed) }
        sigint.resume()
        while !lines.ready {
            if interrupted.load(ordering: .relaxed) { break }
            let s = state.withLock { $0 }
            if s.stoppedByItself != nil { break }
            if tty {
                let elapsed = Int(Date().timeIntervalSince(startedAt))
                let line = String(format: "\r⏺ %02d:%02d  ", elapsed / 60, elapsed % 60) + LevelBar.line(s.levels) + "\u{1B}[K"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        _ = lines.ready ? await lines.next() : nil   // the Enter that stopped it
        sigint.cancel()
        signal(SIGINT, SIG_DFL)
        if tty { FileHandle.standardOutput.write(Data("\n".utf8)) }

        let recording: Recording
        if let ended = state.withLock({ $0.stoppedByItself }), let kept = ended.recording {
            say("The recording ended by itself: \(ended.error ?? ended.reason.rawValue)")
            recording = kept
        } else {
            let (stop, _) = try await client.call(.POST, "/v1/record/stop", body: StopRecordingRequest(then: .keep),
                                                  as: StopRecordingResponse.self)
            guard let kept = stop.recording else { say("⏹ stopped and discarded"); return }
            recording = kept
        }
        say("⏹ Recorded \(Output.duration(recording.duration)).")
        try await previewAndSave(recording, client: client, lines: lines)
    }

    /// The seed's preview: play it, save it (title, notes, purpose), or discard it. End of input
    /// leaves it pending (nothing is lost) and says how to finish later.
    private static func previewAndSave(_ r: Recording, client: RecdClient, lines: LineReader) async throws {
        let path = "/v1/recordings/\(r.id.uuidString)"
        while true {
            prompt("[s]ave, [p]lay it, or [d]iscard? ")
            guard let answer = await lines.next() else { return leftPending(r) }
            switch answer.trimmingCharacters(in: .whitespaces).lowercased() {
            case "s", "save":
                guard let patch = await askMetadata(lines) else { return leftPending(r) }
                do {
                    let (saved, _) = try await client.call(.POST, path + "/save", body: patch, as: Recording.self)
                    say("Recording saved ✓ \(Output.oneLine(saved))")
                    return
                } catch ClientFailure.refused(_, let body) {
                    say("Not saved: \(body.error.message)")
                }
            case "p", "play":
                let (reply, _) = try await client.call(.POST, path + "/play", body: PlayRequest(), as: PlayResponse.self)
                say("▶ playing the preview (\(Output.duration(reply.playback.duration)); not counted as a play)")
            case "d", "discard":
                prompt("Discard recording? This cannot be undone. [y/N] ")
                let sure = (await lines.next())?.trimmingCharacters(in: .whitespaces).lowercased()
                if sure == "y" || sure == "yes" {
                    _ = try await client.call(.POST, path + "/discard", as: Recording.self)
                    say("Recording discarded")
                    return
                }
            default:
                continue
            }
        }
    }

    /// Title, notes and purpose, each optional, each asked again until it fits.
    private static func askMetadata(_ lines: LineReader) async -> MetadataPatch? {
        func ask(_ question: String, valid: (String) -> String?) async -> String?? {
            while true {
                prompt(question)
                guard let line = await lines.next() else { return .none }
                let text = line.trimmingCharacters(in: .whitespaces)
                if let problem = valid(text) { say(problem); continue }
                return .some(text.isEmpty ? nil : text)
            }
        }
        guard let title = await ask("Title (optional, \(MetadataLimits.titleMaxCharacters) characters max): ", valid: {
            $0.count > MetadataLimits.titleMaxCharacters ? "That is \($0.count) characters; the limit is \(MetadataLimits.titleMaxCharacters)." : nil
        }) else { return nil }
        guard let notes = await ask("Notes (optional, \(MetadataLimits.notesMaxCharacters) characters max): ", valid: {
            $0.count > MetadataLimits.notesMaxCharacters ? "That is \($0.count) characters; the limit is \(MetadataLimits.notesMaxCharacters)." : nil
        }) else { return nil }
        let names = Purpose.allCases.map(\.rawValue)
        guard let purpose = await ask("Purpose (optional: \(names.joined(separator: ", "))): ", valid: {
            $0.isEmpty || names.contains($0.lowercased()) ? nil : "Choose one of \(names.joined(separator: ", ")), or leave it blank."
        }) else { return nil }
        return MetadataPatch(title: title.map { .value($0) } ?? .absent,
                             notes: notes.map { .value($0) } ?? .absent,
                             purpose: purpose.map { .value($0.lowercased()) } ?? .absent)
    }

    private static func leftPending(_ r: Recording) {
        say("\nLeft pending: save it with `recctl save \(r.id.uuidString.prefix(8))` or discard it with `recctl discard \(r.id.uuidString.prefix(8))`.")
    }
}

/// Output of the screen goes straight to the file descriptor (no stdio buffer): a prompt shows at
/// once, and nothing waits on stdio's locks, which the thread blocked in readLine holds (fflush(NULL)
/// would wait for the next line typed).
func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
func prompt(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
