// Captured samples in whatever format a microphone delivers → the recording's format (interleaved
// S16 at the recording's rate and channel count), with libswresample.
import MediaWire
import CFFmpeg
import Foundation

/// Owns one SwrContext (freed in deinit) and its output buffer. Used on the capture thread only:
/// `convert` allocates nothing after the first calls of a given size.
///
/// Channels: a stereo device recorded as mono is averaged, (L + R) / 2, so a tone on both channels
/// keeps its level (swresample's default matrix would mix at −3 dB each and then renormalize
/// depending on the format); a mono device recorded as stereo is copied to both channels at full
/// level. Other counts use swresample's default matrix.
public final class CapturedPCMConverter {
    public let input: (format: CapturedSampleFormat, rate: Int, channels: Int)
    public let output: (rate: Int, channels: Int)
    private let resampler: FFmpegResampler
    private var swr: OpaquePointer { resampler.pointer }
    private var widened: [Int32] = []
    private var out: [Int16] = []

    public init(from format: CapturedSampleFormat, rate: Int, channels: Int,
                toRate: Int, toChannels: Int) throws {
        input = (format, rate, channels)
        output = (toRate, toChannels)
        var inLayout = AVChannelLayout(), outLayout = AVChannelLayout()
        av_channel_layout_default(&inLayout, Int32(channels))
        av_channel_layout_default(&outLayout, Int32(toChannels))
        defer { av_channel_layout_uninit(&inLayout); av_channel_layout_uninit(&outLayout) }
        // Stereo averaged to mono, mono copied to both channels: the level is kept.
        let matrix: [Double]? = channels == 2 && toChannels == 1 ? [0.5, 0.5] : channels == 1 && toChannels == 2 ? [1, 1] : nil
        resampler = try FFmpegResampler(from: &inLayout, format.swrFormat, rate: rate, to: &outLayout, AV_SAMPLE_FMT_S16,
                                        rate: toRate, matrix: matrix)
    }

    /// Converts `frames` interleaved frames of the input format at `samples`; the result is valid
    /// until the next call. Rate conversion keeps a few frames inside (its filter's delay), so a
    /// block's output may be a little shorter or longer than `frames` × the rate ratio.
    public func convert(_ samples: UnsafeRawPointer, frames: Int) throws(FFmpegError) -> UnsafeBufferPointer<Int16> {
        let n = frames * input.channels
        let capacity = Int(swr_get_out_samples(swr, Int32(frames))) + 16
        if out.count < capacity * output.channels { out = [Int16](repeating: 0, count: capacity * output.channels) }
        let produced: Int32
        switch input.format {
        case .s24In32, .s24Packed:
            if widened.count < n { widened = [Int32](repeating: 0, count: n) }
            let format = input.format
            widened.withUnsafeMutableBufferPointer { Self.widen(samples, format: format, count: n, into: $0) }
            produced = try FFmpegError.check(widened.withUnsafeBytes { resample($0.baseAddress!, frames: frames, capacity: capacity) },
                                             "swr_convert")
        default:
            produced = try FFmpegError.check(resample(samples, frames: frames, capacity: capacity), "swr_convert")
        }
        let count = Int(produced) * output.channels
        return out.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0[0..<count]) }
    }

    /// swr_convert's result: frames written into `out`, or a negative AVERROR.
    private func resample(_ source: UnsafeRawPointer, frames: Int, capacity: Int) -> Int32 {
        let swr = self.swr
        return out.withUnsafeMutableBytes { raw in
            var outPlane: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var inPlane: UnsafePointer<UInt8>? = source.assumingMemoryBound(to: UInt8.self)
            return swr_convert(swr, &outPlane, Int32(capacity), &inPlane, Int32(frames))
        }
    }

    /// 24-bit samples to S32 with the sample in the top 24 bits (sign kept).
    package static func widen(_ samples: UnsafeRawPointer, format: CapturedSampleFormat, count: Int,
                      into out: UnsafeMutableBufferPointer<Int32>) {
        let bytes = samples.assumingMemoryBound(to: UInt8.self)
        switch format {
        case .s24Packed:
            for i in 0..<count {
                let v = UInt32(bytes[3 * i]) | UInt32(bytes[3 * i + 1]) << 8 | UInt32(bytes[3 * i + 2]) << 16
                out[i] = Int32(bitPattern: v << 8)
            }
        case .s24In32:
            for i in 0..<count {
                let v = UInt32(bytes[4 * i]) | UInt32(bytes[4 * i + 1]) << 8 | UInt32(bytes[4 * i + 2]) << 16
                out[i] = Int32(bitPattern: v << 8)
            }
        default:
            break
        }
    }
}
