// Import: a media file made elsewhere, received as bytes, stored as a recording of the library.
import Catalog
import Foundation
import Logging
import MediaWire
import MediaWorker
import Metering
import RecdAPI
import Storage

/// What an import was sent with, besides its bytes.
public struct ImportRequest: Sendable {
    /// The file's name where it came from (for the title and the messages); no path.
    public var name: String
    /// Title, notes, purpose given with it (validated).
    public var metadata: MetadataChange
    /// The file's modification time where it came from (the created time when its tags have none).
    public var modified: Date?
    /// What a file that is encoded becomes (nil: recd's `--default-format`); a file kept as it is keeps
    /// its own.
    public var format: RecordingFormat?
    public init(name: String, metadata: MetadataChange, modified: Date?, format: RecordingFormat? = nil) {
        self.name = name; self.metadata = metadata; self.modified = modified; self.format = format
    }
}

/// Turns an uploaded file into a `ready` recording, with the crash safety of recordings
/// (`FileReplacement`): the stored file is made in `.uploads/`, moved beside its final name, committed
/// with its row (and the upload's content hash), then renamed into place. Blocking: run on
/// `BlockingPool`. What is kept as it is and what is encoded:
/// - AAC audio in MP4/QuickTime, and Opus or FLAC audio in any container (Ogg, Matroska/WebM, native
///   FLAC, MP4): remuxed into `audio_<UUID>.m4a` (packets as they are), the library's three formats;
/// - H.264 video with AAC sound: remuxed into `video_<UUID>.mov`;
/// - ALAC: encoded to FLAC (lossless to lossless: the same samples, in a format of the library);
/// - any other audio FFmpeg decodes (WAV, MP3, Ogg Vorbis, …): encoded to the format asked for (else
///   `--default-format`) at the library's rate, mono or stereo as the source (more channels are mixed
///   to two).
struct Importer {
    let catalog: Catalog
    let data: DataDirectory
    let config: EngineConfiguration
    let logger: Logger

    enum Plan: Equatable {
        case remuxAudio(stream: Int, format: RecordingFormat)
        case remuxVideo(video: Int, audio: Int)
        /// To the given format, or to the one asked for (else the default) when nil.
        case encodeAudio(RecordingFormat?)
    }

    /// What to do with a file of this shape, or why it cannot be imported.
    static func plan(_ info: MediaInfo, name: String) throws(EngineError) -> Plan {
        let audio = info.streams.indices.filter { info.streams[$0].kind == "audio" }
        let video = info.streams.indices.filter { info.streams[$0].kind == "video" && !info.streams[$0].isCoverArt }
        guard let firstAudio = audio.first else {
            throw .unsupportedMedia(name: name, detail: video.isEmpty ? "it holds no audio or video stream"
                                    : "it has no audio stream (recd keeps recordings with sound; a silent video cannot be imported)")
        }
        let mp4 = info.formatName.split(separator: ",").contains { ["mov", "mp4", "m4a"].contains(String($0)) }
        if let v = video.first {
            let audioCodec = info.streams[firstAudio].codec, videoCodec = info.streams[v].codec
            guard videoCodec == "h264", audioCodec == "aac" else {
                throw .unsupportedMedia(name: name, detail: "it is a \(videoCodec) video with \(audioCodec) sound; recd keeps videos as H.264 with AAC (convert it first, e.g. ffmpeg -i IN -c:v libx264 -c:a aac OUT.mov)")
            }
            return .remuxVideo(video: v, audio: firstAudio)
        }
        let codec = info.streams[firstAudio].codec
        if mp4 && codec == "aac" { return .remuxAudio(stream: firstAudio, format: .aac) }
        if let kept = RecordingFormat(rawValue: codec), kept != .aac { return .remuxAudio(stream: firstAudio, format: kept) }
        if codec == "alac" { return .encodeAudio(.flac) }
        return .encodeAudio(nil)
    }

    /// Title from the tags, else the file's name without its extension: control characters become
    /// spaces, cut to the title limit. Nil when nothing usable is left (then the automatic title).
    static func title(tags: [String: String], name: String) -> String? {
        let base = (name as NSString).deletingPathExtension
        for candidate in [tags["title"], base] {
            guard let raw = candidate else { continue }
            let cleaned = String(String.UnicodeScalarView(raw.unicodeScalars.map {
                MetadataRules.firstControl(in: String($0), allowingNewlines: false) == nil ? $0 : " "
            })).split(whereSeparator: { $0 == " " }).joined(separator: " ")
            if !cleaned.isEmpty { return String(cleaned.prefix(MetadataLimits.titleMaxCharacters)).trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    /// Created time from the tags (`creation_time`, `date`: ISO 8601 or a plain date), else `modified`.
    static func created(tags: [String: String], modified: Date?) -> Date? {
        for key in ["creation_time", "date", "com.apple.quicktime.creationdate"] {
            guard let value = tags[key]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { continue }
            let full = ISO8601DateFormatter()
            full.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let d = full.date(from: value) { return d }
            full.formatOptions = [.withInternetDateTime]
            if let d = full.date(from: value) { return d }
            let day = DateFormatter()
            day.locale = Locale(identifier: "en_US_POSIX")
            day.timeZone = TimeZone(identifier: "UTC")
            for format in ["yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd", "yyyy"] {
                day.dateFormat = format
                if let d = day.date(from: value) { return d }
            }
        }
        return modified
    }

    /// `worker`: the upload's (it hashed the bytes as they came), or nil for a new one.
    func run(upload: String, contentHash: String, worker given: MediaWorkerLease?, request: ImportRequest) throws(EngineError) -> Recording {
        let name = request.name
        if let existing = try catalogCall({ try catalog.recording(withContentHash: contentHash) }) {
            throw .duplicate(name: name, existing: existing)
        }
        // The upload's worker, for every job of this import: its sandbox is the import's own folder
        // (the upload's), so a file that takes over a parser can read or write no recording and no
        // other import; it ends with the import (MediaWorkerPool.Use.upload).
        let folder = (upload as NSString).deletingLastPathComponent
        let worker: MediaWorkerLease
        do { worker = try given ?? MediaWorkerLease(forUploadIn: folder) } catch { throw .media(file: name, underlying: error) }
        let info = try probeUpload(upload, name: name, lease: worker)
        let plan = try Self.plan(info, name: name)
        let format: RecordingFormat = switch plan {
        case .remuxAudio(_, let kept): kept
        case .remuxVideo: .aac
        case .encodeAudio(let to): to ?? request.format ?? config.defaultFormat
        }
        let type: RecordingType = if case .remuxVideo = plan { .video } else { .audio }
        let id = UUID()
        let relative = DataDirectory.relativePath(id: id, type: type)
        let finalPath = data.absolute(relative)
        let made = (folder as NSString).appendingPathComponent("\(id.uuidString).\(type.fileExtension)")
        defer { try? FileOps.remove(made) }
        var (waveform, loudness) = try store(upload, plan, format: format, to: made, container: finalPath, name: name, lease: worker)
        let stored = try? WorkerMedia.probe(made, lease: worker)
        // A remuxed file's waveform and loudness are read from its sound (an encoded one's were
        // measured on the way).
        if waveform == nil, let analysis = try? Library.analyze(path: made, lease: worker) { (waveform, loudness) = analysis }
        let poster = type == .video ? try? WorkerMedia.poster(fromFile: made, lease: worker) : nil
        let created = Self.created(tags: info.tags, modified: request.modified) ?? Date()
        var r = Recording(id: id, type: type, state: .ready, title: "", notes: "", purpose: nil, createdAt: created,
                          duration: stored?.duration, sizeBytes: FileOps.size(made), file: relative, playCount: 0,
                          lastPlayedAt: nil, recovered: false, droppedFrames: 0, loudness: loudness, format: format, source: .import)
        var change = request.metadata
        if change.title == nil { change.title = .some(Self.title(tags: info.tags, name: name)) }
        MetadataRules.apply(change, to: &r, timeZone: config.timeZone)

        // The commit, as a trim's: beside the final name, journaled with the row, renamed.
        return try storageCall(FileReplacement.insert(r, from: made, name: name, waveform: waveform?.dat(), poster: poster,
                                                      contentHash: contentHash, catalog: catalog, data: data, logger: logger))
    }

    /// What the upload holds, or why it is not a file recd can import.
    private func probeUpload(_ upload: String, name: String, lease worker: MediaWorkerLease) throws(EngineError) -> MediaInfo {
        do { return try WorkerMedia.probe(upload, lease: worker) } catch {
            switch error {
            case MediaError.formatRefused(let format, _):
                throw .unsupportedMedia(name: name, detail: "it is \(format), a format that names other files or that recd does not read; recd imports only media files that hold their own sound")
            case let e as FFmpegError:
                throw .unsupportedMedia(name: name, detail: "it is not a media file FFmpeg can read (\(e.message))")
            case let e as MediaWorkerError:
                throw .media(file: name, underlying: e)
            default:
                throw .unsupportedMedia(name: name, detail: "it is not a media file FFmpeg can read")
            }
        }
    }

    /// Makes the file to store, `made`, from the upload as `plan` says (`container`: the name whose
    /// extension says the container). An encoded file's waveform and loudness come with it.
    private func store(_ upload: String, _ plan: Plan, format: RecordingFormat, to made: String, container: String, name: String,
                       lease worker: MediaWorkerLease) throws(EngineError) -> (WaveformData?, Loudness?) {
        do {
            switch plan {
            case .remuxAudio(let stream, _):
                _ = try WorkerMedia.remux(from: upload, to: made, streams: [stream], container: container, hidePriming: false, lease: worker)
            case .remuxVideo(let video, let audio):
                _ = try WorkerMedia.remux(from: upload, to: made, streams: [video, audio], container: container, hidePriming: false, lease: worker)
            case .encodeAudio:
                let (waveform, loudness) = try encode(upload, to: made, format: format, lease: worker)
                return (waveform, loudness)
            }
            return (nil, nil)
        } catch {
            throw .fromMediaJob(error, writing: made) { error in
                if case MediaError.noStream = error { return .unsupportedMedia(name: name, detail: "it has no audio stream that decodes") }
                return .unsupportedMedia(name: name, detail: "it could not be read to the end (\(error))")
            }
        }
    }

    /// Decodes any audio and encodes it as recordings are (`format`, fragmented, then finalized),
    /// building the waveform of what is written and measuring its loudness. Returns them.
    private func encode(_ source: String, to destination: String, format: RecordingFormat, lease worker: MediaWorkerLease) throws -> (WaveformData, Loudness?) {
        // Reads of 64 Ki frames: a whole file in few round trips to the worker.
        let decoder = try WorkerAudioDecoder(path: source, lease: worker, readFrames: 65_536)
        let channels = min(2, max(1, decoder.sourceChannels))
        try decoder.setOutput(rate: config.sampleRate, channels: channels)
        let fragmented = destination + ".fragmented"
        defer { try? FileOps.remove(fragmented) }
        let writer = try WorkerAudioWriter(path: fragmented, encoding: config.encoding(format, channels: channels), lease: worker)
        let builder = WaveformBuilder(sampleRate: config.sampleRate, channels: channels)
        let meter = LoudnessMeter(sampleRate: config.sampleRate, channels: channels)
        var buffer: [Int16] = []
        do {
            while let block = try decoder.read(into: &buffer) {
                try buffer.withUnsafeBufferPointer {
                    try writer.append(interleaved: $0, frames: block.frames)
                    builder.append($0, frames: block.frames)
                    meter?.add($0, frames: block.frames)
                }
            }
            try writer.finish()
        } catch {
            try? writer.finish()
            throw error
        }
        guard writer.samplesWritten > 0 else { throw MediaError.noStream(kind: "audio", file: source) }
        _ = try WorkerMedia.remux(from: fragmented, to: destination, container: destination, lease: worker)
        return (builder.finish(), meter?.result())
    }
}
