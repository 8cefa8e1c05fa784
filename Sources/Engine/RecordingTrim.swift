// Trim: a recording cut to a span of itself, without re-encoding, in place or as a new recording.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI
import Storage

/// Cuts a saved or pending recording to `[start, end)` with `MP4Trimmer` (packets copied, edit
/// lists for the exact cut) and puts the result in place, or beside it as a new recording, through
/// `FileReplacement`: a kill -9 at any instant leaves the old recording or the new one, whole.
/// Blocking: run on `BlockingPool`.
package struct RecordingTrim {
    let catalog: Catalog
    let data: DataDirectory
    let minFreeBytes: Int64
    let logger: Logger

    /// Checks the span against the recording (before anything is written): both ends inside it,
    /// at least `TrimRequest.minimumSeconds` long. Returns the span in seconds.
    static func span(_ request: TrimRequest, of r: Recording) throws(EngineError) -> (start: Double, end: Double) {
        guard request.start != nil || request.end != nil else {
            throw .invalidValue(field: "start", detail: "give start, end or both (seconds): the span of the recording to keep")
        }
        guard let duration = r.duration, duration > 0 else {
            throw .invalidState(id: r.id, state: r.state, action: "trim (its duration is not known)", allowed: [.ready, .pending])
        }
        let start = request.start ?? 0, end = request.end ?? duration
        let shown = String(format: "%.3f s", duration)
        guard start.isFinite, start >= 0, start < duration else {
            throw .invalidValue(field: "start", detail: "\(start) is outside the recording (0 to \(shown))")
        }
        // A millisecond of slack: an end given as the duration read from the listing (rounded).
        guard end.isFinite, end >= 0, end <= duration + 0.001 else {
            throw .invalidValue(field: "end", detail: "\(end) is outside the recording (0 to \(shown))")
        }
        guard end > start else {
            throw .invalidValue(field: "end", detail: "the span \(start)–\(end) s is empty: the end must come after the start")
        }
        guard end - start >= TrimRequest.minimumSeconds else {
            throw .invalidValue(field: "end", detail: "the span \(start)–\(end) s is shorter than \(TrimRequest.minimumSeconds) s")
        }
        return (start, min(end, duration))
    }

    /// The copy's title: the original's with " (trimmed)", cut (with …) to fit the 40-character
    /// limit, so the library tells the two apart (issue 37: the copy had the same title).
    package static func copyTitle(_ title: String) -> String {
        let suffix = " (trimmed)"
        let room = MetadataLimits.titleMaxCharacters - suffix.count
        // A cut that ends at a space gives "11:36… (trimmed)", not "11:36 … (trimmed)".
        let base = title.count <= room ? title : String(title.prefix(room - 1)).trimmingCharacters(in: .whitespaces) + "…"
        return base + suffix
    }

    /// Writes the cut and commits it. `r` was read before; its state is checked again in the commit.
    func run(_ r: Recording, start: Double, end: Double, asNew: Bool) throws(EngineError) -> Recording {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        let source = try storageCall(data.recordingPath(r.file))
        guard FileOps.exists(source) else { throw .fileMissing(id: r.id, file: r.file) }
        var result = r
        result.loudness = nil   // the cut's own: measured again
        if asNew {
            result.id = UUID()
            result.file = DataDirectory.relativePath(id: result.id, type: r.type)
            result.createdAt = Date()
            result.playCount = 0
            result.lastPlayedAt = nil
            result.recovered = false
            result.title = Self.copyTitle(r.title)
        }
        let target = try storageCall(data.recordingPath(result.file))
        // The cut is at most the whole file: that much room, and the margin recordings keep.
        try storageCall(FileOps.requireFree((FileOps.size(source) ?? 0) + minFreeBytes, in: data.recordings.path))
        var waveform: Data?, poster: Data?
        let committed = try FileReplacement.replace(target: target, catalog: catalog, data: data, logger: logger) { temporary throws(EngineError) in
            do {
                let cut = try WorkerMedia.trim(from: source, to: temporary, start: start, end: end)
                let info = try WorkerMedia.probe(temporary)
                result.duration = info.duration
                result.sizeBytes = FileOps.size(temporary)
                // The stored waveform, sliced (to 256 samples: no decoding of the hour); none stored
                // (a salvaged or adopted file): made from the new file when first asked for.
                waveform = (try? catalog.waveform(id: r.id)).flatMap { $0 }.flatMap { try? WaveformData(dat: $0) }?
                    .slice(from: start, to: end).dat()
                // The picture at the cut, not the keyframe it is decoded from.
                poster = r.type == .video ? try? WorkerMedia.poster(fromFile: temporary) : nil
                logger.info("recording \(r.id): cut \(String(format: "%.3f–%.3f s", start, end)) into \(temporary) (\(cut.packets) packets, video from \(String(format: "%.3f", cut.videoLeadIn)) s before the cut)")
            } catch {
                throw .fromMediaJob(error, writing: temporary) { .media(file: source, underlying: $0) }
            }
        } commit: { journaled throws(EngineError) in
            do {
                return try catalog.commitReplacement(result, insert: asNew, states: [RecordingState.ready.rawValue, RecordingState.pending.rawValue],
                                                     waveform: waveform, poster: poster, temporary: journaled,
                                                     transcriptCut: (r.id, start, end))
            } catch {
                if case CatalogError.unexpectedState(_, let s) = error, let actual = RecordingState(rawValue: s) {
                    throw .invalidState(id: r.id, state: actual, action: "trim", allowed: [.ready, .pending])
                }
                throw .from(error)
            }
        }
        return committed
    }
}
