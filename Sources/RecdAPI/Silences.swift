// Skip Silence (issue 47): the pauses of a recording, found from its stored waveform, that a player
// may skip — recd's own (`POST /v1/recordings/{id}/play` with `skipSilence`) and the browser's (it
// asks `GET /v1/recordings/{id}/silences`).
import FoundationEssentials

/// A pause a player may skip: from `start` to `end`, seconds of the recording. The stretch of quiet
/// it comes from is longer by `SilenceList.margin` at each end: that much of the pause is still
/// heard, so words are not run together.
public struct Silence: Codable, Sendable, Equatable {
    public var start: Double
    public var end: Double
    public init(start: Double, end: Double) { self.start = start; self.end = end }
}

/// `GET /v1/recordings/{id}/silences`.
public struct SilenceList: Codable, Sendable, Equatable {
    public var recordingID: UUID
    public var silences: [Silence]
    /// Seconds a player saves by skipping them all.
    public var skippable: Double
    public init(recordingID: UUID, silences: [Silence]) {
        self.recordingID = recordingID; self.silences = silences
        skippable = silences.reduce(0) { $0 + $1.end - $1.start }
    }

    /// Quiet shorter than this is speech's own rhythm, not a pause: kept.
    public static let minimumQuiet = 1.0
    /// Of each pause, this much is kept at each end.
    public static let margin = 0.2

    /// The pauses of a recording from its waveform: stretches where every channel's peak stays under
    /// a threshold for at least `minimumQuiet` seconds, less `margin` at each end. The threshold
    /// follows the recording's own noise floor (the quietest tenth of it, doubled), between -50 dBFS
    /// (a digital silence's floor) and -30 dBFS (above that, quiet speech would be taken for a pause).
    public static func find(in w: WaveformData) -> [Silence] {
        let pixels = w.length
        guard pixels > 0, w.sampleRate > 0, w.samplesPerPixel > 0 else { return [] }
        let full = w.bits == 8 ? 128.0 : 32768.0
        let peaks: [Double] = (0..<pixels).map { p in
            var peak = 0
            for c in 0..<w.channels {
                let i = (p * w.channels + c) * 2
                peak = max(peak, abs(Int(w.data[i])), abs(Int(w.data[i + 1])))
            }
            return Double(peak) / full
        }
        let floor = peaks.sorted()[pixels / 10]
        let threshold = min(max(2 * floor, 0.00316), 0.0316)   // -50 … -30 dBFS
        let secondsPerPixel = Double(w.samplesPerPixel) / Double(w.sampleRate)
        var found: [Silence] = []
        var quietFrom: Int?
        for p in 0...pixels {
            let quiet = p < pixels && peaks[p] < threshold
            if quiet, quietFrom == nil { quietFrom = p }
            if !quiet, let from = quietFrom {
                quietFrom = nil
                let start = Double(from) * secondsPerPixel, end = Double(p) * secondsPerPixel
                // The quiet at the very start and end is kept too (a recording's lead-in is short).
                guard end - start >= minimumQuiet else { continue }
                found.append(Silence(start: start + margin, end: end - margin))
            }
        }
        return found
    }
}
