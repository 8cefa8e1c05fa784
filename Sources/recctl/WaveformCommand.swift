// recctl waveform: a recording's waveform in the terminal, as SVG, or as audiowaveform data.
import ArgumentParser
import FoundationEssentials
import Glibc
import RecdAPI

struct Waveform: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "waveform",
        abstract: "Draw a recording's waveform in the terminal, or write it as SVG or audiowaveform data (json, dat).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Recording id (or a unique prefix of at least 4 characters).") var id: String
    @Option(help: "Columns to draw (default: the terminal's width).") var width: Int?
    @Option(help: "Rows to draw.") var rows: Int = 6
    @Option(help: ArgumentHelp("Write an SVG image to this file.", valueName: "file")) var svg: String?
    @Option(help: ArgumentHelp("Write audiowaveform data: json or dat (with -o).", valueName: "format")) var format: String?
    @Option(help: "8 or 16 bits for --format.") var bits: Int = 8
    @Option(name: .shortAndLong, help: ArgumentHelp("Output file for --format, or - for standard output.", valueName: "file"))
    var output: String?

    func validate() throws {
        if let format, format != "json" && format != "dat" { throw ValidationError("--format must be json or dat") }
        if format != nil && output == nil { throw ValidationError("--format needs -o FILE (or -o -)") }
        if bits != 8 && bits != 16 { throw ValidationError("--bits must be 8 or 16") }
        if let width, !(10...2000).contains(width) { throw ValidationError("--width must be 10...2000") }
        if !(1...50).contains(rows) { throw ValidationError("--rows must be 1...50") }
    }

    func run() async throws {
        let (r, _) = try await global.client.call(.GET, "/v1/recordings/\(idPath(id))", as: Recording.self)
        let base = "/v1/recordings/\(r.id.uuidString)/waveform"
        if let format, let output {
            let reply = try await global.client.send(.GET, "\(base)?format=\(format)&bits=\(bits)")
            try RecdClient.check(reply)
            try writeFile(reply.body, to: output)
            if output != "-" { print("Waveform of '\(Output.text(r.title))' written to \(output) (\(format), \(bits)-bit)") }
            return
        }
        let columns = width ?? Self.terminalColumns()
        let (w, raw) = try await global.client.call(.GET, "\(base)?pixels=\(svg == nil ? columns : 1000)&bits=16",
                                                    as: WaveformData.self)
        if let svg {
            try writeFile(Data(Self.svg(w, title: r.title).utf8), to: svg)
            print("Waveform of '\(Output.text(r.title))' written to \(svg)")
            return
        }
        global.emit(raw, "\(Output.text(r.title)) (\(Output.duration(r.duration)))\n" + Self.blocks(w.envelope, rows: rows))
    }

    static func terminalColumns() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 10 { return Int(size.ws_col) }
        return 80
    }

    /// A mirrored envelope in block characters: `rows` lines, the middle being silence.
    static func blocks(_ envelope: [Double], rows: Int) -> String {
        let eighths = ["", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        let upper = ["", "▔", "▀", "▀", "▀", "█", "█", "█", "█"]   // top half, mirrored (coarser: Unicode has few top blocks)
        let half = max(1, rows / 2)
        /// The row `level` rows away from the middle, in `glyphs`.
        func row(_ level: Int, _ glyphs: [String]) -> String {
            envelope.map { v -> String in
                let units = Int((v * Double(half * 8)).rounded())
                let inRow = min(8, max(0, units - level * 8))
                return inRow == 0 ? " " : glyphs[inRow]
            }.joined()
        }
        let above = (0..<half).map { row(half - $0 - 1, eighths) }   // bars grow upward from the centre line
        let below = (0..<half).map { row($0, upper) }   // the mirror image
        return (above + below).joined(separator: "\n")
    }

    static func svg(_ w: WaveformData, title: String) -> String {
        let height = 200.0, middle = height / 2
        let full = w.bits == 8 ? 128.0 : 32768.0
        var paths: [String] = []
        for c in 0..<w.channels {
            var d = ""
            for p in 0..<w.length {
                let lo = Double(w.data[(p * w.channels + c) * 2]) / full, hi = Double(w.data[(p * w.channels + c) * 2 + 1]) / full
                d += String(cFormat: "M%d %.1fV%.1f", p, middle - hi * middle, middle - lo * middle + 0.5)
            }
            let colour = c == 0 ? "#2a6fdb" : "#db6f2a"
            paths.append("<path d=\"\(d)\" stroke=\"\(colour)\" stroke-width=\"1\" fill=\"none\" opacity=\"\(c == 0 ? "1" : "0.6")\"/>")
        }
        let escaped = title.replacingScalar("&", with: "&amp;").replacingScalar("<", with: "&lt;")
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(w.length)" height="\(Int(height))" viewBox="0 0 \(w.length) \(Int(height))">
            <title>\(escaped)</title>
            <rect width="100%" height="100%" fill="white"/>
            \(paths.joined(separator: "\n"))
            </svg>

            """
    }
}
