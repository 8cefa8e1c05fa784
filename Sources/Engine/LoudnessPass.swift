// Measuring the loudness of recordings that have none yet, in the background.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI
import Storage

/// Measures, one at a time, the saved and pending recordings whose loudness is not known: salvaged
/// ones, trimmed ones (the cut is measured again), and those from before loudness was measured.
/// Runs after start-up and whenever woken (a trim); each measurement decodes the file on
/// `BackgroundPool` (an idle-priority thread), so no request waits for it or competes with it. State: what is left and what was done, for status.
public actor LoudnessPass {
    private let catalog: Catalog
    private let data: DataDirectory
    private let logger: Logger
    private let wakeups: AsyncStream<Void>
    private let wakeup: AsyncStream<Void>.Continuation
    /// Recordings with nothing to measure (a silent video) or a file that does not decode: not
    /// tried again until recd restarts.
    private var skipped: Set<UUID> = []
    private var progress = LoudnessPassStatus(pending: 0, measured: 0, current: nil)

    init(catalog: Catalog, data: DataDirectory, logger: Logger) {
        self.catalog = catalog; self.data = data; self.logger = logger
        (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a pass (a recording lost its loudness).
    public nonisolated func wake() { wakeup.yield() }

    public var status: LoudnessPassStatus { progress }

    /// Passes until cancelled (recd's shutdown): one now, then one per wake-up.
    public func run() async {
        var next = wakeups.makeAsyncIterator()
        repeat {
            await pass()
        } while await next.next() != nil && !Task.isCancelled
    }

    private func pass() async {
        let (catalog, skipped) = (self.catalog, self.skipped)
        guard let ids = try? await runBlocking({ try catalog.idsWithoutLoudness() }) else { return }
        let todo = ids.filter { !skipped.contains($0) }
        progress.pending = todo.count
        for id in todo {
            if Task.isCancelled { break }
            progress.current = id
            await measure(id)
            progress.pending -= 1
        }
        progress.current = nil
        progress.pending = 0
    }

    private func measure(_ id: UUID) async {
        let (catalog, data) = (self.catalog, self.data)
        do {
            // The catalog's reads and write at normal priority (a write at idle priority could hold
            // SQLite's write lock while a busy CPU never gives it back); only the decode is idle.
            guard let r = try await runBlocking({ try catalog.recording(id: id) }), r.loudness == nil,
                  r.state == .ready || r.state == .pending else { return }
            let path = try data.recordingPath(r.file)
            let (size, measured) = try await runInBackground { (FileOps.size(path), try Library.analyze(path: path, priority: .background).loudness) }
            guard let loudness = measured else { return }
            let stored = try await runBlocking { try catalog.storeLoudness(id: id, loudness, measuredFileSize: size) }
            if stored {
                progress.measured += 1
                logger.debug("loudness of \(id) measured")
            }
        } catch MediaError.noStream {
            skipped.insert(id)   // a silent video: no sound, no loudness
        } catch {
            skipped.insert(id)
            logger.warning("the loudness of recording \(id) could not be measured: \(error)")
        }
    }
}
