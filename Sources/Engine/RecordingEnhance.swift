// Enhance: a cleaned copy of a recording's sound (noise reduced, speech levelled) beside it.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Storage

/// Makes a recording's enhanced copy, `Enhanced/<UUID>.m4a`: its sound decoded, run through
/// `filters` and a gain to `EnhanceStatus.targetLoudness` in a media worker walled in to the two
/// files, encoded as AAC (every browser plays it), finalized. The original is only read.
///
/// Crash-safe without a journal, for the copy is never a recording: written as a hidden `.making`
/// file, fsynced, renamed into place, the directory fsynced, then its row committed (if the recording
/// still has the sound it was made from). A crash before the commit leaves a file without a row,
/// which `EnhancedCopies.sweep` removes at start-up. Blocking: run on `BlockingPool`.
package struct RecordingEnhance {
    let catalog: Catalog
    let data: DataDirectory
    let config: EngineConfiguration
    let logger: Logger

    /// The filters (docs/design.md, "Enhance", says how they were chosen and measured): FFmpeg's FFT
    /// denoiser, taught the noise's own spectrum from `noiseSample` seconds of the recording's
    /// quietest stretch, which go through the graph first (`sn start` at 0, `stop` at their end) and
    /// are left out of the copy, and tracking it after (`tn`: fans and rooms change); 15 dB down
    /// first, for its noise-floor settings are absolute levels that a memo's noise is above; then a
    /// gain to the target loudness and a limiter at -2 dBFS (its own levelling off).
    /// `sample`: the seconds of noise fed first (a recording shorter than `noiseSample` has less;
    /// under 50 ms, none: the denoiser only tracks).
    static func filters(gain: Double, sample: Double) -> String {
        "volume=-15dB," + (sample < 0.05 ? "" : "asendcmd=c='0.0 afftdn@denoise sn start; \(String(format: "%.3f", sample)) afftdn@denoise sn stop',")
            + "afftdn@denoise=nr=15:nf=-50:tn=1:gs=8,volume=\(String(format: "%.1f", gain))dB,"
            + "alimiter=limit=0.79:attack=10:release=300:level=false:latency=true"
    }
    /// The most the gain raises (a whispered memo) or lowers the sound, in dB (the 15 dB of the
    /// denoiser's headroom aside).
    static let gainRange = -20.0...24.0
    /// How long a stretch the denoiser learns the noise from (seconds).
    static let noiseSample = 0.35
    /// afftdn gives each frame out this much later (half its 50 ms window; measured with an impulse
    /// at 16, 44.1 and 48 kHz): taken off the copy's start and fed as silence at its end, so the copy
    /// lies on the original's timeline, its last word whole.
    package static func denoiserDelay(rate: Int) -> Int { Int(Double(rate) * 0.025) }

    static let states: Set<String> = [RecordingState.ready.rawValue, RecordingState.pending.rawValue]

    /// Refuses what has no sound to enhance: a video, a take still being recorded, a missing file.
    static func check(_ r: Recording) throws(EngineError) {
        try r.requireFile(to: "enhance")
        guard r.type == .audio else {
            throw .noMedia(id: r.id, detail: "is a video: Enhance makes cleaned copies of audio recordings")
        }
    }

    func make(_ r: Recording) throws(EngineError) -> EnhancedCopy {
        try Self.check(r)
        let source = try storageCall(data.recordingPath(r.file))
        guard FileOps.exists(source) else { throw .fileMissing(id: r.id, file: r.file) }
        // The copy is about the original's size (AAC at recd's rate), written twice (fragmented, then
        // finalized) before the first goes: that much room, above the margin.
        try storageCall(FileOps.requireFree(2 * (FileOps.size(source) ?? 0) + config.minFreeBytes, in: data.enhanced.path))
        let making = EnhancedCopies.makingPath(for: r.id, in: data)
        let fragmented = making + ".fragmented"
        defer { try? FileOps.remove(fragmented); try? FileOps.remove(making) }
        let started = DispatchTime.now().uptimeNanoseconds
        var copy: EnhancedCopy
        do {
            let worker = try MediaWorkerLease(reading: [source], writing: [fragmented, making])
            defer { worker.release() }
            // Measured already (nil for silence), or measured now.
            let original = try r.loudness.map(\.integrated) ?? measure(source, lease: worker)
            // The denoiser's 15 dB back, and half a dB for the noise it takes away (at 5 dB SNR the
            // speech alone is about 1 dB under speech and noise; the limiter takes about as much).
            let gain = original.map { min(max(EnhanceStatus.targetLoudness - $0, Self.gainRange.lowerBound), Self.gainRange.upperBound) } ?? 0
            let quiet = Self.quietest(catalogWaveform(r.id), seconds: Self.noiseSample)
            let sample = min(Self.noiseSample, max(0, (r.duration ?? Self.noiseSample) - quiet.lowerBound))
            let chain = Self.filters(gain: gain + 15.5, sample: sample)
            let loudness = try encode(source, through: chain, learning: sample < 0.05 ? nil : quiet.lowerBound...(quiet.lowerBound + sample),
                                      to: fragmented, lease: worker)
            _ = try WorkerMedia.remux(from: fragmented, to: making, container: data.enhancedPath(r.id), lease: worker)
            let info = try WorkerMedia.probe(making, lease: worker)
            copy = EnhancedCopy(createdAt: Date(), duration: info.duration ?? 0, sizeBytes: FileOps.size(making) ?? 0, filters: chain,
                                loudness: loudness.integrated, truePeak: loudness.truePeak, originalLoudness: original)
        } catch {
            throw .fromMediaJob(error, writing: making) { .media(file: source, underlying: $0) }
        }
        let target = data.enhancedPath(r.id)
        try storageCall(FileOps.sync(making))
        // In place under the lock that trims, deletes and sweeps take: nothing changes the recording
        // from this check to the commit, and no sweep sees the file before its row.
        data.mutations.lock()
        defer { data.mutations.unlock() }
        guard let now = try catalogCall({ try catalog.recording(id: r.id) }), Self.states.contains(now.state.rawValue),
              now.duration == r.duration else {
            throw .noMedia(id: r.id, detail: "changed while its enhanced copy was made (a trim, a new take): ask again")
        }
        // An older copy's row goes before its file is replaced: a crash from here on leaves a file
        // without a row (removed at start-up), never a row that describes another file.
        _ = try catalogCall { try catalog.deleteEnhancedCopy(of: r.id) }
        try storageCall(FileOps.rename(making, target))
        try storageCall(FileOps.sync(data.enhanced.path))
        do {
            try catalog.commitEnhancedCopy(copy, of: r.id, madeFrom: r.duration, states: Self.states)
        } catch {
            // Deleted, trimmed or recorded over meanwhile: the copy is of sound it no longer has.
            EnhancedCopies.sweep(catalog: catalog, data: data, startUp: false, logger: logger)
            if case CatalogError.unexpectedState = error {
                throw .noMedia(id: r.id, detail: "changed while its enhanced copy was made (a trim, a new take): ask again")
            }
            throw .from(error)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        logger.info("recording \(r.id): enhanced copy made in \(String(format: "%.1f", seconds)) s (\(copy.filters); \(copy.originalLoudness.map { String(format: "%.1f", $0) } ?? "unknown") → \(copy.loudness.map { String(format: "%.1f", $0) } ?? "unknown") LUFS)")
        return copy
    }

    /// Removes recording `id`'s enhanced copy: the row first (the copy is gone for every reader),
    /// then the file. False when it had none.
    /// Under the mutations lock, as a copy's commit is: a copy made meanwhile is not unlinked.
    func remove(_ id: UUID) throws(EngineError) -> Bool {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        let had = try catalogCall { try catalog.deleteEnhancedCopy(of: id) }
        try? FileOps.remove(data.enhancedPath(id))
        return had
    }

    private func catalogWaveform(_ id: UUID) -> WaveformData? {
        (try? catalog.waveform(id: id)).flatMap { $0 }.flatMap { try? WaveformData(dat: $0) }
    }

    /// The quietest `seconds` of the recording by its stored waveform (where the noise is heard
    /// alone: a memo's pause), not its first or last 50 ms (a fade, a click); the first 0.05–0.4 s
    /// without a waveform (a take's file starts before its first word).
    package static func quietest(_ waveform: WaveformData?, seconds: Double) -> ClosedRange<Double> {
        let fallback = 0.05...(0.05 + seconds)
        guard let w = waveform, w.sampleRate > 0, w.samplesPerPixel > 0 else { return fallback }
        let perSecond = Double(w.sampleRate) / Double(w.samplesPerPixel)
        let envelope = w.envelope
        let width = max(1, Int(seconds * perSecond)), margin = Int(0.05 * perSecond)
        guard envelope.count > width + 2 * margin else { return fallback }
        var sum = envelope[margin..<(margin + width)].reduce(0, +)
        var best = (sum: sum, at: margin)
        for start in (margin + 1)...(envelope.count - margin - width) {
            sum += envelope[start + width - 1] - envelope[start - 1]
            if sum < best.sum { best = (sum, start) }
        }
        let from = Double(best.at) / perSecond
        return from...(from + seconds)
    }

    /// The original's integrated loudness, when the loudness pass has not measured it yet.
    private func measure(_ source: String, lease worker: MediaWorkerLease) throws -> Double? {
        let decoder = try WorkerAudioDecoder(path: source, lease: worker, readFrames: 65_536)
        let channels = min(2, max(1, decoder.sourceChannels))
        try decoder.setOutput(rate: config.sampleRate, channels: channels)
        guard let meter = LoudnessMeter(sampleRate: config.sampleRate, channels: channels) else { return nil }
        var buffer: [Int16] = []
        while let block = try decoder.read(into: &buffer) {
            buffer.withUnsafeBufferPointer { meter.add($0, frames: block.frames) }
        }
        return meter.result().integrated
    }

    /// Decodes `source`, filters it through `chain` and writes it (fragmented AAC) to `destination`,
    /// the stretch `learning` (the noise the denoiser is taught) through the graph first and left out.
    /// Returns the result's loudness.
    private func encode(_ source: String, through chain: String, learning: ClosedRange<Double>?, to destination: String,
                        lease worker: MediaWorkerLease) throws -> Loudness {
        let decoder = try WorkerAudioDecoder(path: source, lease: worker, readFrames: 65_536)
        let channels = min(2, max(1, decoder.sourceChannels))
        try decoder.setOutput(rate: config.sampleRate, channels: channels)
        let filter = try WorkerAudioFilter(description: chain, rate: config.sampleRate, channels: channels, lease: worker)
        let writer = try WorkerAudioWriter(path: destination, encoding: config.encoding(.aac, channels: channels), lease: worker)
        let meter = LoudnessMeter(sampleRate: config.sampleRate, channels: channels)
        // What the graph gives out for the noise it learns from is not the copy's: as many frames
        // as went in for it (the graph's delay keeps the copy on the original's timeline).
        var lead = Self.denoiserDelay(rate: config.sampleRate)
        func write(_ samples: [Int16]) throws {
            let dropped = min(lead, samples.count / channels)
            lead -= dropped
            let frames = samples.count / channels - dropped
            guard frames > 0 else { return }
            try samples.withUnsafeBufferPointer {
                let kept = UnsafeBufferPointer(rebasing: $0[(dropped * channels)...])
                try writer.append(interleaved: kept, frames: frames)
                meter?.add(kept, frames: frames)
            }
        }
        var buffer: [Int16] = []
        do {
            var fed = 0
            let sample = learning.map { Int(($0.upperBound - $0.lowerBound) * Double(config.sampleRate)) } ?? 0
            if let learning { try decoder.seek(to: learning.lowerBound) }
            while fed < sample, let learning, let block = try decoder.read(into: &buffer) {
                // From `learning` on (a seek lands on the packet before it).
                let skip = min(block.frames, max(0, Int((learning.lowerBound - block.start) * Double(config.sampleRate))))
                let frames = min(block.frames - skip, sample - fed)
                guard frames > 0 else { continue }
                lead += frames
                fed += frames
                try write(try buffer.withUnsafeBufferPointer { try filter.process(UnsafeBufferPointer(rebasing: $0[(skip * channels)...]), frames: frames) })
            }
            try decoder.seek(to: 0)
            while let block = try decoder.read(into: &buffer) {
                try write(try buffer.withUnsafeBufferPointer { try filter.process($0, frames: block.frames) })
            }
            let tail = [Int16](repeating: 0, count: Self.denoiserDelay(rate: config.sampleRate) * channels)
            try write(try tail.withUnsafeBufferPointer { try filter.process($0, frames: tail.count / channels) })
            try write(try filter.drain())
            try writer.finish()
        } catch {
            try? writer.finish()
            throw error
        }
        guard writer.samplesWritten > 0 else { throw MediaError.noStream(kind: "audio", file: source) }
        return meter?.result() ?? Loudness(integrated: nil, range: nil, truePeak: nil)
    }
}
