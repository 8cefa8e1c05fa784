// Meter levels over fixed intervals: peak and RMS in dBFS per channel, and a peak-hold ("decay") value.
import Foundation

/// How a meter measures.
public struct LevelMeterSettings: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    /// One reading per interval (default 50 ms).
    public var intervalMs: Int
    /// The peak-hold value holds this long, then falls at `falloffDBPerSecond` (GStreamer `level`'s
    /// peak-ttl and peak-falloff defaults: 300 ms, 10 dB/s).
    public var holdMs: Int
    public var falloffDBPerSecond: Double

    public init(sampleRate: Int, channels: Int, intervalMs: Int = 50, holdMs: Int = 300, falloffDBPerSecond: Double = 10) {
        self.sampleRate = sampleRate; self.channels = channels; self.intervalMs = intervalMs
        self.holdMs = holdMs; self.falloffDBPerSecond = falloffDBPerSecond
    }

    var intervalFrames: Int { max(1, sampleRate * intervalMs / 1000) }
}

/// One interval's levels, per channel, in dBFS (0 = full scale, `LevelMeter.floorDB` = silence).
public struct LevelReading: Sendable, Equatable {
    public var peak: [Double]
    public var rms: [Double]
    public var decay: [Double]
    /// Frames since the meter started, at the end of this interval.
    public var endFrame: Int64
}

/// Measures interleaved S16 audio as it passes, in place: no copy of the samples, no allocation per
/// buffer (one small reading per interval). Used from one thread (capture or playback).
public final class LevelMeter {
    /// AVAudioRecorder's floor: what silence reads.
    public static let floorDB = -160.0
    /// Frames fed so far.
    public var framesProcessed: Int64 { totalFrames }

    public let settings: LevelMeterSettings
    private let intervalFrames: Int
    private var framesInInterval = 0
    private var totalFrames: Int64 = 0
    private var peak: [Int32]
    private var sumSquares: [Int64]
    private var decay: [Double]
    private var heldSeconds: [Double]

    public init(_ settings: LevelMeterSettings) {
        precondition(settings.channels > 0 && settings.sampleRate > 0)
        self.settings = settings
        intervalFrames = settings.intervalFrames
        peak = [Int32](repeating: 0, count: settings.channels)
        sumSquares = [Int64](repeating: 0, count: settings.channels)
        decay = [Double](repeating: Self.floorDB, count: settings.channels)
        heldSeconds = [Double](repeating: 0, count: settings.channels)
    }

    /// Sample amplitude (of 32768) → dBFS, floored.
    public static func dB(_ amplitude: Double) -> Double {
        guard amplitude > 0 else { return floorDB }
        return max(floorDB, 20 * log10(amplitude / 32768))
    }

    /// Feeds `frames` frames; calls `emit` for each interval completed inside them.
    public func process(_ samples: UnsafeBufferPointer<Int16>, frames: Int, _ emit: (LevelReading) -> Void) {
        let channels = settings.channels
        guard let base = samples.baseAddress else { return }
        var frame = 0
        while frame < frames {
            let n = min(frames - frame, intervalFrames - framesInInterval)
            for c in 0..<channels {
                var p = peak[c]
                var sum = sumSquares[c]
                var index = frame * channels + c
                for _ in 0..<n {
                    let v = Int32(base[index])
                    let a = v < 0 ? -v : v
                    if a > p { p = a }
                    sum &+= Int64(v * v)
                    index += channels
                }
                peak[c] = p
                sumSquares[c] = sum
            }
            frame += n
            framesInInterval += n
            totalFrames += Int64(n)
            if framesInInterval == intervalFrames { emit(finishInterval()) }
        }
    }

    private func finishInterval() -> LevelReading {
        let channels = settings.channels
        let seconds = Double(intervalFrames) / Double(settings.sampleRate)
        let hold = Double(settings.holdMs) / 1000
        var reading = LevelReading(peak: [], rms: [], decay: [], endFrame: totalFrames)
        reading.peak.reserveCapacity(channels); reading.rms.reserveCapacity(channels); reading.decay.reserveCapacity(channels)
        for c in 0..<channels {
            let peakDB = Self.dB(Double(peak[c]))
            let rmsDB = Self.dB((Double(sumSquares[c]) / Double(intervalFrames)).squareRoot())
            if peakDB >= decay[c] {
                decay[c] = peakDB
                heldSeconds[c] = 0
            } else {
                let before = heldSeconds[c]
                heldSeconds[c] += seconds
                // Falls only for the part of this interval past the hold time.
                let falling = heldSeconds[c] - max(before, hold)
                if falling > 0 { decay[c] = max(peakDB, decay[c] - settings.falloffDBPerSecond * falling) }
            }
            reading.peak.append(peakDB)
            reading.rms.append(rmsDB)
            reading.decay.append(max(Self.floorDB, decay[c]))
            peak[c] = 0
            sumSquares[c] = 0
        }
        framesInInterval = 0
        return reading
    }
}
