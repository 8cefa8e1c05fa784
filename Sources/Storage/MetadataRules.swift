// The seed's metadata rules (Screens 5.3.3 and 5.4.3): limits, purpose chips, auto titles.
import Foundation
import RecdAPI

/// A validated change to title, notes and purpose. `nil` fields are left as they are.
public struct MetadataChange: Sendable, Equatable {
    /// `.some(nil)` means "blank: use the auto title".
    public var title: String??
    public var notes: String?
    /// `.some(nil)` clears the purpose.
    public var purpose: Purpose??

    public init(title: String?? = nil, notes: String? = nil, purpose: Purpose?? = nil) {
        self.title = title; self.notes = notes; self.purpose = purpose
    }
}

public enum MetadataRules {
    /// Checks a request's fields against the limits. Throws before anything is changed.
    public static func validate(_ patch: MetadataPatch) throws(StorageError) -> MetadataChange {
        var change = MetadataChange()
        switch patch.title {
        case .absent: break
        case .null: change.title = .some(nil)
        case .value(let raw):
            // Line breaks and controls are refused wherever they are, before trimming: what the
            // document's pattern declares is what is accepted ("Title\n" is not a one-line title).
            guard !raw.contains(where: { $0.isNewline }) else {
                throw .invalidValue(field: "title", detail: "a title is one line")
            }
            if let c = firstControl(in: raw, allowingNewlines: false) {
                throw .invalidValue(field: "title", detail: "\(Self.kind(c)) \(Self.name(c)) is not allowed")
            }
            let title = raw.trimmingCharacters(in: .whitespaces)
            if title.isEmpty {
                change.title = .some(nil)
            } else {
                // `count` counts grapheme clusters: what a person sees as characters.
                guard title.count <= MetadataLimits.titleMaxCharacters else {
                    throw .fieldTooLong(field: "title", limit: MetadataLimits.titleMaxCharacters, count: title.count)
                }
                change.title = .some(title)
            }
        }
        switch patch.notes {
        case .absent: break
        case .null: change.notes = ""
        case .value(let raw):
            // A browser or a Windows client may send CRLF line ends: kept as line feeds.
            let notes = crlfToLF(raw)
            guard notes.count <= MetadataLimits.notesMaxCharacters else {
                throw .fieldTooLong(field: "notes", limit: MetadataLimits.notesMaxCharacters, count: notes.count)
            }
            if let c = firstControl(in: notes, allowingNewlines: true) {
                throw .invalidValue(field: "notes", detail: "\(Self.kind(c)) \(Self.name(c)) is not allowed (line breaks are)")
            }
            change.notes = notes
        }
        switch patch.purpose {
        case .absent: break
        case .null: change.purpose = .some(nil)
        case .value(let raw):
            if raw.isEmpty || raw == "none" {
                change.purpose = .some(nil)
            } else if let p = Purpose(rawValue: raw) {
                // Exactly as the document's enum spells them: what the API accepts is what it declares
                // (recctl lower-cases what people type).
                change.purpose = .some(p)
            } else {
                let allowed = Purpose.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidValue(field: "purpose", detail: "'\(raw)' is not one of \(allowed), or none (spelled exactly so)")
            }
        }
        return change
    }

    /// The first C0 or C1 control character, DEL, or bidirectional override or isolate (U+202A–U+202E,
    /// U+2066–U+2069) in `text` (a line feed allowed where asked). Such characters would reach the
    /// terminals and pages of everyone who lists the library: an escape sequence in a title can
    /// recolour, move the cursor or retitle the window of another user of the socket, and an override
    /// shows text other than what is stored ("Trojan Source", CVE-2021-42574: `memo‮vaw.exe` reads
    /// as `memoexe.wav`), in a title, a note or an imported file's name alike. Refused, not removed:
    /// what is stored is what was sent, or nothing.
    public static func firstControl(in text: String, allowingNewlines: Bool) -> Unicode.Scalar? {
        text.unicodeScalars.first { c in
            if allowingNewlines && c == "\n" { return false }
            return c.value < 0x20 || (0x7F...0x9F).contains(c.value) || isBidiControl(c)
        }
    }

    /// The explicit directional embeddings, overrides and isolates (LRE, RLE, PDF, LRO, RLO, LRI,
    /// RLI, FSI, PDI). The implicit marks (LRM, RLM, ALM) reorder nothing around them and stay allowed.
    public static func isBidiControl(_ c: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(c.value) || (0x2066...0x2069).contains(c.value)
    }

    /// What `c`, a character `firstControl` found, is called in an error message.
    public static func kind(_ c: Unicode.Scalar) -> String {
        isBidiControl(c) ? "bidirectional formatting character" : "control character"
    }

    /// CR LF → LF, scalar by scalar: Foundation's `replacingOccurrences` left the CR of "P\r\n\u{C4D}"
    /// (a combining mark after the line break; found by the fuzzer), which was then refused as a control.
    public static func crlfToLF(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        for (i, c) in scalars.enumerated() where !(c == "\r" && i + 1 < scalars.count && scalars[i + 1] == "\n") {
            out.append(c)
        }
        return String(out)
    }

    /// `U+001B` for the error message.
    public static func name(_ c: Unicode.Scalar) -> String { String(format: "U+%04X", c.value) }

    /// "Recording Oct 25, 2025 3:42 PM": the creation time in `timeZone`, nil: the system's (libc's).
    public static func autoTitle(for date: Date, timeZone: TimeZone? = nil) -> String {
        "Recording " + (timeZone.map { DisplayDate.string(date, timeZone: $0) } ?? DisplayDate.string(date))
    }

    /// Applies `change` to `r`; a blank title becomes the auto title of `r.createdAt`.
    public static func apply(_ change: MetadataChange, to r: inout Recording, timeZone: TimeZone? = nil) {
        if let title = change.title { r.title = title ?? autoTitle(for: r.createdAt, timeZone: timeZone) }
        if let notes = change.notes { r.notes = notes }
        if let purpose = change.purpose { r.purpose = purpose }
    }
}
