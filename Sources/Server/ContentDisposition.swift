// `Content-Disposition: attachment` for a download named after what a person called it.
import Foundation

package enum ContentDisposition {
    /// `attachment` with `name` (a recording's title and its file's extension) twice (RFC 6266 §4.3):
    /// `filename*` is the name itself in UTF-8, percent-encoded (RFC 8187, which replaced 5987), for
    /// every browser of the last decade; `filename` an ASCII stand-in for clients that know no better
    /// (other characters, quotes and backslashes as `_`). Slashes and controls never reach either: a
    /// title "a/b" is saved as "a-b", not as "b" in a folder "a".
    package static func attachment(name: String) -> String {
        var cleaned = String(String.UnicodeScalarView(name.unicodeScalars.compactMap { s -> Unicode.Scalar? in
            if s == "/" || s == "\\" { return "-" }
            return s.properties.generalCategory == .control || s.properties.generalCategory == .format ? nil : s
        })).trimmingCharacters(in: .whitespaces)
        if cleaned.isEmpty || cleaned.hasPrefix(".") { cleaned = "recording" + cleaned }
        let ascii = String(String.UnicodeScalarView(cleaned.unicodeScalars.map { s in
            s.isASCII && s != "\"" ? s : "_"
        }))
        let encoded = cleaned.utf8.map { byte in
            attrChars.contains(byte) ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    /// RFC 8187's attr-char: what goes unencoded in `filename*`.
    private static let attrChars = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$&+-.^_`|~".utf8))
}
