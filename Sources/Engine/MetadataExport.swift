// The seed's "Export Data" (Screen 7.2): recording metadata as CSV (RFC 4180) or JSON; no files.
import Foundation
import RecdAPI
import Storage

public enum MetadataExport {
    public static let csvHeader = ["id", "title", "timestamp", "duration", "type", "purpose", "playCount",
                                   "loudnessLUFS", "loudnessRangeLU", "truePeakDBTP", "transcript",
                                   "notes", "sizeBytes", "lastPlayedAt", "markers"]

    /// `transcripts`: the text of each recording's transcript, by id; `markers`: its markers.
    public static func rows(_ recordings: [Recording], transcripts: [UUID: String] = [:], markers: [UUID: [Marker]] = [:]) -> [ExportRow] {
        recordings.map {
            ExportRow(id: $0.id, title: $0.title, timestamp: $0.createdAt, duration: $0.duration,
                      type: $0.type, purpose: $0.purpose, playCount: $0.playCount, loudness: $0.loudness,
                      transcript: transcripts[$0.id], notes: $0.notes, sizeBytes: $0.sizeBytes,
                      lastPlayedAt: $0.lastPlayedAt, markers: markers[$0.id] ?? [])
        }
    }

    /// A recording's markers in one cell: "12.500 Intro; 65.000 The dentist" (seconds, then the label).
    static func markersCell(_ markers: [Marker]) -> String {
        markers.map { String(format: "%.3f", $0.time) + ($0.label.isEmpty ? "" : " " + $0.label) }.joined(separator: "; ")
    }

    /// RFC 4180: CRLF line ends, a header line, fields quoted when they hold a comma, quote, CR or LF,
    /// quotes doubled.
    public static func csv(_ rows: [ExportRow]) -> String {
        var out = csvHeader.joined(separator: ",") + "\r\n"
        for r in rows {
            let fields = [
                r.id.uuidString, neutralized(r.title), APIJSON.formatDate(r.timestamp),
                r.duration.map { String(format: "%.3f", $0) } ?? "",
                r.type.rawValue, r.purpose?.rawValue ?? "", String(r.playCount),
                // Empty until measured; "-inf" for a silent recording's integrated loudness.
                r.loudness.map { $0.integrated.map { String(format: "%.2f", $0) } ?? "-inf" } ?? "",
                r.loudness?.range.map { String(format: "%.2f", $0) } ?? "",
                r.loudness?.truePeak.map { String(format: "%.2f", $0) } ?? "",
                neutralized(r.transcript ?? ""),
                neutralized(r.notes), r.sizeBytes.map(String.init) ?? "",
                r.lastPlayedAt.map(APIJSON.formatDate) ?? "",
                markersCell(r.markers),
            ]
            out += fields.map(csvField).joined(separator: ",") + "\r\n"
        }
        return out
    }

    /// A person's text as a spreadsheet cell that is never a formula (OWASP's CSV injection rule): a
    /// cell beginning with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, which
    /// spreadsheets show as text and do not run. A title `=1+2` opens as `'=1+2`, not as 3 (or worse,
    /// `=HYPERLINK(…)` or `=cmd|…`). The title needs it, the notes, and the transcript (what someone
    /// said, as heard); the markers' cell starts with a number.
    static func neutralized(_ s: String) -> String {
        guard let first = s.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return s }
        return "'" + s
    }

    static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public static func json(_ rows: [ExportRow], exportedAt: Date) throws -> Data {
        try APIJSON.encoder(pretty: true).encode(ExportDocument(exportedAt: exportedAt, recordings: rows))
    }

    /// `recd_export_2025-10-25.csv`: the date in the given time zone.
    public static func fileName(format: ExportFormat, date: Date, timeZone: TimeZone = .current) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = timeZone
        f.dateFormat = "yyyy-MM-dd"
        return "recd_export_\(f.string(from: date)).\(format.rawValue)"
    }
}
