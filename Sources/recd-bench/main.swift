// recd-bench: CPU of recd's per-sample work on synthesized audio, for bench/metering.py.
// Not installed; prints one JSON object.
//   recd-bench metering SECONDS CHANNELS
// Feeds SECONDS of 48 kHz audio through LevelMeter (1920-frame periods, as the capture thread
// does) and WaveformBuilder (16384-frame blocks, as the encoder thread does: its
// AudioPipeline.encoderBlockFrames), and through
// AudioFileWriter (AAC + fragmented MP4 into a temporary file) for scale, timing each with the
// thread's CPU clock; and through TruePeakMeter and LoudnessMeter (16384-frame blocks, the encoder
// thread's work for the loudness of every recording).
import Foundation
import Media
import MediaWire
import Metering

/// The encoder thread's block (Engine's AudioPipeline.encoderBlockFrames; this target does not link Engine).
let encoderBlock = 16384

func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

let args = CommandLine.arguments
guard args.count == 4, args[1] == "metering", let seconds = Int(args[2]), let channels = Int(args[3]),
      seconds > 0, (1...2).contains(channels) else {
    FileHandle.standardError.write(Data("usage: recd-bench metering SECONDS CHANNELS\n".utf8))
    exit(2)
}
let rate = 48_000
let frames = seconds * rate
// A 440 Hz tone with some noise: every sample different, so nothing is trivially predictable.
var samples = [Int16](repeating: 0, count: frames * channels)
var noise: UInt32 = 12345
for n in 0..<frames {
    noise = noise &* 1_664_525 &+ 1_013_904_223
    let v = 12_000 * sin(2 * Double.pi * 440 * Double(n) / Double(rate)) + Double(Int32(noise >> 20) - 2048)
    for c in 0..<channels { samples[n * channels + c] = Int16(v) / Int16(c + 1) }
}

func timed(_ body: () throws -> Void) rethrows -> Double {
    let t0 = threadCPU()
    try body()
    return threadCPU() - t0
}

/// Calls `body` with each block of `size` frames of `samples` (the last one may be shorter) and its
/// frame count.
@MainActor func forEachBlock(of size: Int = encoderBlock,
                             _ body: (UnsafeBufferPointer<Int16>, Int) throws -> Void) rethrows {
    try samples.withUnsafeBufferPointer { all in
        var f = 0
        while f < frames {
            let n = min(size, frames - f)
            try body(UnsafeBufferPointer(rebasing: all[(f * channels)..<((f + n) * channels)]), n)
            f += n
        }
    }
}

var readings = 0
let meter = LevelMeter(LevelMeterSettings(sampleRate: rate, channels: channels))
let meterCPU = timed {
    forEachBlock(of: 1920) { block, n in meter.process(block, frames: n) { _ in readings += 1 } }
}
let builder = WaveformBuilder(sampleRate: rate, channels: channels)
let waveformCPU = timed { forEachBlock { builder.append($0, frames: $1) } }
let pixels = builder.finish().length
let truePeak = TruePeakMeter(sampleRate: rate, channels: channels)
let truePeakCPU = timed { forEachBlock { truePeak.add($0, frames: $1) } }
let loudness = LoudnessMeter(sampleRate: rate, channels: channels)!
let loudnessCPU = timed { forEachBlock { loudness.add($0, frames: $1) } }
let path = NSTemporaryDirectory() + "recd-bench-\(getpid()).m4a"
defer { try? FileManager.default.removeItem(atPath: path) }
let encodeCPU = try timed {
    let writer = try AudioFileWriter(path: path, encoding: AudioEncoding(sampleRate: rate, channels: channels, bitRate: 128_000))
    try forEachBlock { try writer.append(interleaved: $0, frames: $1) }
    try writer.finish()
}
let result: [String: Any] = ["seconds": seconds, "channels": channels, "meterCPU": meterCPU, "waveformCPU": waveformCPU,
                             "encodeCPU": encodeCPU, "readings": readings, "pixels": pixels,
                             "truePeakCPU": truePeakCPU, "loudnessCPU": loudnessCPU,
                             "truePeak": truePeak.peaks.max() ?? 0, "integrated": loudness.result().integrated ?? .nan]
let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
FileHandle.standardOutput.write(json + Data("\n".utf8))
