// How recctl prints recordings for people.
import Foundation
import RecdAPI

enum Output {
    /// "2:34" (or "1:02:03" past an hour); "-" when unknown.
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds.rounded())
        let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    /// "Oct 25, 2025 3:42 PM" in the local time zone.
    static func date(_ date: Date) -> String { DisplayDate.string(date) }

    static func plays(_ n: Int) -> String { n == 1 ? "1 play" : "\(n) plays" }

    /// Pads or cuts to `width` user-perceived characters.
    static func cell(_ s: String, _ width: Int) -> String {
        s.count > width ? String(s.prefix(width - 1)) + "…" : s + String(repeating: " ", count: width - s.count)
    }

    static func table(_ recordings: [Recording]) -> String {
        var lines = [cell("ID", 8) + "  " + cell("TITLE", 40) + "  " + cell("CREATED", 21) + "  "
                     + cell("LENGTH", 7) + "  " + cell("PLAYS", 5) + "  STATE"]
        for r in recordings {
            lines.append(cell(String(r.id.uuidString.prefix(8)), 8) + "  " + cell(r.title, 40) + "  "
                         + cell(date(r.createdAt), 21) + "  " + cell(duration(r.duration), 7) + "  "
                         + cell(String(r.playCount), 5) + "  " + r.state.rawValue + (r.recovered ? " (recovered)" : ""))
        }
        return lines.joined(separator: "\n")
    }

    static func details(_ r: Recording) -> String {
        var rows: [(String, String)] = [
            ("id", r.id.uuidString), ("title", r.title), ("type", r.type.rawValue), ("state", r.state.rawValue),
            ("created", date(r.createdAt)), ("duration", duration(r.duration)),
            ("size", r.sizeBytes.map { ByteCountFormatter.string(fromByteCount: $0, countStyle: .file) } ?? "-"),
            ("purpose", r.purpose?.rawValue ?? "-"), ("plays", String(r.playCount)),
            ("last played", r.lastPlayedAt.map(date) ?? "never"), ("file", r.file),
        ]
        if r.recovered { rows.append(("recovered", "yes (salvaged after a crash)")) }
        if r.droppedFrames > 0 { rows.append(("dropped frames", String(r.droppedFrames))) }
        if !r.notes.isEmpty { rows.append(("notes", r.notes)) }
        return rows.map { cell($0.0 + ":", 16) + $0.1 }.joined(separator: "\n")
    }

    static func oneLine(_ r: Recording) -> String {
        "\(r.title) (\(r.id.uuidString.prefix(8)), \(duration(r.duration)), \(r.state.rawValue))"
    }
}
