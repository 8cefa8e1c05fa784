// What recctl took from Foundation beyond FoundationEssentials, as small code over the C library:
// recctl does not load Foundation, FoundationInternationalization or ICU (they were half of its
// start-up time; see BENCHMARKS.md, "Client start-up").
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Standard output and error, written straight to the file descriptor (no stdio buffer), as
/// `FileHandle.standardOutput.write` did: a line or a prompt shows at once.
enum Console {
    static func out(_ bytes: some Sequence<UInt8>) { write(Array(bytes), to: STDOUT_FILENO) }
    static func out(_ text: String) { out(Array(text.utf8)) }
    static func err(_ bytes: some Sequence<UInt8>) { write(Array(bytes), to: STDERR_FILENO) }
    static func err(_ text: String) { err(Array(text.utf8)) }

    /// Every byte, across short writes and EINTR; stops at any other error (a closed pipe) and
    /// returns false.
    @discardableResult
    static func write(_ bytes: some ContiguousBytes, to fd: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
    }
}

extension String {
    /// printf-style formatting by the C library (`%.1f`, `%+.1f`, `%g`, `%02x`), as `String(format:)`
    /// wrote these: Foundation's formatter is not in FoundationEssentials.
    init(cFormat format: String, _ arguments: any CVarArg...) {
        self = cFormatted(format, arguments)
    }

    /// Percent-encoded for a URL: ASCII letters and digits and `extra` kept, every other byte of the
    /// UTF-8 as %XX. What `addingPercentEncoding(withAllowedCharacters: .alphanumerics ∪ extra)` wrote:
    /// it too encodes every non-ASCII byte, letters included.
    func percentEncoded(keeping extra: String) -> String {
        let keep = Set(extra.utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.append(byte)
            case _ where keep.contains(byte):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The last component of a path ("Recordings/audio_X.m4a" → "audio_X.m4a"), as NSString's
    /// `lastPathComponent`: trailing slashes ignored.
    var lastPathComponent: String {
        var path = Substring(self)
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
    }

    /// "m4a" of "Recordings/audio_X.m4a"; "" when the last component has no dot, or only a leading
    /// or trailing one (as NSString's `pathExtension`).
    var pathExtension: String {
        let last = lastPathComponent
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return "" }
        return String(last[last.index(after: dot)...])
    }
}

private func cFormatted(_ format: String, _ arguments: [any CVarArg]) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    let needed = Int(withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) })
    if needed >= buffer.count {
        buffer = [CChar](repeating: 0, count: needed + 1)
        _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
    }
    return String(decoding: buffer.prefix(max(0, needed)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// "1.2 MB", "345 KB", "Zero KB": what Foundation's `ByteCountFormatter.string(fromByteCount:countStyle: .file)`
/// writes (powers of 1000), without the ICU number formatter behind it. KB with no decimals, MB with
/// one, GB and up with two; the amount rounded half to even from its shortest decimal digits (as ICU
/// rounds a Double), trailing zeros dropped, thousands grouped with ",". Checked against Foundation on
/// 57,000 sizes, every rounding edge included.
func byteCountString(_ count: Int64) -> String {
    if count == 0 { return "Zero KB" }
    if count == 1 || count == -1 { return "\(count) byte" }
    let magnitude = count.magnitude
    if magnitude < 1000 { return "\(count) bytes" }
    let units = ["KB", "MB", "GB", "TB", "PB", "EB"]
    var unit = 0
    var divisor: UInt64 = 1000
    while unit + 1 < units.count, magnitude / divisor >= 1000 { unit += 1; divisor *= 1000 }
    let value = Double(count) / Double(divisor)   // below 1000 in its unit
    return decimalString(value, fractionDigits: min(unit, 2)) + " " + units[unit]
}

/// `value` (finite, below 1e15 in magnitude) with at most `fractionDigits` decimals, rounded half to even
/// on its shortest decimal form, no trailing zeros, the integer part grouped by thousands with ",".
private func decimalString(_ value: Double, fractionDigits: Int) -> String {
    let text = value.magnitude.description   // shortest round-trip digits: "12.345678901"
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    var digits = parts[0].utf8.map { Int($0) - 48 }
    var fraction = parts.count > 1 ? parts[1].utf8.map { Int($0) - 48 } : []
    if fraction.count > fractionDigits {
        let rest = fraction[fractionDigits...]
        digits += fraction[..<fractionDigits]
        let first = rest.first!, beyond = rest.dropFirst().contains { $0 != 0 }
        if first > 5 || (first == 5 && (beyond || digits.last! % 2 == 1)) {
            var i = digits.count - 1
            while i >= 0 && digits[i] == 9 { digits[i] = 0; i -= 1 }
            if i >= 0 { digits[i] += 1 } else { digits.insert(1, at: 0) }
        }
        fraction = Array(digits.suffix(fractionDigits))
        digits.removeLast(fractionDigits)
    }
    while fraction.last == 0 { fraction.removeLast() }
    var integer = ""
    for (i, d) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { integer += "," }
        integer += String(d)
    }
    let zero = digits.allSatisfy { $0 == 0 } && fraction.isEmpty
    return (value < 0 && !zero ? "-" : "") + integer + (fraction.isEmpty ? "" : "." + fraction.map(String.init).joined())
}

/// Runs `body` on a thread of its own (for a blocking read(2)), as Foundation's `Thread` did.
func detachThread(_ body: @escaping @Sendable () -> Void) {
    final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { argument in
        Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
        return nil
    }, box)
    if started == 0 { pthread_detach(thread) } else { Unmanaged<Box>.fromOpaque(box).release() }
}

/// The error text of `errno` ("No such file or directory").
func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

/// Starts `arguments[0]` (a path) with the rest as its arguments, not waiting for it (as `Process.run()`);
/// 0 or the errno of the failure. Its exit is never collected: recctl ends first.
func spawn(_ arguments: [String]) -> Int32 {
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid = pid_t()
    return posix_spawn(&pid, argv[0]!, nil, nil, &argv, environ)
}
