// The API's hottest replies — recordings and lists of them — written straight to bytes.
import FoundationEssentials

/// Writes a `Recording` or a `RecordingList` as JSON, byte for byte what `APIJSON.encoder()` writes
/// (sorted keys, slashes as they are, declared nulls, dates with milliseconds, numbers as Foundation
/// writes them), without Codable's keyed containers: Foundation's JSONEncoder was most of the time
/// of listing 50 recordings (13× the SQL query), and of the reply to every counted play.
/// `RecordingJSONTests` holds it to the encoder's output.
public enum RecordingJSON {
    public static func encode(_ list: RecordingList) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(64 + list.recordings.count * 560)
        out.append(contentsOf: #"{"limit":"#.utf8)
        int(list.limit, &out)
        out.append(contentsOf: #","offset":"#.utf8)
        int(list.offset, &out)
        out.append(contentsOf: #","recordings":["#.utf8)
        for (i, r) in list.recordings.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            append(r, to: &out)
        }
        out.append(contentsOf: #"],"total":"#.utf8)
        int(list.total, &out)
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    public static func encode(_ r: Recording) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(600)
        append(r, to: &out)
        return Data(out)
    }

    /// One recording's JSON object, appended; the keys in the encoder's sorted order.
    public static func append(_ r: Recording, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"createdAt":"#.utf8)
        string(APIJSON.formatDate(r.createdAt), &out)
        out.append(contentsOf: #","droppedFrames":"#.utf8)
        int(r.droppedFrames, &out)
        out.append(contentsOf: #","duration":"#.utf8)
        optional(r.duration, &out, double)
        out.append(contentsOf: #","file":"#.utf8)
        string(r.file, &out)
        out.append(contentsOf: #","format":"#.utf8)
        optional(r.format?.rawValue, &out, string)
        out.append(contentsOf: #","id":"#.utf8)
        uuid(r.id, &out)
        out.append(contentsOf: #","lastPlayedAt":"#.utf8)
        optional(r.lastPlayedAt.map(APIJSON.formatDate), &out, string)
        out.append(contentsOf: #","loudness":"#.utf8)
        optional(r.loudness, &out) { l, out in
            out.append(contentsOf: #"{"integrated":"#.utf8)
            optional(l.integrated, &out, double)
            out.append(contentsOf: #","range":"#.utf8)
            optional(l.range, &out, double)
            out.append(contentsOf: #","truePeak":"#.utf8)
            optional(l.truePeak, &out, double)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: #","notes":"#.utf8)
        string(r.notes, &out)
        out.append(contentsOf: #","playCount":"#.utf8)
        int(r.playCount, &out)
        out.append(contentsOf: #","purpose":"#.utf8)
        optional(r.purpose?.rawValue, &out, string)
        out.append(contentsOf: #","recovered":"#.utf8)
        out.append(contentsOf: (r.recovered ? "true" : "false").utf8)
        out.append(contentsOf: #","sizeBytes":"#.utf8)
        optional(r.sizeBytes.map(Int.init), &out, int)
        out.append(contentsOf: #","source":"#.utf8)
        string(r.source.rawValue, &out)
        out.append(contentsOf: #","state":"#.utf8)
        string(r.state.rawValue, &out)
        out.append(contentsOf: #","title":"#.utf8)
        string(r.title, &out)
        out.append(contentsOf: #","type":"#.utf8)
        string(r.type.rawValue, &out)
        out.append(UInt8(ascii: "}"))
    }

    private static func optional<T>(_ value: T?, _ out: inout [UInt8], _ write: (T, inout [UInt8]) -> Void) {
        if let value { write(value, &out) } else { out.append(contentsOf: "null".utf8) }
    }

    private static func int(_ v: Int, _ out: inout [UInt8]) { out.append(contentsOf: String(v).utf8) }

    /// As Foundation's encoder writes a Double: its description, without a trailing ".0".
    private static func double(_ v: Double, _ out: inout [UInt8]) {
        var s = v.description
        if s.hasSuffix(".0") { s.removeLast(2) }
        out.append(contentsOf: s.utf8)
    }

    /// `"XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX"` as `uuidString` writes it (upper case), from the bytes
    /// (`uuidString` went through sprintf: a tenth of a listing's reply).
    private static func uuid(_ id: UUID, _ out: inout [UInt8]) {
        let hex: StaticString = "0123456789ABCDEF"
        out.append(UInt8(ascii: "\""))
        withUnsafeBytes(of: id.uuid) { bytes in
            hex.withUTF8Buffer { digits in
                for (i, byte) in bytes.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
                    out.append(digits[Int(byte >> 4)])
                    out.append(digits[Int(byte & 0xF)])
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A JSON string: `"` and `\` escaped, control characters as \n \r \t \b \f or \u00XX. A string
    /// with nothing to escape (nearly all) is copied whole.
    private static func string(_ s: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        let copied = s.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
