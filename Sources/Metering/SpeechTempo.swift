// Playback at another speed with the pitch kept (issue 47): WSOLA — waveform-similarity overlap-add,
// the method of FFmpeg's `atempo` — for the playback thread. Here with the meters: plain loops over
// samples, optimized in debug builds too (the suite plays in real time through it).
import Foundation

/// Interleaved 16-bit frames in, the same sound at `speed` out (0.5: half as fast; 2: twice), the pitch
/// kept. The output is built from 30 ms Hann-windowed pieces of the input, one every 15 ms of output,
/// each taken from near where `speed` says the recording has got to, at the offset (within ±20 ms)
/// where its first half best matches the tail it is added to (the cross-correlation over that overlap):
/// so periods line up and plosives and vowel onsets are kept whole. (Sonic, the library espeak-ng uses,
/// was tried first: at 1.5× its pitch-period dropping turned "bread" into "red" for Whisper, as did
/// this one correlating whole pieces. Reach: espeak's "buy milk, bread…" at 130 words a minute, AAC,
/// 1.5×, 18 offsets, two Whisper pads each — every word right in 20 of 36 with ±12 ms, 30 of 36 with
/// ±20 ms, 31 of 36 through atempo; ±8 ms and 60 ms pieces did worse.)
/// It holds about 60 ms of what it was given. Not thread-safe: the playback thread's alone.
public final class SpeechTempo {
    public let channels: Int
    public private(set) var speed: Double
    /// Piece length, output hop (half a piece: the Hann windows then add up to 1), search reach.
    private let piece: Int, hop: Int, reach: Int
    private let window: [Float]
    /// Input kept, interleaved, from absolute frame `inputStart`; and its mono mix for the search.
    private var input: [Float] = []
    private var mono: [Float] = []
    private var inputStart = 0
    /// Where the next piece should come from (absolute input frame), and where the last one came from.
    private var position = 0.0
    private var lastPiece: Int?
    /// The overlap-add of the pieces not yet let out (`piece` frames, interleaved).
    private var sum: [Float]
    private var output: [Int16] = []
    /// Frames given, frames let out (to cut the tail a flush pads with silence).
    private var taken = 0.0, given = 0
    private var flushed = false

    public init?(rate: Int, channels: Int, speed: Double) {
        guard rate > 0, channels > 0 else { return nil }
        self.channels = channels
        self.speed = speed
        let piece = max(64, rate * 30 / 1000) & ~1
        self.piece = piece
        hop = piece / 2
        reach = rate * 20 / 1000
        // Periodic Hann: overlapping by half, the windows sum to exactly 1.
        window = (0..<piece).map { i in Float(0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(piece))) }
        sum = [Float](repeating: 0, count: piece * channels)
    }

    public func set(speed: Double) { self.speed = speed }

    /// Puts `frames` frames of `samples` in, and makes what output it can.
    public func write(_ samples: UnsafeMutableBufferPointer<Int16>, frames: Int) -> Bool {
        guard frames > 0 else { return true }
        input.reserveCapacity(input.count + frames * channels)
        for f in 0..<frames {
            var m: Float = 0
            for c in 0..<channels {
                let v = Float(samples[f * channels + c])
                input.append(v)
                m += v
            }
            mono.append(m / Float(channels))
        }
        taken += Double(frames) / speed
        process()
        return true
    }

    /// The end of the input: what is held is let out (the input padded with silence), no longer than
    /// the input at this speed.
    public func flush() {
        guard !flushed else { return }
        flushed = true
        let pad = piece + 2 * reach + hop
        input += [Float](repeating: 0, count: pad * channels)
        mono += [Float](repeating: 0, count: pad)
        process()
        emit(hop)   // the last piece's second half
        let due = Int(taken.rounded())
        if given > due { output.removeLast(min(output.count, (given - due) * channels)); given = due }
    }

    public var available: Int { output.count / channels }

    /// Moves what is ready into `into` (from its start, growing it as needed); returns the frames.
    public func read(into out: inout [Int16]) -> Int {
        let n = available
        if out.count < output.count { out = [Int16](repeating: 0, count: output.count) }
        for i in 0..<output.count { out[i] = output[i] }
        output.removeAll(keepingCapacity: true)
        return n
    }

    private var inputEnd: Int { inputStart + mono.count }

    private func process() {
        while true {
            let target = Int(position.rounded())
            let natural = lastPiece.map { $0 + hop }
            // Enough input for the search around `target` and the piece that continues the last one.
            guard target + reach + piece <= inputEnd, (natural ?? 0) + piece <= inputEnd else { return }
            let start = natural.map { best(around: target, continuing: $0) } ?? target
            add(pieceAt: start)
            emit(hop)
            lastPiece = start
            position += Double(hop) * speed
            // Input no piece can reach any more goes.
            let keep = min(start + hop, Int(position) - reach) - inputStart
            if keep > 4096 {
                input.removeFirst(keep * channels)
                mono.removeFirst(keep)
                inputStart += keep
            }
        }
    }

    /// The start within `target ± reach` whose piece best matches the one at `natural` (normalized
    /// cross-correlation of the mono mix; every 4th lag and sample first, then every lag near the best).
    private func best(around target: Int, continuing natural: Int) -> Int {
        let low = max(inputStart, target - reach), high = target + reach
        func score(_ candidate: Int, step: Int) -> Float {
            var dot: Float = 0, energy: Float = 1e-3
            let a = candidate - inputStart, b = natural - inputStart
            // Over the half that is added to the last piece's tail: where the two must agree.
            var i = 0
            while i < hop {
                let x = mono[a + i]
                dot += x * mono[b + i]
                energy += x * x
                i += step
            }
            return dot / energy.squareRoot()
        }
        var bestStart = target, bestScore = -Float.infinity
        for candidate in stride(from: low, through: high, by: 4) {
            let s = score(candidate, step: 4)
            if s > bestScore { bestScore = s; bestStart = candidate }
        }
        let coarse = bestStart
        bestScore = -Float.infinity
        for candidate in max(low, coarse - 3)...min(high, coarse + 3) {
            let s = score(candidate, step: 1)
            if s > bestScore { bestScore = s; bestStart = candidate }
        }
        return bestStart
    }

    private func add(pieceAt start: Int) {
        let base = (start - inputStart) * channels
        for i in 0..<piece {
            let w = window[i]
            for c in 0..<channels { sum[i * channels + c] += w * input[base + i * channels + c] }
        }
    }

    /// Lets `frames` frames of the sum out and moves the rest to its start.
    private func emit(_ frames: Int) {
        let n = frames * channels
        for i in 0..<n { output.append(Int16(clamping: Int(sum[i].rounded()))) }
        sum.removeFirst(n)
        sum += [Float](repeating: 0, count: n)
        given += frames
    }
}
