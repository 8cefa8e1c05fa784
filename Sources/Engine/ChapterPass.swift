// A saved recording's markers written into its file as chapters (issue 47), in the background: what
// other players and `ffprobe -show_chapters` see after a download.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI
import Storage

/// Copies, one at a time, each saved recording whose file is behind its markers (the catalog's
/// `chapterWork`, kept by triggers) into a new file with the markers as chapters, put in place by
/// `FileReplacement`: a kill -9 leaves the old file or the new one, and the work is still listed
/// until the copy is committed. Lossless: packets copied, every sample kept. Woken by marker changes,
/// saves and trims; it waits `settle` first, so a burst of markers made while listening costs one
/// copy. At start-up it finishes what a stop left.
public actor ChapterPass {
    private let catalog: Catalog
    private let data: DataDirectory
    private let minFreeBytes: Int64
    private let logger: Logger
    private let settle: Duration
    private let wakeups: AsyncStream<Void>
    private let wakeup: AsyncStream<Void>.Continuation
    /// Files that could not be copied (a damaged file, a full disk): tried again at the next start.
    private var failed: Set<UUID> = []

    init(catalog: Catalog, data: DataDirectory, minFreeBytes: Int64, logger: Logger, settle: Duration = .seconds(1)) {
        self.catalog = catalog; self.data = data; self.minFreeBytes = minFreeBytes; self.logger = logger; self.settle = settle
        (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a pass (markers changed, a recording was saved or trimmed).
    public nonisolated func wake() { wakeup.yield() }

    /// Passes until cancelled (recd's shutdown): one now, then one per wake-up.
    public func run() async {
        var next = wakeups.makeAsyncIterator()
        repeat {
            await pass()
        } while await next.next() != nil && !Task.isCancelled
    }

    private func pass() async {
        try? await Task.sleep(for: settle)
        let catalog = self.catalog
        // Until nothing is left: markers changed during a copy queue it again.
        while !Task.isCancelled, let work = try? await runBlocking({ try catalog.chapterWork() }) {
            let todo = work.filter { !failed.contains($0.id) }
            if todo.isEmpty { return }
            for (id, generation) in todo {
                if Task.isCancelled { return }
                let (data, minFree, logger) = (self.data, self.minFreeBytes, self.logger)
                do {
                    try await runBlocking { try Self.write(id, catalog: catalog, data: data, minFreeBytes: minFree, logger: logger) }
                    try await runBlocking { try catalog.finishChapterWork(id: id, generation: generation) }
                } catch {
                    failed.insert(id)
                    logger.warning("recording \(id): its markers could not be written into its file as chapters: \(error)")
                }
            }
        }
    }

    /// The file of saved recording `id` copied with its markers as chapters, in place. Nothing to do
    /// for a recording no longer saved (its file gets them when it is saved again) or gone. Blocking.
    static func write(_ id: UUID, catalog: Catalog, data: DataDirectory, minFreeBytes: Int64, logger: Logger) throws(EngineError) {
        data.mutations.lock()
        defer { data.mutations.unlock() }
        guard let r = try catalogCall({ try catalog.recording(id: id) }), r.state == .ready else { return }
        let markers = try catalogCall { try catalog.markers(of: id) }
        let source = try storageCall(data.recordingPath(r.file))
        guard FileOps.exists(source) else { return }
        try storageCall(FileOps.requireFree((FileOps.size(source) ?? 0) + minFreeBytes, in: data.recordings.path))
        let chapters = Self.chapters(markers, duration: r.duration, title: r.title)
        var size: Int64?
        try FileReplacement.replace(target: source, catalog: catalog, data: data, logger: logger) { temporary throws(EngineError) in
            do {
                _ = try WorkerMedia.trim(from: source, to: temporary, start: 0, end: nil, chapters: chapters)
            } catch {
                throw .fromMediaJob(error, writing: temporary) { .media(file: source, underlying: $0) }
            }
            size = FileOps.size(temporary)
        } commit: { journaled throws(EngineError) in
            try catalogCall { try catalog.commitChapters(id: id, sizeBytes: size, temporary: journaled) }
        }
        logger.info("recording \(id): \(markers.count) marker\(markers.count == 1 ? "" : "s") written into its file as chapters")
    }

    /// Chapters that cover the file from 0 (players start the first one there): the stretch before
    /// the first marker named after the recording, then one per marker to the next (a label, or
    /// "Marker N"); markers at the same time make one chapter.
    package static func chapters(_ markers: [Marker], duration: Double?, title: String) -> [MediaChapter] {
        var starts: [(time: Double, title: String)] = []
        for (i, m) in markers.enumerated() where starts.last.map({ m.time - $0.time >= 0.001 }) ?? true {
            starts.append((m.time, m.label.isEmpty ? "Marker \(i + 1)" : m.label))
        }
        guard !starts.isEmpty else { return [] }
        if starts[0].time >= 0.001 { starts.insert((0, title), at: 0) }
        let end = max(duration ?? 0, starts.last!.time + 0.001)
        return starts.indices.map { i in
            MediaChapter(start: starts[i].time, end: i + 1 < starts.count ? starts[i + 1].time : end, title: starts[i].title)
        }
    }
}
