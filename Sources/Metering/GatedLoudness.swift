// Integrated loudness and loudness range (ITU-R BS.1770-4, EBU Tech 3342) of one or two channels,
// computed the way libebur128 computes them, with the K-weighting filtered in SIMD.

/// K-weighting (the two biquads of BS.1770, libebur128's coefficients), 100 ms mean squares, 400 ms
/// gating blocks every 100 ms (integrated: absolute gate −70 LUFS, relative −10 LU) and 3 s
/// short-term blocks every second (range: absolute −70, relative −20, 10th to 95th percentile) —
/// libebur128's cadence and arithmetic, for mono (counted twice: BS.1770's dual mono) and stereo.
///
/// Why not libebur128 itself, which recd still uses for more channels and holds this to in a unit
/// test: its filter runs one channel and one sample at a time through a 4th-order direct form with
/// a denormal check per sample — 12 ms of CPU per 10 s of stereo, the largest single cost on a
/// recording's encoder thread after the codec. Here both channels go through the two biquads
/// together (SIMD2<Double>, the same precision).
final class GatedLoudness {
    private let b1: SIMD2<Double>, b2: SIMD2<Double>, b3: SIMD2<Double>   // pre-filter b0 b1 b2
    private let a1: SIMD2<Double>, a2: SIMD2<Double>                      // pre-filter a1 a2
    private let c1: SIMD2<Double>, c2: SIMD2<Double>                      // RLB a1 a2 (b = 1, −2, 1)
    private var s1 = SIMD2<Double>(), s2 = SIMD2<Double>()                // pre-filter state (transposed DF II)
    private var t1 = SIMD2<Double>(), t2 = SIMD2<Double>()                // RLB state
    private let channels: Int
    private let weights: SIMD2<Double>
    /// Frames in 100 ms, as libebur128 counts them.
    private let framesPer100ms: Int
    private var partial = SIMD2<Double>(), partialFrames = 0
    /// The last 30 100-ms sums of squares, channel-weighted (a ring).
    private var recent = [Double](repeating: 0, count: 30)
    private var subBlocks = 0
    private var sinceShortTerm = 0
    private(set) var blockEnergies: [Double] = []
    private(set) var shortTermEnergies: [Double] = []

    init(sampleRate: Int, channels: Int) {
        precondition(channels == 1 || channels == 2)
        self.channels = channels
        weights = channels == 1 ? SIMD2(2, 0) : SIMD2(1, 1)
        framesPer100ms = (sampleRate + 5) / 10
        let rate = Double(sampleRate)
        // High-shelf pre-filter.
        var f0 = 1681.974450955533, q = 0.7071752369554196
        let gain = 3.999843853973347
        var k = tan(Double.pi * f0 / rate)
        let vh = pow(10, gain / 20), vb = pow(vh, 0.4996667741545416)
        let a0 = 1 + k / q + k * k
        b1 = SIMD2(repeating: (vh + vb * k / q + k * k) / a0)
        b2 = SIMD2(repeating: 2 * (k * k - vh) / a0)
        b3 = SIMD2(repeating: (vh - vb * k / q + k * k) / a0)
        a1 = SIMD2(repeating: 2 * (k * k - 1) / a0)
        a2 = SIMD2(repeating: (1 - k / q + k * k) / a0)
        // RLB high-pass.
        f0 = 38.13547087602444; q = 0.5003270373238773
        k = tan(Double.pi * f0 / rate)
        let r0 = 1 + k / q + k * k
        c1 = SIMD2(repeating: 2 * (k * k - 1) / r0)
        c2 = SIMD2(repeating: (1 - k / q + k * k) / r0)
    }

    func add(_ samples: UnsafeBufferPointer<Int16>, frames: Int) {
        var i = 0
        while i < frames {
            let n = min(frames - i, framesPer100ms - partialFrames)
            var sum = partial
            var s1 = self.s1, s2 = self.s2, t1 = self.t1, t2 = self.t2
            let b1 = self.b1, b2 = self.b2, b3 = self.b3, a1 = self.a1, a2 = self.a2, c1 = self.c1, c2 = self.c2
            for f in i..<(i + n) {
                let x = channels == 2
                    ? SIMD2(Double(samples[2 * f]), Double(samples[2 * f + 1])) * (1 / 32768)
                    : SIMD2(Double(samples[f]) * (1 / 32768), 0)
                let y = b1 * x + s1
                s1 = b2 * x - a1 * y + s2
                s2 = b3 * x - a2 * y
                let z = y + t1
                t1 = -2 * y - c1 * z + t2
                t2 = y - c2 * z
                sum += z * z
            }
            self.s1 = s1; self.s2 = s2; self.t1 = t1; self.t2 = t2
            partial = sum
            partialFrames += n
            i += n
            if partialFrames == framesPer100ms { endSubBlock() }
        }
    }

    private func endSubBlock() {
        recent[subBlocks % 30] = (partial * weights).sum()
        subBlocks += 1
        partial = SIMD2(); partialFrames = 0
        if subBlocks >= 4 { blockEnergies.append(sumOfLast(4) / Double(4 * framesPer100ms)) }
        sinceShortTerm += 1
        if subBlocks >= 30 && sinceShortTerm >= 10 || subBlocks == 30 {
            shortTermEnergies.append(sumOfLast(30) / Double(30 * framesPer100ms))
            sinceShortTerm = 0
        }
    }

    private func sumOfLast(_ n: Int) -> Double {
        var s = 0.0
        for j in (subBlocks - n)..<subBlocks { s += recent[j % 30] }
        return s
    }

    static func loudness(_ energy: Double) -> Double { 10 * log10(energy) - 0.691 }
    static let absoluteGate = pow(10, (-70 + 0.691) / 10)

    /// Integrated loudness (LUFS), nil with no block above the gates.
    func integrated() -> Double? {
        let gated = blockEnergies.filter { $0 >= Self.absoluteGate }
        guard !gated.isEmpty else { return nil }
        let relative = gated.reduce(0, +) / Double(gated.count) * pow(10, -10.0 / 10)
        let kept = gated.filter { $0 >= relative }
        guard !kept.isEmpty else { return nil }
        return Self.loudness(kept.reduce(0, +) / Double(kept.count))
    }

    /// Loudness range (LU); 0 with no short-term block above the gates (a take under 3 s, silence),
    /// as libebur128 says.
    func range() -> Double? {
        let gated = shortTermEnergies.filter { $0 >= Self.absoluteGate }
        guard !gated.isEmpty else { return 0 }
        let relative = gated.reduce(0, +) / Double(gated.count) * pow(10, -20.0 / 10)
        let kept = gated.filter { $0 >= relative }.sorted()
        guard !kept.isEmpty else { return 0 }
        let low = kept[Int(Double(kept.count - 1) * 0.1 + 0.5)]
        let high = kept[Int(Double(kept.count - 1) * 0.95 + 0.5)]
        return Self.loudness(high) - Self.loudness(low)
    }
}

#if canImport(Glibc)
import Glibc
#endif
