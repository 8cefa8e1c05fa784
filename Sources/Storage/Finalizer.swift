// Turning the file written while recording into the file that is kept.
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI

/// Facts about a finished file.
public struct FinishedFile: Sendable {
    public var duration: Double?
    public var sizeBytes: Int64?
    /// Packets copied by the finalizing remux; nil when it failed (the fragmented file was kept).
    public var packets: Int?

    package init(duration: Double?, sizeBytes: Int64?, packets: Int?) {
        (self.duration, self.sizeBytes, self.packets) = (duration, sizeBytes, packets)
    }

    /// Writes what the file says into its catalog row.
    public func apply(to r: inout Recording) {
        r.duration = duration
        r.sizeBytes = sizeBytes
    }
}

public enum RecordingFinalizer {
    /// Remuxes the fragmented file at `path` into a faststart MP4 next to it, makes that durable and
    /// renames it over the original (atomic: at every instant `path` is a playable file). If the remux
    /// fails, the fragmented file stays as it is (it plays, only its duration header is less exact).
    /// Blocking.
    public static func finalize(path: String, data: DataDirectory, logger: Logger) -> FinishedFile {
        let tmp = data.finalizingPath(for: path)
        // First, whether or not the remux can run (a full disk has no room for it): a torn last
        // `moof` makes the whole file unreadable; cut off, the file ends with its last whole fragment.
        do {
            let cut = try TornFragment.cut(path)
            if cut > 0 { logger.warning("\(path): its last fragment's header was cut short (a full disk or a power cut); its \(cut) bytes were cut off, the fragments before it kept") }
        } catch {
            logger.warning("\(error)")
        }
        // A take's worker (the one that wrote the file, when it is idle): the file is recd's own
        // capture, never bytes from elsewhere. Its job reads the file and writes `tmp` (which then
        // becomes `path`: the probe after the rename reads what it wrote).
        let lease = try? MediaWorkerLease(forTake: [path], writing: [tmp])
        do {
            let result = try WorkerMedia.remux(from: path, to: tmp, lease: lease)
            try FileOps.sync(tmp)
            try FileOps.rename(tmp, path)
            try FileOps.sync(URL(fileURLWithPath: path).deletingLastPathComponent().path)
            let info = try? WorkerMedia.probe(path, lease: lease)
            if result.stoppedAtDamage { logger.warning("\(path): a torn last fragment was dropped") }
            return FinishedFile(duration: info?.duration, sizeBytes: FileOps.size(path), packets: result.packets)
        } catch {
            try? FileOps.remove(tmp)
            logger.warning("could not finalize \(path); keeping the fragmented file: \(error)")
            // Kept as it is, it is the file the reply (and the row) speak of: durable before them.
            do { try FileOps.sync(path) } catch { logger.warning("\(error)") }
            let info = try? WorkerMedia.probe(path, lease: lease)
            return FinishedFile(duration: info?.duration, sizeBytes: FileOps.size(path), packets: nil)
        }
    }
}
