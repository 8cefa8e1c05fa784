// Transcribing saved recordings in the background (issue 38): what Whisper hears, word by word, for
// search and for the transcript under the player. On the device: the transcriber is a process of
// recd's (`Transcriber`), fed sound that recd's media worker decodes.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import RecdAPI
import Storage
import Synchronization

/// Where the transcriber is and which model it runs; nil model: transcription off.
public struct TranscriptionSettings: Sendable {
    /// The transcriber's folder (scripts/install-deps.sh --transcribe): venv, models, script.
    public var directory: String
    /// "base", or nil when off (--transcribe off).
    public var model: String?
    /// At `SCHED_IDLE` (the default: a take or a playback never waits for a transcript), or at recd's
    /// own priority (`--transcribe-priority normal`, for a machine that is never idle).
    public var idle: Bool
    public init(directory: String, model: String?, idle: Bool = true) { self.directory = directory; self.model = model; self.idle = idle }

    /// Where recd looks when not told: beside an installed recd (PREFIX/lib/recd/transcribe), then a
    /// build tree's (.build/transcribe: recd in .build/<triple>/<configuration>/).
    public static func defaultDirectory(program: String = MediaWorkerPool.besideThisProgram) -> String {
        let bin = (program as NSString).deletingLastPathComponent
        let installed = ((bin as NSString).deletingLastPathComponent as NSString).appendingPathComponent("lib/recd/transcribe")
        let buildTree = (((bin as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent as NSString)
            .appendingPathComponent("transcribe")
        return [installed, buildTree].first { FileManager.default.fileExists(atPath: $0 + "/.installed") } ?? installed
    }
}

/// Transcribes, one at a time, the saved recordings that have no transcript: after start-up (older
/// recordings, and those a crash interrupted: nothing is stored until a transcript is whole) and
/// whenever woken (a save, an import). The transcriber is started for a pass and ended after it, so
/// its ~400 MB are held only while there is work. A transcript is stored only if the file is still
/// the one transcribed (a trim meanwhile: it is done again, from the cut).
public actor TranscriptionPass {
    private let catalog: Catalog
    private let data: DataDirectory
    private let events: EventHub
    private let logger: Logger
    public nonisolated let settings: TranscriptionSettings
    private let wakeups: AsyncStream<Void>
    private let wakeup: AsyncStream<Void>.Continuation
    /// Failures of the transcriber itself (it would not start): what status says.
    private var unavailable: String?
    private var pending = 0
    private var done = 0
    /// The recording being transcribed and how far (written from the blocking thread that feeds it).
    private nonisolated let current = CurrentJob()

    final class CurrentJob: Sendable {
        private let job = Mutex<(id: UUID, progress: Double)?>(nil)
        func withLock<T>(_ body: (inout (id: UUID, progress: Double)?) -> T) -> T { job.withLock { body(&$0) } }
    }

    init(catalog: Catalog, data: DataDirectory, events: EventHub, settings: TranscriptionSettings, logger: Logger) {
        self.catalog = catalog; self.data = data; self.events = events; self.settings = settings; self.logger = logger
        isOn = settings.model.map { Transcriber.isInstalled(settings.directory, model: $0) } ?? false
        (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether transcripts are being made: on, and installed when recd started (what `run` decided;
    /// a transcriber installed later is used from the next start).
    public nonisolated let isOn: Bool

    /// Asks for a pass (a recording was saved or imported).
    public nonisolated func wake() { wakeup.yield() }

    public var status: TranscriptionStatus {
        guard let model = settings.model else { return TranscriptionStatus(state: "off") }
        guard isOn else {
            return TranscriptionStatus(state: "not_installed", message: TranscriberError.notInstalled(directory: settings.directory).description)
        }
        let now = current.withLock { $0 }
        return TranscriptionStatus(state: unavailable != nil ? "unavailable" : now == nil ? "idle" : "working", model: model,
                                   pending: pending, current: now?.id, progress: now?.progress, done: done, message: unavailable)
    }

    /// What a recording's transcript is: stored, or pending/none by what this pass will do.
    public func transcript(of r: Recording) async throws -> Transcript {
        let catalog = self.catalog
        if let t = try await runBlocking({ try catalog.transcript(id: r.id) }) {
            return Transcript(recordingID: r.id, state: t.state, language: t.language, model: t.model, error: t.error, segments: t.segments)
        }
        guard r.state == .ready, isOn, unavailable == nil else {
            let why = settings.model == nil ? "transcription is off (recd --transcribe)"
                : !isOn ? TranscriberError.notInstalled(directory: settings.directory).description
                : unavailable ?? "only saved recordings are transcribed"
            return Transcript(recordingID: r.id, state: .none, error: why)
        }
        return Transcript(recordingID: r.id, state: .pending)
    }

    /// Passes until cancelled (recd's shutdown): one now, then one per wake-up.
    public func run() async {
        var next = wakeups.makeAsyncIterator()
        guard isOn else {
            if let model = settings.model {
                logger.info("transcripts: off, the transcriber (\(model)) is not installed in \(settings.directory) (scripts/install-deps.sh --transcribe \(settings.directory) installs it there)")
            }
            while await next.next() != nil {}   // a service ends only with recd
            return
        }
        // A failure may have been the transcriber's, since fixed (or the file's, since put back).
        let catalog = self.catalog
        _ = try? await runBlocking { try catalog.forgetFailedTranscripts() }
        // A save, an import, a recovery: a pass (it finds what has no transcript).
        let (subscription, changes) = events.subscribe(types: [.libraryChanged], heartbeats: false)
        let listener = Task { [weak self] in
            for await delivery in changes {
                guard case .event(let e) = delivery, case .libraryChanged(let change) = e.payload,
                      [.saved, .created, .edited, .recovered].contains(change.change) else { continue }
                self?.wake()
            }
        }
        defer { listener.cancel(); events.unsubscribe(subscription) }
        repeat {
            await pass()
        } while await next.next() != nil && !Task.isCancelled
    }

    private func pass() async {
        let catalog = self.catalog
        guard let model = settings.model, let ids = try? await runBlocking({ try catalog.idsWithoutTranscript() }), !ids.isEmpty else { return }
        pending = ids.count
        defer { pending = 0 }
        let (directory, idle) = (settings.directory, settings.idle)
        let transcriber: Transcriber
        do {
            transcriber = try await runBlocking { try Transcriber(directory: directory, model: model, idle: idle) }
        } catch {
            unavailable = "\(error)"
            logger.error("transcripts: \(error)")
            return
        }
        defer { transcriber.end() }
        // The model's load is the first recording's work (status: working on it); recd stopping
        // meanwhile kills the transcriber rather than waiting for a load a busy CPU makes slow.
        current.withLock { $0 = (ids[0], 0) }
        let loading = ContinuousClock.now
        do {
            try await withTaskCancellationHandler {
                try await runInBackground { try transcriber.waitUntilLoaded() }
            } onCancel: {
                transcriber.stop()
            }
            current.withLock { $0 = nil }
            unavailable = nil
            logger.debug("transcripts: the transcriber (\(model)) loaded in \(String(format: "%.1f", (ContinuousClock.now - loading).seconds)) s")
        } catch {
            current.withLock { $0 = nil }
            if Task.isCancelled { return }
            unavailable = "\(error)"
            logger.error("transcripts: \(error)")
            return
        }
        for id in ids {
            if Task.isCancelled { break }
            // Newer saves first: a pass woken again starts over from the newest.
            await transcribe(id, with: transcriber)
            pending -= 1
        }
    }

    private func transcribe(_ id: UUID, with transcriber: Transcriber) async {
        let (catalog, data, events, current) = (self.catalog, self.data, self.events, self.current)
        // A file value recd would not follow (`recordingPath`) is refused wherever the recording is
        // used; the check and repair mark it missing.
        guard let r = try? await runBlocking({ try catalog.recording(id: id) }), r.state == .ready,
              let path = try? data.recordingPath(r.file) else { return }
        current.withLock { $0 = (id, 0) }
        defer { current.withLock { $0 = nil } }
        let stored: StoredTranscript
        // The size of the file as read: a transcript is stored only if it is still that file (a stat:
        // disk I/O, so not on the actor).
        let size: Int64? = (try? await runBlocking { FileOps.size(path) }) ?? nil
        do {
            let duration = r.duration ?? 0
            // recd stopping does not wait for the job (it may take minutes): the transcriber is killed,
            // and the recording is transcribed again at the next start.
            let (segments, language) = try await withTaskCancellationHandler {
                try await runInBackground {
                    try Self.feed(path: path, to: transcriber)
                    // Stalled: no segment for this long (Whisper's 30 s windows take seconds each here).
                    return try transcriber.transcribe(stallSeconds: 600) { segment in
                        let progress = duration > 0 ? min(1, segment.end / duration) : 0
                        current.withLock { $0 = (id, progress) }
                        events.publish(.transcriptProgress(TranscriptProgressEvent(recordingID: id, state: .pending, progress: progress)))
                    }
                }
            } onCancel: {
                transcriber.stop()
            }
            stored = StoredTranscript(state: .done, language: language, model: transcriber.model, error: nil, segments: segments)
        } catch MediaError.noStream {
            stored = StoredTranscript(state: .done, language: nil, model: transcriber.model, error: nil, segments: [])   // a silent video: no words
        } catch let error as TranscriberError {
            if Task.isCancelled { return }   // stopped with recd: nothing to say
            // The transcriber's own failure: this recording is tried again by the next pass.
            unavailable = "\(error)"
            logger.error("transcripts: recording \(id): \(error)")
            return
        } catch {
            logger.warning("transcripts: recording \(id) could not be decoded for its transcript: \(error)")
            stored = StoredTranscript(state: .failed, language: nil, model: transcriber.model, error: "\(error)", segments: [])
        }
        do {
            // false: the recording changed meanwhile (deleted, trimmed): a later pass finds what is left.
            guard try await runBlocking({ try catalog.storeTranscript(id: id, stored, transcribedFileSize: size) }) else { return }
        } catch {
            // A full disk, a catalog error: nothing stored, so the next pass (or start) tries again.
            logger.error("transcripts: recording \(id): its transcript could not be stored: \(error)")
            return
        }
        done += 1
        logger.info("transcripts: recording \(id): \(stored.state == .done ? "\(stored.segments.reduce(0) { $0 + $1.words.count }) words" : "failed")")
        events.publish(.transcriptDone(TranscriptProgressEvent(recordingID: id, state: stored.state, progress: 1)))
    }

    /// Decodes `path` to 16 kHz mono in a media worker (at idle priority) and sends it to the
    /// transcriber, a block at a time.
    private static func feed(path: String, to transcriber: Transcriber) throws {
        // Ten seconds a round trip.
        let decoder = try WorkerAudioDecoder(path: path, priority: .background, readFrames: 10 * TranscriberInput.sampleRate)
        try decoder.setOutput(rate: TranscriberInput.sampleRate, channels: TranscriberInput.channels)
        var buffer: [Int16] = []
        while let block = try decoder.read(into: &buffer) {
            try buffer.withUnsafeBufferPointer { try transcriber.append(UnsafeBufferPointer(rebasing: $0[..<block.frames])) }
        }
    }
}
