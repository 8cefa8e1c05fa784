// EBU R128 loudness of a stream of samples, with libebur128.
import CEbur128
import Foundation
import RecdAPI

/// Integrated loudness and loudness range by `GatedLoudness` for mono and stereo (libebur128's
/// measurement with the K-weighting in SIMD; held to libebur128 by a unit test), by an
/// `ebur128_state` for more channels; and a `TruePeakMeter` (true peak,
/// which includes the sample peak: libebur128's own true-peak mode cost most of a recording's CPU,
/// and its sample-peak mode is a pass the true peak's zero phase already makes; see there), fed
/// interleaved S16 blocks by one thread (the encoder thread: the samples as they are encoded, no
/// second decode) and read once at the end.
///
/// libebur128 rather than FFmpeg's `ebur128` filter: a plain C API taking the blocks recd already
/// has, no filter graph to build and no frame metadata to parse, the reference implementation MPD and
/// others use, and a Debian package (`libebur128-dev`).
public final class LoudnessMeter {
    /// libebur128, for more than two channels (its channel map); nil for mono and stereo.
    private let state: UnsafeMutablePointer<ebur128_state>?
    /// Mono and stereo: the same measurement with the K-weighting in SIMD (see `GatedLoudness`).
    private let gated: GatedLoudness?
    private let truePeak: TruePeakMeter
    public let channels: Int

    /// Nil when libebur128 refuses the format (a rate or channel count it cannot measure).
    public init?(sampleRate: Int, channels: Int) {
        // libebur128's own limits (16 Hz to 2.8 MHz): a 6 kHz WAV is measured as it was when
        // libebur128 measured everything. GatedLoudness from 8 kHz (it is tested against
        // libebur128 from there; at a few hundred Hz their loudness ranges part).
        guard channels > 0, sampleRate >= 16, sampleRate <= 2_822_400 else { return nil }
        if channels <= 2 && sampleRate >= 8_000 {
            // Mono is one channel of a stereo pair in BS.1770 (a mono file played on two
            // speakers): counted twice, so a mono and a stereo recording of the same sound read the same.
            gated = GatedLoudness(sampleRate: sampleRate, channels: channels)
            state = nil
        } else {
            let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue)
            guard let s = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else { return nil }
            // Mono counted twice, as GatedLoudness does (below 8 kHz mono comes here).
            if channels == 1 { _ = ebur128_set_channel(s, 0, Int32(EBUR128_DUAL_MONO.rawValue)) }
            state = s
            gated = nil
        }
        truePeak = TruePeakMeter(sampleRate: sampleRate, channels: channels)
        self.channels = channels
    }

    deinit {
        var s: UnsafeMutablePointer<ebur128_state>? = state
        if s != nil { ebur128_destroy(&s) }
    }

    /// Adds `frames` interleaved frames.
    public func add(_ samples: UnsafeBufferPointer<Int16>, frames: Int) {
        guard frames > 0, let base = samples.baseAddress else { return }
        if let gated { gated.add(samples, frames: frames) } else { _ = ebur128_add_frames_short(state, base, frames) }
        truePeak.add(samples, frames: frames)
    }

    /// The measurement of everything added.
    public func result() -> Loudness {
        var integrated = 0.0, range = 0.0
        let i: Double?, r: Double?
        if let gated {
            i = gated.integrated().flatMap { $0.isFinite ? $0 : nil }
            r = gated.range().flatMap { $0.isFinite ? $0 : nil }
        } else {
            i = ebur128_loudness_global(state, &integrated) == 0 && integrated.isFinite ? integrated : nil
            r = ebur128_loudness_range(state, &range) == 0 && range.isFinite ? range : nil
        }
        // As libebur128 reports it: the oversampled peak, or the sample peak if that is higher (the
        // oversampled signal holds every sample: its phase 0 is the sample itself).
        let peak = truePeak.peaks.max() ?? 0
        let truePeak = peak > 0 ? 20 * log10(peak) : nil
        return Loudness(integrated: i.map(Self.round), range: r.map(Self.round), truePeak: truePeak.map(Self.round))
    }

    /// Two decimals: what the measurement can stand for (its tolerance is 0.1 LU).
    static func round(_ v: Double) -> Double { (v * 100).rounded() / 100 }
}
