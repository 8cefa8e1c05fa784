// String helpers that Foundation's NSString extensions used to give; FoundationEssentials has none of them.

extension StringProtocol {
    /// Without leading and trailing spaces and tabs: what `trimmingCharacters(in: .whitespaces)`
    /// removes (Unicode's space separators, U+200B and tab), scalar by scalar as it does.
    public func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.isHorizontalWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.isHorizontalWhitespace })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Every `target` scalar replaced by `replacement` (scalar by scalar, unlike String's
    /// Character-based `replacing`: an "&" followed by a combining mark is still an "&").
    public func replacingScalar(_ target: Unicode.Scalar, with replacement: String) -> String {
        var out = String.UnicodeScalarView()
        for c in unicodeScalars {
            if c == target { out.append(contentsOf: replacement.unicodeScalars) } else { out.append(c) }
        }
        return String(out)
    }
}

extension Unicode.Scalar {
    /// In Foundation's `CharacterSet.whitespaces`: tab, the space separators (Zs) and U+200B.
    var isHorizontalWhitespace: Bool {
        self == "\t" || self == "\u{200B}" || properties.generalCategory == .spaceSeparator
    }
}
