// True peak (ITU-R BS.1770-4, Annex 2): the largest magnitude of the signal oversampled.

/// The true peak of interleaved S16 blocks, per channel: the signal oversampled 4× (2× from 96 kHz,
/// not at all from 192 kHz) by a 49-tap Hann-windowed sinc interpolator — the design libebur128 uses,
/// so the two read the same (tested against it to 0.01 dB) — and the largest magnitude kept.
///
/// Why not libebur128's own true-peak mode: its interpolator walks a circular delay line sample by
/// sample with an index wrap in the innermost loop, and took most of recd's CPU while recording
/// (44% of it for a FLAC recording, whose encoder is cheap). Here each block is filtered over a
/// contiguous buffer (the history, then the block), eight outputs at a time with SIMD — the same
/// result for a fraction of the time.
///
/// Used by one thread at a time.
public final class TruePeakMeter {
    public let channels: Int
    /// Input samples a phase reaches back at most (the history kept between blocks).
    let reach: Int
    /// The phases other than the identity, as three rows of `reach + 1` coefficients indexed by how
    /// far back they reach (zero where a phase has no tap; rows of zeros when there are fewer than
    /// three such phases): the layout `scan` filters with.
    let matrix: [Float]
    /// The largest sum of a phase's |coefficients|: no oversampled value exceeds the largest input
    /// magnitude in its window times this. A block whose samples (with the history) times this stay
    /// at or below the peak already found cannot raise it, and is not filtered: exact, and most
    /// blocks of a recording (all but the loudest passages; every block of a steady tone after the
    /// first) cost a scan for their largest sample only.
    let gainBound: Float
    /// Per channel: the last `reach` samples, then room for a block (scaled to [-1, 1)).
    private var work: [[Float]]
    /// The largest magnitude seen, per channel (linear, 1.0 = full scale).
    public private(set) var peaks: [Double]

    public init(sampleRate: Int, channels: Int) {
        self.channels = channels
        // Oversampling factor: 4, 2 or 1; per phase, (coefficient, how many input samples back it reaches).
        let factor = sampleRate < 96_000 ? 4 : sampleRate < 192_000 ? 2 : 1
        let taps = 49
        var phases = [[(coefficient: Float, back: Int)]](repeating: [], count: factor)
        if factor == 1 {
            phases[0] = [(1, 0)]
        } else {
            for j in 0..<taps {
                let m = Double(j) - Double(taps - 1) / 2
                var c = abs(m) > 1e-6 ? sin(m * .pi / Double(factor)) / (m * .pi / Double(factor)) : 1
                c *= 0.5 * (1 - cos(2 * .pi * Double(j) / Double(taps - 1)))   // Hann window
                if abs(c) > 1e-6 { phases[j % factor].append((Float(c), j / factor)) }
            }
        }
        reach = phases.flatMap { $0.map(\.back) }.max() ?? 0
        var matrix = [Float](repeating: 0, count: 3 * (reach + 1))
        for (row, phase) in phases.filter({ !($0.count == 1 && $0[0].coefficient == 1) }).enumerated() {
            for (coefficient, back) in phase { matrix[row * (reach + 1) + back] = coefficient }
        }
        self.matrix = matrix
        // A hair above the exact sum: the filter's own float rounding cannot slip past the bound.
        gainBound = (phases.map { $0.reduce(Float(0)) { $0 + abs($1.coefficient) } }.max() ?? 1) * 1.0001
        work = Array(repeating: Array(repeating: 0, count: reach), count: channels)
        peaks = Array(repeating: 0, count: channels)
    }

    /// Adds `frames` interleaved frames.
    public func add(_ samples: UnsafeBufferPointer<Int16>, frames: Int) {
        guard frames > 0 else { return }
        for c in 0..<channels {
            peaks[c] = max(peaks[c], scan(channel: c, samples, frames: frames))
        }
    }

    /// The channel's largest oversampled magnitude in this block; keeps its last samples as history.
    /// Eight outputs at a time (SIMD8: the taps' products summed in registers), then the rest one by one.
    private func scan(channel c: Int, _ samples: UnsafeBufferPointer<Int16>, frames: Int) -> Double {
        let reach = self.reach
        if work[c].count != reach + frames { work[c].replaceSubrange(reach..., with: repeatElement(0, count: frames)) }
        let channels = self.channels
        let matrix = self.matrix
        let found = Float(peaks[c])
        let gainBound = self.gainBound
        return work[c].withUnsafeMutableBufferPointer { w -> Double in
            var largest: Int32 = 0
            for i in 0..<frames {
                let v = samples[i * channels + c]
                largest = max(largest, abs(Int32(v)))
                w[reach + i] = Float(v) * (1 / 32768)
            }
            var inWindow = Float(largest) * (1 / 32768)
            for i in 0..<reach { inWindow = max(inWindow, abs(w[i])) }
            if inWindow * gainBound <= found {
                for i in 0..<reach { w[i] = w[frames + i] }
                return 0
            }
            let raw = UnsafeRawPointer(w.baseAddress!)
            // The identity phase (the sample itself) is the block's largest sample, found above.
            var peak = Float(largest) * (1 / 32768)
            // Eight outputs of every other phase at a time: each input vector is loaded once and
            // used by all three phases (SIMD8: the taps' products summed in registers); the
            // largest and smallest output per lane kept with comparison masks (`pointwiseMax` was
            // a call looping over the lanes, half of this function's time).
            var high8 = SIMD8<Float>(repeating: 0), low8 = SIMD8<Float>(repeating: 0)
            let whole = frames / 8 * 8
            let taps = reach + 1
            matrix.withUnsafeBufferPointer { m in
                var i = 0
                while i < whole {
                    var a1 = SIMD8<Float>(repeating: 0), a2 = a1, a3 = a1
                    for back in 0..<taps {
                        let x = raw.loadUnaligned(fromByteOffset: (reach - back + i) * 4, as: SIMD8<Float>.self)
                        a1 += m[back] * x
                        a2 += m[taps + back] * x
                        a3 += m[2 * taps + back] * x
                    }
                    high8.replace(with: a1, where: a1 .> high8); low8.replace(with: a1, where: a1 .< low8)
                    high8.replace(with: a2, where: a2 .> high8); low8.replace(with: a2, where: a2 .< low8)
                    high8.replace(with: a3, where: a3 .> high8); low8.replace(with: a3, where: a3 .< low8)
                    i += 8
                }
                while i < frames {
                    for p in 0..<3 {
                        var acc: Float = 0
                        for back in 0..<taps { acc += m[p * taps + back] * w[reach - back + i] }
                        peak = max(peak, abs(acc))
                    }
                    i += 1
                }
            }
            // The block's last samples are the next block's history.
            for i in 0..<reach { w[i] = w[frames + i] }
            return Double(max(peak, high8.max(), -low8.min()))
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
