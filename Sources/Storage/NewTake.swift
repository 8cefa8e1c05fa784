// A take's file and row, written in the order that leaves every instant recoverable.
import Catalog
import Foundation
import Logging
import RecdAPI

/// The crash protocol of a new take, whole (the Recorder calls it; every call blocks, so it runs on
/// BlockingPool):
/// 1. `begin`: the row, in the `recording` state, before anything is captured — a file that start-up
///    recovery finds is salvaged only for a row, so a kill -9 mid-take keeps what reached the file;
/// 2. `abandon` when the take did not start: the file first, then the row — a crash in between
///    leaves a `recording` row without a file, which recovery removes cleanly (a header-only file
///    without a row would be adopted as a recording);
/// 3. `settle` when it ended: the row's last write (state, duration, size, loudness, metadata),
///    tried three times; if it still fails the row stays `recording` and the next start-up salvages
///    the file, so the take is never lost. Or `discard`: `TakeRemoval`'s journaled removal.
public struct NewTake: Sendable {
    public let recording: Recording
    private let catalog: Catalog
    private let data: DataDirectory

    /// The take's file (absolute).
    public var path: String { data.absolute(recording.file) }

    /// Writes `recording`'s row (step 1).
    public static func begin(_ recording: Recording, catalog: Catalog, data: DataDirectory) throws(StorageError) -> NewTake {
        try catalogCall { try catalog.insert(recording) }
        return NewTake(recording: recording, catalog: catalog, data: data)
    }

    /// The take did not start: its file, then its row (step 2). Failures are logged: the start's own
    /// error is what the caller reports, and recovery finishes what is left.
    public func abandon(logger: Logger) {
        try? FileOps.remove(path)
        do { try catalog.delete(id: recording.id) } catch {
            logger.error("start failed, and so did removing its row \(recording.id): \(error)")
        }
    }

    /// Writes the take's outcome into its row (step 3), tried three times (200 and 400 ms apart);
    /// returns the row as written.
    public func settle(logger: Logger, _ change: @escaping @Sendable (inout Recording) -> Void) throws(StorageError) -> Recording {
        var attempt = 0
        while true {
            do {
                return try catalog.modify(id: recording.id, change)
            } catch {
                attempt += 1
                if attempt >= 3 {
                    logger.error("recording \(recording.id): cannot record its outcome in the catalog (\(error)); it will be salvaged at the next start")
                    throw .from(error)
                }
                usleep(UInt32(200_000 * attempt))
            }
        }
    }

    /// Throws the take away (its row still `recording`): `TakeRemoval`'s journaled removal. A take
    /// whose row is already gone is gone.
    public func discard() throws(StorageError) {
        guard let row = try catalogCall({ try catalog.recording(id: recording.id) }) else { return }
        try TakeRemoval.remove(row, expecting: [.recording], action: "discard", catalog: catalog, data: data)
    }
}
