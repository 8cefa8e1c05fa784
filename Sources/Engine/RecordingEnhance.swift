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
struct RecordingEnhance {
    let catalog: Catalog
    let data: DataDirectory
    let config: EngineConfiguration
    let logger: Logger

    /// The noise reduction and the level's ceiling (docs/design.md, "Enhance", says how they were
    /// chosen): a high-pass under the voice (rumble, handling, mains hum's fundamental), FFmpeg's
    /// FFT denoiser with its noise floor tracked (fans and rooms change), and a limiter at -1 dBFS
    /// after the gain (its own levelling off: the gain sets the level).
    static let filters = "highpass=f=80,afftdn=nr=12:nf=-50:tn=1"
    static let limiter = "alimiter=limit=0.891:level=disabled"
    /// The most the gain raises (a whispered memo) or lowers the sound, in dB.
    static let gainRange = -20.0...24.0

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
        let source = try data.recordingPath(r.file)
        guard FileOps.exists(source) else { throw .fileMissing(id: r.id, file: r.file) }
        // The copy is about the original's size (AAC at recd's rate): that much room, above the margin.
        try FileOps.requireFree((FileOps.size(source) ?? 0) + config.minFreeBytes, in: data.enhanced.path)
        let making = EnhancedCopies.makingPath(for: r.id, in: data)
        let fragmented = making + ".fragmented"
        defer { try? FileOps.remove(fragmented); try? FileOps.remove(making) }
        let started = DispatchTime.now().uptimeNanoseconds
        var copy: EnhancedCopy
        do {
            let worker = try MediaWorkerLease(reading: [source], writing: [fragmented, making])
            defer { worker.release() }
            let original = try r.loudness?.integrated ?? measure(source, lease: worker)
            let gain = original.map { min(max(EnhanceStatus.targetLoudness - $0, Self.gainRange.lowerBound), Self.gainRange.upperBound) } ?? 0
            let chain = "\(Self.filters),volume=\(String(format: "%.1f", gain))dB,\(Self.limiter)"
            let loudness = try encode(source, through: chain, to: fragmented, lease: worker)
            _ = try WorkerMedia.remux(from: fragmented, to: making, container: data.enhancedPath(r.id), lease: worker)
            let info = try WorkerMedia.probe(making, lease: worker)
            copy = EnhancedCopy(createdAt: Date(), duration: info.duration ?? 0, sizeBytes: FileOps.size(making) ?? 0, filters: chain,
                                loudness: loudness, originalLoudness: original)
        } catch {
            if let e = error as? EngineError { throw e }
            if let e = error as? FFmpegError, e.isDiskFull { throw .storage(file: making, operation: "write", underlying: e.description) }
            throw .media(file: source, underlying: error)
        }
        let target = data.enhancedPath(r.id)
        try FileOps.sync(making)
        try FileOps.rename(making, target)
        try FileOps.sync(data.enhanced.path)
        do {
            try catalog.commitEnhancedCopy(copy, of: r.id, madeFrom: r.duration, states: Self.states)
        } catch {
            // Deleted, trimmed or recorded over meanwhile: the copy is of sound it no longer has.
            _ = data.mutations.run { EnhancedCopies.sweep(catalog: catalog, data: data, startUp: false, logger: logger) }
            if case CatalogError.unexpectedState = error {
                throw .invalidState(id: r.id, state: (try? catalog.recording(id: r.id))?.state ?? r.state,
                                    action: "enhance (it was changed while its copy was made: ask again)", allowed: [.ready, .pending])
            }
            throw .from(error)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        logger.info("recording \(r.id): enhanced copy made in \(String(format: "%.1f", seconds)) s (\(copy.filters); \(copy.originalLoudness.map { String(format: "%.1f", $0) } ?? "unknown") → \(copy.loudness.map { String(format: "%.1f", $0) } ?? "unknown") LUFS)")
        return copy
    }

    /// Removes recording `id`'s enhanced copy: the row first (the copy is gone for every reader),
    /// then the file. False when it had none.
    func remove(_ id: UUID) throws(EngineError) -> Bool {
        let had = try catalogCall { try catalog.deleteEnhancedCopy(of: id) }
        try? FileOps.remove(data.enhancedPath(id))
        return had
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

    /// Decodes `source`, filters it through `chain` and writes it (fragmented AAC) to `destination`.
    /// Returns the result's integrated loudness.
    private func encode(_ source: String, through chain: String, to destination: String, lease worker: MediaWorkerLease) throws -> Double? {
        let decoder = try WorkerAudioDecoder(path: source, lease: worker, readFrames: 65_536)
        let channels = min(2, max(1, decoder.sourceChannels))
        try decoder.setOutput(rate: config.sampleRate, channels: channels)
        let filter = try WorkerAudioFilter(description: chain, rate: config.sampleRate, channels: channels, lease: worker)
        let writer = try WorkerAudioWriter(path: destination, encoding: config.encoding(.aac, channels: channels), lease: worker)
        let meter = LoudnessMeter(sampleRate: config.sampleRate, channels: channels)
        func write(_ samples: [Int16]) throws {
            let frames = samples.count / channels
            guard frames > 0 else { return }
            try samples.withUnsafeBufferPointer {
                try writer.append(interleaved: $0, frames: frames)
                meter?.add($0, frames: frames)
            }
        }
        var buffer: [Int16] = []
        do {
            while let block = try decoder.read(into: &buffer) {
                try write(try buffer.withUnsafeBufferPointer { try filter.process($0, frames: block.frames) })
            }
            try write(try filter.drain())
            try writer.finish()
        } catch {
            try? writer.finish()
            throw error
        }
        guard writer.samplesWritten > 0 else { throw MediaError.noStream(kind: "audio", file: source) }
        return meter?.result().integrated
    }
}
