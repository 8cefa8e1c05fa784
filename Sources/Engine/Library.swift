// Stored recordings: list, show, edit, save, discard, export.
import Capture
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Storage

/// Operations on recordings that are not being recorded. Safe to call from any task: each change is
/// one catalog transaction; checks that involve the active recording go through `Recorder`.
public struct Library: Sendable {
    let catalog: Catalog
    let recorder: Recorder
    let player: Player
    let events: EventHub
    let config: EngineConfiguration
    let logger: Logger
    let loudnessPass: LoudnessPass
    /// Plays counted with group commit (shared with the player).
    let plays: PlayCountCommitter
    /// Two imports do their media work at a time (`ImportSlots`: why).
    let imports = ImportSlots(count: 2)

    public func resolve(_ idOrPrefix: String) throws(EngineError) -> Recording {
        try catalogCall { try catalog.resolve(idOrPrefix) }
    }

    /// A page of the library as the API's `RecordingList` JSON (with its newline).
    public func listJSON(_ query: ListQuery) throws(EngineError) -> [UInt8] {
        try Self.checkLimit(query.limit)
        guard query.offset >= 0 else { throw .invalidValue(field: "offset", detail: "must not be negative") }
        let (rows, total) = try catalogCall { try catalog.list(query) }
        return Self.listing(RecordingList(recordings: rows, total: total, limit: query.limit, offset: query.offset))
    }

    private static func checkLimit(_ limit: Int) throws(EngineError) {
        guard (1...1000).contains(limit) else {
            throw .invalidValue(field: "limit", detail: "\(limit) is not between 1 and 1000")
        }
    }

    /// Changes title, notes and purpose. A blank title becomes the auto title again.
    public func edit(_ idOrPrefix: String, _ patch: MetadataPatch) async throws(EngineError) -> Recording {
        let change = try storageCall(MetadataRules.validate(patch))
        let id = try resolve(idOrPrefix).id
        let tz = config.timeZone
        let r = try await blockingCatalogCall { [catalog] in
            try catalog.modify(id: id) { MetadataRules.apply(change, to: &$0, timeZone: tz) }
        }
        logger.info("recording \(id) edited")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: id, change: .edited)))
        return r
    }

    /// pending → ready, optionally changing metadata on the way (the seed's [SAVE]).
    public func save(_ idOrPrefix: String, _ patch: MetadataPatch) async throws(EngineError) -> Recording {
        let change = try storageCall(MetadataRules.validate(patch))
        let id = try resolve(idOrPrefix).id
        let tz = config.timeZone
        let r = try await blockingCatalogCall { [catalog] in
            try catalog.modify(id: id) { r in
                guard r.state == .pending else {
                    throw EngineError.invalidState(id: id, state: r.state, action: "save", allowed: [.pending])
                }
                r.state = .ready
                MetadataRules.apply(change, to: &r, timeZone: tz)
            }
        }
        logger.info("recording \(id) saved")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: id, change: .saved)))
        return r
    }

    /// Removes a pending recording: its file and its row (the seed's "Discard recording?"), with
    /// the crash-safe protocol of `TakeRemoval`.
    public func discard(_ idOrPrefix: String) async throws(EngineError) -> Recording {
        let r = try resolve(idOrPrefix)
        guard r.state == .pending else {
            throw .invalidState(id: r.id, state: r.state, action: "discard", allowed: [.pending])
        }
        await player.stopIfPlaying(r.id)   // a preview of it ends (previews never count)
        try await blockingCatalogCall { [catalog, config] in
            try TakeRemoval.remove(r, expecting: [.pending], action: "discard", catalog: catalog, data: config.dataDirectory)
        }
        await sweepEnhancedCopies()   // a preview's copy went with its row
        logger.info("recording \(r.id) discarded")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .discarded)))
        return r
    }

    /// Deletes a recording for good (the seed's "Delete '<title>'?"): file and row both go, or
    /// neither, with the crash-safe protocol of `TakeRemoval`. A recording in progress is stopped
    /// and discarded; a playback of it is stopped, and not counted.
    public func delete(_ idOrPrefix: String) async throws(EngineError) -> Recording {
        let r = try resolve(idOrPrefix)
        await player.stopIfPlaying(r.id)
        if try await recorder.discardIfActive(r.id) {
            logger.info("recording \(r.id) deleted while it was being recorded")
            return r
        }
        // The state is checked again, in the same transaction as the delete.
        try await blockingCatalogCall { [catalog, config] in
            try TakeRemoval.remove(r, expecting: [.pending, .ready, .missing], action: "delete",
                                   catalog: catalog, data: config.dataDirectory)
        }
        await sweepEnhancedCopies()   // its copy's row went with it
        logger.info("recording \(r.id) deleted")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .deleted)))
        return r
    }

    // MARK: Enhance

    /// Recording `idOrPrefix`'s enhanced copy, if it has one.
    public func enhancement(_ idOrPrefix: String) throws(EngineError) -> EnhanceStatus {
        let r = try resolve(idOrPrefix)
        return EnhanceStatus(recordingID: r.id, copy: try catalogCall { try catalog.enhancedCopy(of: r.id) })
    }

    /// `r`'s enhanced copy, or why there is none to play or send (`no_media`).
    public func enhancedCopy(of r: Recording) throws(EngineError) -> EnhancedCopy {
        guard let copy = try catalogCall({ try catalog.enhancedCopy(of: r.id) }) else {
            throw .noMedia(id: r.id, detail: EnhancedCopies.none(r.id))
        }
        return copy
    }

    /// The path of `r`'s enhanced copy's file.
    public func enhancedPath(of r: Recording) -> String { config.dataDirectory.enhancedPath(r.id) }

    /// Makes (or makes again) recording `idOrPrefix`'s enhanced copy (`RecordingEnhance`).
    public func enhance(_ idOrPrefix: String) async throws(EngineError) -> EnhanceStatus {
        let r = try resolve(idOrPrefix)
        try RecordingEnhance.check(r)
        let job = RecordingEnhance(catalog: catalog, data: config.dataDirectory, config: config, logger: logger)
        // A slot of the imports': a hostile client asking for copies of every recording at once holds
        // two of the pool's threads, not all of them.
        let copy = try await imports.run { () async throws(EngineError) in try await blockingCatalogCall { try job.make(r) } }
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .edited)))
        return EnhanceStatus(recordingID: r.id, copy: copy)
    }

    /// Removes recording `idOrPrefix`'s enhanced copy (`no_media` when it has none); the original
    /// is not touched.
    public func removeEnhancement(_ idOrPrefix: String) async throws(EngineError) -> EnhanceStatus {
        let r = try resolve(idOrPrefix)
        await player.stopIfPlaying(r.id, enhanced: true)
        let job = RecordingEnhance(catalog: catalog, data: config.dataDirectory, config: config, logger: logger)
        guard try await blockingCatalogCall({ try job.remove(r.id) }) else {
            throw .noMedia(id: r.id, detail: EnhancedCopies.none(r.id))
        }
        logger.info("recording \(r.id): enhanced copy removed")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .edited)))
        return EnhanceStatus(recordingID: r.id, copy: nil)
    }

    /// Removes the enhanced copies' files whose row is gone (a delete, a trim in place).
    func sweepEnhancedCopies() async {
        let (catalog, data, logger) = (catalog, config.dataDirectory, logger)
        _ = try? await runBlocking { data.mutations.run { EnhancedCopies.sweep(catalog: catalog, data: data, startUp: false, logger: logger) } }
    }

    /// Cuts a saved or pending recording to `[start, end)` losslessly (`RecordingTrim`), in place or,
    /// with `asNew`, as a new recording beside it (play count 0). A playback of it is stopped first
    /// (uncounted) when it is cut in place.
    public func trim(_ idOrPrefix: String, _ request: TrimRequest) async throws(EngineError) -> Recording {
        let r = try resolve(idOrPrefix)
        try r.requireFile(to: "trim")
        let (start, end) = try RecordingTrim.span(request, of: r)
        if !request.asNew { await player.stopIfPlaying(r.id) }
        let trim = RecordingTrim(catalog: catalog, data: config.dataDirectory, minFreeBytes: config.minFreeBytes, logger: logger)
        let result = try await blockingCatalogCall { try trim.run(r, start: start, end: end, asNew: request.asNew) }
        loudnessPass.wake()   // the cut is measured again
        if !request.asNew { await sweepEnhancedCopies() }   // a copy of the uncut sound is gone with its row
        let how = request.asNew ? " as new recording \(result.id)" : ""
        logger.info("recording \(r.id) trimmed to \(String(format: "%.3f–%.3f s", start, end))\(how)")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: result.id, change: request.asNew ? .created : .edited)))
        return result
    }

    /// Refuses an import announced larger than `--max-import-mb`, or one the disk has no room for:
    /// the upload and what is made of it (at most as large again), above `--min-free-mb`.
    public func checkImportRoom(name: String, announcedBytes: Int64?) throws(EngineError) {
        if let announcedBytes, announcedBytes > config.maxImportBytes {
            throw .tooLarge(name: name, limitBytes: config.maxImportBytes)
        }
        try storageCall(FileOps.requireFree(2 * (announcedBytes ?? 0) + config.minFreeBytes, in: config.dataDirectory.recordings.path))
    }

    /// While an import arrives, and once it has: room above --min-free-mb for a result as large as
    /// what arrived (which is on the disk already). A body that did not announce its size (chunked)
    /// was 0 bytes to `checkImportRoom` and is counted here; for an announced one this never asks for
    /// more than that check did.
    public func checkImportRoom(name: String, receivedBytes: Int64) throws(EngineError) {
        try storageCall(FileOps.requireFree(receivedBytes + config.minFreeBytes, in: config.dataDirectory.recordings.path))
    }

    /// Stores an uploaded file (`upload`, in `.uploads/`, with the SHA-256 of its bytes) as a new
    /// `ready` recording (`Importer`), in the upload's worker when it has one. The upload itself is
    /// the caller's to remove.
    public func importFile(upload: String, contentHash: String, worker: MediaWorkerLease? = nil, _ request: ImportRequest) async throws(EngineError) -> Recording {
        let importer = Importer(catalog: catalog, data: config.dataDirectory, config: config, logger: logger)
        let r = try await imports.run { () async throws(EngineError) in
            try await blockingCatalogCall { try importer.run(upload: upload, contentHash: contentHash, worker: worker, request: request) }
        }
        logger.info("imported '\(request.name)' as recording \(r.id) (\(r.type.rawValue), \(r.duration.map { String(format: "%.2f s", $0) } ?? "duration unknown"))")
        events.publish(.libraryChanged(LibraryChangedEvent(recordingID: r.id, change: .created)))
        return r
    }

    /// A playback that happened elsewhere (a GUI's own player): counts exactly as one here does.
    /// Saved recordings only: a preview of a pending one never counts.
    public func played(_ idOrPrefix: String) async throws(EngineError) -> Recording {
        // A whole id goes straight to the count (which tells an unknown one); a prefix is resolved.
        let id: UUID
        if let whole = UUID(uuidString: idOrPrefix) { id = whole } else { id = try resolve(idOrPrefix).id }
        do {
            let r = try await plays.count(id: id)
            events.publish(.libraryChanged(LibraryChangedEvent(recordingID: id, change: .played)))
            return r
        } catch CatalogError.notFound {
            throw .notFound(id: idOrPrefix)
        } catch CatalogError.unexpectedState(_, let state) {
            throw .invalidState(id: id, state: RecordingState(rawValue: state) ?? .missing, action: "count a play of",
                                allowed: [.ready])
        } catch {
            throw .from(error)
        }
    }

    /// The seed's Quick Play: the `limit` most played saved recordings, as the API's `RecordingList`
    /// JSON (with its newline; `total` is the page's length).
    public func topJSON(limit: Int) throws(EngineError) -> [UInt8] {
        try Self.checkLimit(limit)
        let rows = try catalogCall { try catalog.top(limit: limit) }
        return Self.listing(RecordingList(recordings: rows, total: rows.count, limit: limit, offset: 0))
    }

    private static func listing(_ list: RecordingList) -> [UInt8] {
        var bytes = [UInt8](RecordingJSON.encode(list))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The recording's waveform at its stored resolution (16-bit min/max per 256 samples). One not
    /// stored (a salvaged or adopted file, or a store that failed) is computed by decoding the file,
    /// once, and stored.
    public func waveform(_ idOrPrefix: String) async throws(EngineError) -> WaveformData {
        let r = try resolve(idOrPrefix)
        return try await attachment(of: r, name: "waveform", without: "is a silent video: it has no sound, so no waveform",
                                    stored: { try catalog.waveform(id: r.id).flatMap { try? WaveformData(dat: $0) } },
                                    make: { try Self.computeWaveform(path: $0) },
                                    store: { try catalog.storeWaveform(id: r.id, data: $0.dat()) },
                                    size: { "\($0.length) pixels" })
    }

    /// The pauses a player may skip (Skip Silence), found from the recording's waveform.
    public func silences(_ idOrPrefix: String) async throws(EngineError) -> SilenceList {
        let r = try resolve(idOrPrefix)
        return SilenceList(recordingID: r.id, silences: SilenceList.find(in: try await waveform(r.id.uuidString)))
    }

    /// How a waveform is asked for: a zoom (samples per pixel, no finer than stored) or a width in
    /// pixels to fit, and 8 or 16 bits (audiowaveform's choices).
    public struct WaveformView: Sendable {
        public var samplesPerPixel: Int?
        public var pixels: Int?
        public var eightBit: Bool
        public init(samplesPerPixel: Int? = nil, pixels: Int? = nil, eightBit: Bool = true) {
            self.samplesPerPixel = samplesPerPixel; self.pixels = pixels; self.eightBit = eightBit
        }
    }

    /// The waveform as `view` asks: `samplesPerPixel` wins over `pixels`; neither: as stored.
    public func waveform(_ idOrPrefix: String, _ view: WaveformView) async throws(EngineError) -> WaveformData {
        let stored = try await waveform(idOrPrefix)
        var zoom = stored.samplesPerPixel
        if let spp = view.samplesPerPixel {
            guard spp >= stored.samplesPerPixel else {
                throw .invalidValue(field: "samples_per_pixel", detail: "\(spp) is finer than the stored \(stored.samplesPerPixel) samples per pixel")
            }
            zoom = spp
        } else if let pixels = view.pixels {
            zoom = max(stored.samplesPerPixel, (stored.length * stored.samplesPerPixel + pixels - 1) / pixels)
        }
        let waveform = stored.resampled(samplesPerPixel: zoom)
        return view.eightBit ? waveform.eightBit() : waveform
    }

    /// The JPEG of a video recording's first frame. One not stored (a salvaged or adopted file) is
    /// made from the file's first frame, once, and stored.
    public func poster(_ idOrPrefix: String) async throws(EngineError) -> Data {
        let r = try resolve(idOrPrefix)
        guard r.type == .video else { throw .noMedia(id: r.id, detail: "is an audio recording: it has no picture, so no poster") }
        return try await attachment(of: r, name: "poster", without: "has no decodable video frame, so no poster",
                                    stored: { try catalog.poster(id: r.id) },
                                    make: { try WorkerMedia.poster(fromFile: $0) },
                                    store: { try catalog.storePoster(id: r.id, data: $0) },
                                    size: { "\($0.count) bytes" })
    }

    /// What waveform and poster share: a readable recording's stored `name`, or one made from its
    /// file (blocking, off the cooperative pool), stored for next time (a failed store only costs
    /// that). A file without the stream `make` needs is `noMedia` with `without`.
    private func attachment<T: Sendable>(of r: Recording, name: String, without: String,
                                         stored: () throws -> T?, make: @escaping @Sendable (String) throws -> T,
                                         store: (T) throws -> Void, size: (T) -> String) async throws(EngineError) -> T {
        try r.requireFile(to: "read the \(name) of")
        if let kept = try catalogCall(stored) { return kept }
        let path = try storageCall(config.dataDirectory.recordingPath(r.file))
        guard FileManager.default.fileExists(atPath: path) else { throw .fileMissing(id: r.id, file: r.file) }
        let made: T
        do {
            made = try await runBlocking { try make(path) }
        } catch MediaError.noStream {
            throw .noMedia(id: r.id, detail: without)
        } catch {
            throw .media(file: path, underlying: error)
        }
        do {
            try store(made)
        } catch {
            logger.warning("\(name) of \(r.id) made from its file but not stored: \(error)")
        }
        logger.info("\(name) of \(r.id) made from its file (\(size(made)))")
        return made
    }

    /// Capture devices: ALSA PCMs and V4L2 cameras, with the ones configured. Blocking (opens each camera).
    public func devices() async -> DeviceList {
        // runBlocking's body cannot throw here; `try?` only satisfies its signature.
        let (audio, cameras) = (try? await runBlocking { (AlsaDeviceList.captureDevices(), V4L2DeviceList.cameras()) }) ?? ([], [])
        return DeviceList(audio: audio.map(Self.wire), cameras: cameras.map(Self.wire),
                          configuredAudio: config.captureDevice, configuredCamera: config.video.device)
    }

    /// Capture's view of a microphone as the API shows it.
    static func wire(_ d: AlsaCaptureDevice) -> AudioDeviceInfo {
        AudioDeviceInfo(device: d.name, description: d.description, capabilities: d.capabilities.map { c in
            AudioDeviceInfo.Capabilities(formats: c.formats.map(\.rawValue), minRate: c.rates.lowerBound, maxRate: c.rates.upperBound,
                                         minChannels: c.channels.lowerBound, maxChannels: c.channels.upperBound)
        }, error: d.error?.description)
    }

    /// Capture's view of a camera as the API shows it.
    static func wire(_ c: V4L2Camera) -> CameraInfo {
        CameraInfo(device: c.path, name: c.card, driver: c.driver, error: c.error?.description, formats: c.formats.map { f in
            CameraInfo.Format(pixelFormat: f.fourcc, description: f.description, compressed: f.compressed,
                              sizes: f.sizes.map { CameraInfo.Size(width: $0.width, height: $0.height, fps: $0.fps) })
        })
    }

    /// Decodes the whole file once, at its own rate and channel count.
    static func computeWaveform(path: String) throws -> WaveformData { try analyze(path: path).waveform }

    /// The waveform and the EBU R128 loudness of a file's sound, from one decode.
    static func analyze(path: String, priority: MediaWorkerPool.Priority = .normal, lease: MediaWorkerLease? = nil) throws -> (waveform: WaveformData, loudness: Loudness?) {
        // Reads of 64 Ki frames: a whole file in few round trips to the worker.
        let decoder = try WorkerAudioDecoder(path: path, lease: lease, priority: priority, readFrames: 65_536)
        try decoder.setOutput(rate: decoder.sourceSampleRate, channels: decoder.sourceChannels)
        let builder = WaveformBuilder(sampleRate: decoder.sourceSampleRate, channels: decoder.sourceChannels)
        let meter = LoudnessMeter(sampleRate: decoder.sourceSampleRate, channels: decoder.sourceChannels)
        var buffer: [Int16] = []
        while let block = try decoder.read(into: &buffer) {
            buffer.withUnsafeBufferPointer {
                builder.append($0, frames: block.frames)
                meter?.add($0, frames: block.frames)
            }
        }
        return (builder.finish(), meter?.result())
    }

    /// Metadata of every saved recording (pending previews are not in the library yet), newest first.
    public func export() throws(EngineError) -> [ExportRow] {
        let rows = try catalogCall { try catalog.list(ListQuery(order: .recent, state: .ready, limit: Int.max)) }
        let transcripts = try catalogCall { try catalog.transcriptTexts() }
        let markers = try catalogCall { try catalog.allMarkers() }
        return MetadataExport.rows(rows.recordings, transcripts: transcripts, markers: markers)
    }

    public func counts() throws(EngineError) -> [String: Int] {
        let c = try catalogCall { try catalog.countsByState() }
        var out: [String: Int] = [:]
        for s in RecordingState.allCases { out[s.rawValue] = c[s] ?? 0 }
        return out
    }
}
