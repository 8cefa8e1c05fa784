// How recctl prints recordings for people.
import FoundationEssentials
import Glibc
import RecdAPI

enum Output {
    /// "2:34" (or "1:02:03" past an hour); "-" when unknown. Whole seconds are cut, not rounded, as a
    /// running timer shows them: a take stopped at 6.7 s reads 0:06 on the timer and in the summary.
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds)
        let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60)
        return h > 0 ? String(cFormat: "%d:%02d:%02d", h, m, s) : String(cFormat: "%d:%02d", m, s)
    }

    /// "Oct 25, 2025 3:42 PM" in the local time zone.
    static func date(_ date: Date) -> String { DisplayDate.string(date) }

    static func plays(_ n: Int) -> String { count(n, "play") }

    /// "1 file", "2 files".
    static func count(_ n: some BinaryInteger, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }

    /// The first 8 characters of an id: what people read and type (any 4 or more are accepted).
    static func shortID(_ id: UUID) -> String { String(id.uuidString.prefix(8)) }

    /// Text a person typed, safe to print: C0/C1 controls, DEL and the bidirectional overrides are
    /// shown escaped (`\u{1B}`), so a title stored before recd refused them cannot drive the terminal
    /// of whoever lists the library. Line feeds are kept only where `multiline`.
    static func text(_ s: String, multiline: Bool = false) -> String {
        guard s.unicodeScalars.contains(where: { needsEscape($0, multiline: multiline) }) else { return s }
        var out = ""
        for c in s.unicodeScalars {
            if needsEscape(c, multiline: multiline) { out += "\\u{" + String(c.value, radix: 16, uppercase: true) + "}" }
            else { out.unicodeScalars.append(c) }
        }
        return out
    }

    private static func needsEscape(_ c: Unicode.Scalar, multiline: Bool) -> Bool {
        if multiline && c == "\n" { return false }
        switch c.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Columns a terminal gives `s`: wide (East Asian) characters and emoji take two, combining marks
    /// none (`count` would say one per character, and emoji or CJK titles pushed the columns over).
    static func width(_ s: String) -> Int { s.reduce(0) { $0 + width(of: $1) } }

    /// A grapheme cluster's columns, by the rules terminals follow (Markus Kuhn's wcwidth): an emoji
    /// shown as a picture (by default, or asked for with VS16) and East Asian wide or fullwidth
    /// characters take two; a cluster of only combining marks or format characters none; the rest one.
    static func width(of c: Character) -> Int {
        let scalars = c.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.properties.isEmojiPresentation || scalars.contains("\u{FE0F}") { return 2 }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        return isWide(first.value) ? 2 : 1
    }

    /// East Asian Wide (W) and Fullwidth (F) blocks.
    private static func isWide(_ v: UInt32) -> Bool {
        switch v {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
             0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// Pads or cuts to `columns` terminal columns.
    static func cell(_ s: String, _ columns: Int) -> String {
        var w = width(s)
        if w <= columns { return s + String(repeating: " ", count: columns - w) }
        var out = ""
        w = 0
        for c in s {
            let cw = width(of: c)
            if w + cw > columns - 1 { break }
            out.append(c); w += cw
        }
        return out + "…" + String(repeating: " ", count: columns - 1 - w)
    }

    /// The title column gets what the titles need (a 40-character title of wide characters needs 83
    /// columns with its icon), cut with … only to fit the terminal: its width (or `COLUMNS` when the
    /// output is not a terminal) less the other columns. A pipe without `COLUMNS` gets whole titles.
    static func table(_ recordings: [Recording], columns: Int? = terminalColumns()) -> String {
        let titles = recordings.map { (r: Recording) in (r.type == .video ? "🎥 " : "🎙️ ") + text(r.title) }
        let states = recordings.map { $0.state.spoken + ($0.recovered ? " (recovered)" : "") }
        let needed = max(width("TITLE"), titles.map(width).max() ?? 0)
        // ID, CREATED, LENGTH, PLAYS, the gaps, and the widest STATE.
        let others = 8 + 2 + 2 + 21 + 2 + 7 + 2 + 5 + 2 + max(5, states.map(width).max() ?? 0)
        let titleColumns = columns.map { min(needed, max(20, $0 - others)) } ?? needed
        var lines = [cell("ID", 8) + "  " + cell("TITLE", titleColumns) + "  " + cell("CREATED", 21) + "  "
                     + cell("LENGTH", 7) + "  " + cell("PLAYS", 5) + "  STATE"]
        for (i, r) in recordings.enumerated() {
            lines.append(cell(shortID(r.id), 8) + "  " + cell(titles[i], titleColumns) + "  "
                         + cell(date(r.createdAt), 21) + "  " + cell(duration(r.duration), 7) + "  "
                         + cell(String(r.playCount), 5) + "  " + states[i])
        }
        return lines.joined(separator: "\n")
    }

    /// The terminal's width in columns: stdout's, else `COLUMNS` (a script may set it for a pipe);
    /// nil when neither says.
    static func terminalColumns() -> Int? {
        var size = winsize()
        if isatty(STDOUT_FILENO) != 0, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let c = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), c > 0 { return c }
        return nil
    }

    static func details(_ r: Recording) -> String {
        var rows: [(String, String)] = [
            ("id", r.id.uuidString), ("title", text(r.title)), ("type", r.type.rawValue), ("state", r.state.spoken),
            ("created", date(r.createdAt)), ("duration", duration(r.duration)),
            ("size", r.sizeBytes.map { byteCountString($0) } ?? "-"),
            ("purpose", r.purpose?.rawValue ?? "-"), ("plays", String(r.playCount)),
            ("last played", r.lastPlayedAt.map(date) ?? "never"), ("file", r.file), ("made by", madeBy(r.source)),
            ("format", format(r)), ("loudness", loudness(r)),
        ]
        if r.recovered { rows.append(("recovered", "yes (salvaged after a crash)")) }
        if r.droppedFrames > 0 { rows.append(("dropped frames", String(r.droppedFrames))) }
        if !r.notes.isEmpty {
            rows.append(("notes", text(r.notes, multiline: true).replacingScalar("\n", with: "\n" + cell("", 16))))
        }
        return rows.map { cell($0.0 + ":", 16) + $0.1 }.joined(separator: "\n")
    }

    static func madeBy(_ s: RecordingSource) -> String {
        switch s {
        case .record: "recording"
        case .listen: "listening (a thing said)"
        case .import: "import"
        }
    }

    /// "FLAC (lossless)", "Opus", "AAC"; what a silent video or a file in another codec has instead.
    static func format(_ r: Recording) -> String {
        switch r.format {
        case .aac: return "AAC"
        case .opus: return "Opus"
        case .flac: return "FLAC (lossless)"
        case nil: return r.type == .video && r.loudness == nil && r.state != .recording ? "no sound, or not known" : "not known"
        }
    }

    /// "-16.2 LUFS, range 4.1 LU, true peak -1.3 dBTP" (EBU R128), or why there is none.
    static func loudness(_ r: Recording) -> String {
        guard let l = r.loudness else { return r.state == .recording ? "-" : "not measured yet" }
        let i = l.integrated.map { String(cFormat: "%.1f LUFS", $0) } ?? "silent (-∞ LUFS)"
        let range = l.range.map { String(cFormat: ", range %.1f LU", $0) } ?? ""
        let peak = l.truePeak.map { String(cFormat: ", true peak %.1f dBTP", $0) } ?? ""
        return i + range + peak
    }

    /// "48000 Hz, 1 ch" and the sample format when it is not the recording's own.
    static func format(_ f: AudioFormatInfo) -> String {
        "\(f.sampleRate) Hz, \(count(f.channels, "channel"))" + (f.sampleFormat == "S16_LE" ? "" : ", \(f.sampleFormat)")
    }

    /// "\n(the device delivers 44100 Hz, 2 channels, S32_LE; recorded as 48000 Hz, 1 channel)" when
    /// recd converts; nothing when the device gives the recording's format.
    static func conversion(_ device: AudioFormatInfo?, _ recorded: AudioFormatInfo?) -> String {
        guard let device, let recorded, device != recorded else { return "" }
        return "\n(the device delivers \(format(device)); recorded as \(format(recorded)))"
    }

    /// `'Morning walk' (3F2A9C1E, 0:42, saved)`.
    static func oneLine(_ r: Recording) -> String {
        "'\(text(r.title))' (\(shortID(r.id)), \(duration(r.duration)), \(r.state.spoken))"
    }
}

/// One place for the words recctl prints about each event, whichever command or screen it comes
/// from, so the same thing always reads the same.
enum Say {
    static func started(_ r: Recording, from sources: String) -> String {
        "⏺ Recording '\(Output.text(r.title))' (\(Output.shortID(r.id))) from \(sources)"
    }
    static func saved(_ r: Recording) -> String { "Recording saved ✓ \(Output.oneLine(r))" }
    /// Without the state: a discarded recording has none left.
    static func discarded(_ r: Recording) -> String { discarded(title: r.title, id: r.id, seconds: r.duration) }
    static func discarded(title: String, id: UUID, seconds: Double?) -> String {
        "Recording discarded: '\(Output.text(title))' (\(Output.shortID(id)), \(Output.duration(seconds)))"
    }
    static func discardedWhileStopping() -> String { "Recording discarded" }
    static func deleted(_ r: Recording) -> String { "Recording deleted: \(Output.oneLine(r))" }
    static func allDeleted(recordings: Int, files: Int) -> String {
        "All data deleted (\(Output.count(recordings, "recording")), \(Output.count(files, "file")))"
    }
    static let nothingDeleted = "Nothing was deleted."
    static let nothingDiscarded = "Nothing was discarded."
    static func updated(_ r: Recording) -> String { "Recording updated ✓\n" + Output.details(r) }
    static func stopped(_ r: Recording) -> String {
        r.state == .ready ? saved(r) : "⏹ Recording stopped: \(Output.oneLine(r))\nIt is pending: " + howToFinish(r)
    }
    static func howToFinish(_ r: Recording) -> String {
        "save it with `recctl save \(Output.shortID(r.id))` or discard it with `recctl discard \(Output.shortID(r.id))`."
    }
    /// `resume`: how to resume from where this is said (the recording screen has its own way).
    static func paused(_ p: RecordingPauseState, already: Bool, resume: String = "resume with `recctl record resume`") -> String {
        already ? "⏸ Already paused at \(Output.duration(p.elapsed)) (for \(Output.duration(p.pausedFor))); \(resume)."
                : "⏸ Paused at \(Output.duration(p.elapsed)); \(resume)."
    }
    static func resumed(_ p: RecordingPauseState, already: Bool) -> String {
        already ? "⏺ Already recording (\(Output.duration(p.elapsed)) so far)."
                : "⏺ Resumed at \(Output.duration(p.elapsed)) after a pause of \(Output.duration(p.pausedFor))."
    }
    static func leftPending(_ r: Recording) -> String { "Recording left pending: " + howToFinish(r) }
    /// The seed's confirmations (Screens 5.3.3, 5.4.4, 7.3).
    static let confirmDiscard = "Discard recording? This cannot be undone."
    static func confirmDelete(_ r: Recording) -> String {
        "Delete '\(Output.text(r.title))'? This recording will be permanently deleted. This cannot be undone."
    }
    static let confirmDeleteAll = "Delete All Data? This will permanently delete all recordings. This cannot be undone."
    /// What to do about an empty library: one command, the same wherever it is suggested (list, top).
    static let firstRecording = "Create motivational content to play during cravings: recctl record"
    static let emptyLibrary = "No recordings yet. " + firstRecording
    static let noSavedRecordings = "No saved recordings yet. " + firstRecording
}
