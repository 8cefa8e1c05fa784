// Media's operations as recd calls them: the same shapes as Media's types, done in a worker process.
// Blocking, like the FFmpeg calls they stand for: call them where those were called (off the
// cooperative pool). Errors are Media's own (FFmpegError, MediaError) or MediaWorkerError.
import Foundation
import MediaWire

/// The one-shot operations.
public enum WorkerMedia {
    public static func probe(_ path: String, lease: MediaWorkerLease? = nil) throws -> MediaInfo {
        try (lease ?? MediaWorkerLease(reading: [path])).call(WorkerOp.Probe(path: path), operation: "the probe of \(path)")
    }

    /// `MP4Finalizer.remux`.
    public static func remux(from source: String, to destination: String, streams: [Int]? = nil,
                             container: String? = nil, hidePriming: Bool = true, lease: MediaWorkerLease? = nil) throws -> RemuxResult {
        let op = WorkerOp.Remux(source: source, destination: destination, streams: streams, container: container, hidePriming: hidePriming)
        return try (lease ?? MediaWorkerLease(reading: [source], writing: [destination])).call(op, operation: "the remux of \(source)")
    }

    /// `MP4Trimmer.trim`.
    public static func trim(from source: String, to destination: String, start: Double, end: Double?,
                            chapters: [MediaChapter] = []) throws -> TrimResult {
        let op = WorkerOp.Trim(source: source, destination: destination, start: start, end: end, chapters: chapters)
        return try MediaWorkerLease(reading: [source], writing: [destination]).call(op, operation: end == nil ? "the copy of \(source) with its chapters" : "the trim of \(source)")
    }

    /// `PosterExtractor.poster`: a JPEG of the first picture.
    public static func poster(fromFile path: String, lease: MediaWorkerLease? = nil) throws -> Data {
        let worker = try lease ?? MediaWorkerLease(reading: [path])
        let operation = "the poster of \(path)"
        let connection = try worker.connection(for: operation)
        try connection.call(WorkerOp.Poster(path: path), operation: operation)
        return Data(connection.payload)
    }
}

/// `AudioFileDecoder` in a worker: the decoded blocks come back over the socket.
public final class WorkerAudioDecoder {
    public let path: String
    public let sourceSampleRate: Int
    public let sourceChannels: Int
    public let duration: Double?
    private let worker: MediaWorkerLease
    private var channels = 0
    /// Frames each `read` asks for at least (the decoder's blocks joined in the worker).
    private let readFrames: Int

    /// `readFrames`: how many frames a `read` returns at least (all that is left at the end): each
    /// read is a round trip to the worker, so a whole-file pass asks for many.
    public init(path: String, lease: MediaWorkerLease? = nil, priority: MediaWorkerPool.Priority = .normal,
                readFrames: Int = 8192) throws {
        worker = try lease ?? MediaWorkerLease(priority, reading: [path])
        self.path = path
        self.readFrames = readFrames
        let format = try worker.call(WorkerOp.OpenDecoder(path: path), operation: "opening \(path)")
        sourceSampleRate = format.sampleRate
        sourceChannels = format.channels
        duration = format.duration
    }

    public func setOutput(rate: Int, channels: Int) throws {
        try worker.call(WorkerOp.DecoderSetOutput(rate: rate, channels: channels), operation: "decoding \(path)")
        self.channels = channels
    }

    public func seek(to seconds: Double) throws {
        try worker.call(WorkerOp.DecoderSeek(seconds: seconds), operation: "a seek in \(path)")
    }

    /// As `AudioFileDecoder.read`, the decoder's next blocks joined up to at least `readFrames` frames
    /// (`start` is the first one's) into `buffer` (grown to fit, never shrunk).
    public func read(into buffer: inout [Int16]) throws -> (start: Double, frames: Int)? {
        let connection = try worker.connection(for: "decoding \(path)")
        guard let block = try connection.call(WorkerOp.DecoderRead(atLeast: readFrames), operation: "decoding \(path)") else { return nil }
        let samples = block.frames * channels
        guard connection.payload.count == samples * MemoryLayout<Int16>.size else {
            throw MediaWorkerError.failed("media worker: a block of \(connection.payload.count) bytes for \(block.frames) frames of \(channels) channels")
        }
        if buffer.count < samples { buffer = [Int16](repeating: 0, count: samples) }
        buffer.withUnsafeMutableBytes { out in
            connection.payload.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        return (block.start, block.frames)
    }
}

/// `AudioFileWriter` in a worker: the crash-safe fragmented file is written there.
public final class WorkerAudioWriter {
    public let path: String
    public let encoding: AudioEncoding
    private let worker: MediaWorkerLease
    /// Whether the lease is this writer's own (given back when the file is finished) or its caller's.
    private let ownsLease: Bool
    private let onOutputWritten: (() -> Void)?
    private var finished = false
    public private(set) var samplesWritten: Int64 = 0

    /// `onOutputWritten` is called on the writing thread each time a fragment has reached the file.
    /// `lease`: a worker shared with the caller, who keeps it (an import's); without one the writer
    /// takes a take's own and gives it back at `finish()`.
    public init(path: String, encoding: AudioEncoding, lease: MediaWorkerLease? = nil, onOutputWritten: (() -> Void)? = nil) throws {
        worker = try lease ?? MediaWorkerLease(forTake: [], writing: [path])
        ownsLease = lease == nil
        self.path = path
        self.encoding = encoding
        self.onOutputWritten = onOutputWritten
        try call(WorkerOp.OpenWriter(path: path, encoding: encoding))
    }

    public func append(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        precondition(samples.count >= frames * encoding.channels)
        guard !finished else { throw MediaWorkerError.failed("writing \(path): the file was already finished") }
        samplesWritten = try call(WorkerOp.WriterAppend(frames: frames),
                                  sending: UnsafeRawBufferPointer(start: samples.baseAddress, count: frames * encoding.channels * MemoryLayout<Int16>.size))
    }

    public func flush() throws {
        guard !finished else { return }
        try call(WorkerOp.WriterFlush())
    }

    /// Writes the file's end. Its own worker goes back to the pool then, done or not (the finalizer
    /// that follows finds it idle).
    public func finish() throws {
        guard !finished else { return }
        finished = true
        defer { if ownsLease { worker.release() } }
        samplesWritten = try call(WorkerOp.WriterFinish())
    }

    @discardableResult
    private func call<Op: WorkerOperation>(_ op: Op, sending: UnsafeRawBufferPointer? = nil) throws -> Op.Reply {
        try worker.call(op, sending: sending, onOutput: onOutputWritten, operation: "writing \(path)")
    }
}

/// `ContentHash` (SHA-256) in an upload's worker (`MediaWorkerPool.Use.upload`), started at the
/// first bytes (not where the hash is made: an upload's first lines run on the event loop). The
/// import that follows does its jobs in the same worker (`worker`), which ends with it.
public final class WorkerContentHash {
    public private(set) var worker: MediaWorkerLease?
    /// The upload's own folder: its worker's sandbox.
    private let folder: String

    public init(folder: String) { self.folder = folder }

    private func lease() throws -> MediaWorkerLease {
        if worker == nil { worker = try MediaWorkerLease(forUploadIn: folder) }
        return worker!
    }

    public func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        try lease().call(WorkerOp.HashUpdate(), sending: bytes, operation: "hashing an upload")
    }

    /// The digest as 64 lower-case hex digits. Call once.
    public func hex() throws -> String {
        try lease().call(WorkerOp.HashFinish(), operation: "hashing an upload")
    }
}

/// `CapturedPCMConverter` in a worker: called on the capture thread, one round trip a period (tens
/// of microseconds; the device's buffer holds far more).
public final class WorkerPCMConverter {
    public let input: (format: CapturedSampleFormat, rate: Int, channels: Int)
    public let output: (rate: Int, channels: Int)
    private let worker: MediaWorkerLease
    private var out: [Int16] = []

    public init(from format: CapturedSampleFormat, rate: Int, channels: Int, toRate: Int, toChannels: Int) throws {
        worker = try MediaWorkerLease(forTake: [], writing: [])   // no file at all
        input = (format, rate, channels)
        output = (toRate, toChannels)
        try worker.call(WorkerOp.OpenConverter(format: format, rate: rate, channels: channels, toRate: toRate, toChannels: toChannels),
                        operation: "converting captured sound")
    }

    /// As `CapturedPCMConverter.convert`: the result is valid until the next call.
    public func convert(_ samples: UnsafeRawPointer, frames: Int) throws -> UnsafeBufferPointer<Int16> {
        let bytes = frames * input.channels * input.format.bytesPerSample
        let connection = try worker.connection(for: "converting captured sound")
        try connection.call(WorkerOp.Convert(frames: frames), sending: UnsafeRawBufferPointer(start: samples, count: bytes),
                            operation: "converting captured sound")
        let count = connection.payload.count / MemoryLayout<Int16>.size
        if out.count < count { out = [Int16](repeating: 0, count: count) }
        out.withUnsafeMutableBytes { o in connection.payload.withUnsafeBytes { if $0.count > 0 { o.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } } }
        return out.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0[0..<count]) }
    }
}

/// `AudioFilterGraph` in a worker (a lease the caller keeps): frames out for frames in.
public final class WorkerAudioFilter {
    public let description: String
    public let channels: Int
    private let worker: MediaWorkerLease

    public init(description: String, rate: Int, channels: Int, lease: MediaWorkerLease) throws {
        worker = lease
        self.description = description
        self.channels = channels
        try worker.call(WorkerOp.OpenFilter(description: description, rate: rate, channels: channels), operation: "filtering (\(description))")
    }

    /// The frames the graph gave out for `frames` frames in (fewer or more: filters look ahead).
    public func process(_ samples: UnsafeBufferPointer<Int16>, frames: Int) throws -> [Int16] {
        precondition(samples.count >= frames * channels)
        let connection = try worker.connection(for: "filtering (\(description))")
        try connection.call(WorkerOp.Filter(frames: frames), sending: UnsafeRawBufferPointer(start: samples.baseAddress, count: frames * channels * MemoryLayout<Int16>.size),
                            operation: "filtering (\(description))")
        return Self.samples(connection.payload)
    }

    /// What the graph still held at the end of its input.
    public func drain() throws -> [Int16] {
        let connection = try worker.connection(for: "filtering (\(description))")
        try connection.call(WorkerOp.FilterDrain(), operation: "filtering (\(description))")
        return Self.samples(connection.payload)
    }

    private static func samples(_ payload: [UInt8]) -> [Int16] {
        let count = payload.count / MemoryLayout<Int16>.size
        guard count > 0 else { return [] }
        return [Int16](unsafeUninitializedCapacity: count) { out, initialized in
            payload.withUnsafeBytes { _ = memcpy(out.baseAddress!, $0.baseAddress!, count * MemoryLayout<Int16>.size) }
            initialized = count
        }
    }
}

/// `VideoFileWriter` in a worker. Its two users (the audio encoder thread, the video thread) take
/// turns on the one connection, as they took turns on the muxer's lock.
public final class WorkerVideoWriter: @unchecked Sendable {
    public let path: String
    public let video: VideoEncoding
    public let camera: CameraFrameFormat
    /// Channels of the sound (0 for a silent video).
    public let audioChannels: Int
    private let worker: MediaWorkerLease
    private let onOutputWritten: (() -> Void)?
    private let lock = NSLock()
    // Guarded by `lock`.
    private var written: Int64 = 0
    private var skipped: Int64 = 0
    private var lastPTS: Int64 = .min
    private var closed = false
    /// The memory file camera frames go to the worker in (`SharedMemory`), made at the first frame
    /// with its size. nil before, or when none could be made (frames then go as payloads).
    private var frames: SharedMemory?
    private var framesUnshared = false

    public init(path: String, video: VideoEncoding, camera: CameraFrameFormat, audio: AudioEncoding?,
                onOutputWritten: (() -> Void)? = nil) throws {
        worker = try MediaWorkerLease(forTake: [], writing: [path])
        self.path = path; self.video = video; self.camera = camera
        audioChannels = audio?.channels ?? 0
        self.onOutputWritten = onOutputWritten
        try call(WorkerOp.OpenVideoWriter(path: path, video: video, camera: camera, audio: audio))
    }

    /// Frames encoded so far. Any thread.
    public var framesWritten: Int64 { lock.withLock { written } }
    /// Frames refused because their time was not after the previous one's. Any thread.
    public var framesSkipped: Int64 { lock.withLock { skipped } }

    public func appendAudio(interleaved samples: UnsafeBufferPointer<Int16>, frames: Int) throws {
        guard audioChannels > 0 else { return }
        precondition(samples.count >= frames * audioChannels)
        try call(WorkerOp.VideoAppendAudio(frames: frames),
                 sending: UnsafeRawBufferPointer(start: samples.baseAddress, count: frames * audioChannels * MemoryLayout<Int16>.size))
    }

    public func finishAudio() throws { if audioChannels > 0 { try call(WorkerOp.VideoFinishAudio()) } }

    public func flush() throws {
        guard !lock.withLock({ closed }) else { return }
        try call(WorkerOp.VideoFlush())
    }

    /// As `VideoFileWriter.appendVideo`: false when the frame was skipped; `poster` gets the frame as
    /// a JPEG when asked for. Throws `FrameRejected` for a frame that does not convert.
    @discardableResult
    public func appendVideo(_ bytes: UnsafeRawBufferPointer, pts: Int64, poster: ((Data) -> Void)? = nil) throws -> Bool {
        var jpeg: Data?
        let appended: Bool = try lock.withLock {
            let connection = try worker.connection(for: "writing \(path)")
            // The worker reads the memory file before replying, and the next frame is written after the reply.
            let shared = bytes.isEmpty ? nil : try sharedFrames(for: bytes.count, connection)
            shared?.bytes.copyMemory(from: bytes)
            let op = WorkerOp.VideoAppendFrame(pts: pts, poster: poster != nil, shared: shared == nil ? 0 : bytes.count)
            if try connection.call(op, sending: shared == nil ? bytes : nil, onOutput: onOutputWritten, operation: "writing \(path)") {
                written += 1
                lastPTS = pts
                if poster != nil && !connection.payload.isEmpty { jpeg = Data(connection.payload) }
                return true
            }
            skipped += 1
            return false
        }
        if let jpeg { poster?(jpeg) }
        return appended
    }

    /// The memory file for a frame of `count` bytes, made and passed to the worker at the first
    /// frame, and made anew (twice as large) for a larger frame (a compressed camera's frames vary);
    /// nil when frames go as payloads, as when no memory file can be made (a kernel or a sandbox
    /// without memfd_create: the recording goes on as before). Called under `lock`.
    private func sharedFrames(for count: Int, _ connection: MediaWorkerConnection) throws -> SharedMemory? {
        if let frames, count <= frames.bytes.count { return frames }
        guard !framesUnshared, count > 0 else { return nil }
        let page = max(4096, sysconf(Int32(_SC_PAGESIZE)))
        let wanted = max(count, 2 * (frames?.bytes.count ?? 0))
        guard let shared = try? SharedMemory(creating: "recd-camera-frames", bytes: (wanted + page - 1) / page * page) else {
            framesUnshared = true
            return nil
        }
        defer { shared.closeDescriptor() }   // the worker has its own once the call returns
        do {
            try connection.call(WorkerOp.VideoShareFrames(bytes: shared.bytes.count), passing: shared.descriptor, operation: "writing \(path)")
        } catch let error as MediaWorkerError {
            guard case .failed = error else { throw error }   // the worker died: that ends the recording
            // It could not map the file: payloads, as without memfd.
            framesUnshared = true
            frames = nil
            return nil
        }
        frames = shared
        return shared
    }

    /// Where the picture ends (`VideoEncoding.timeBase`): as `VideoFileWriter.videoEnd`.
    public var videoEnd: Int64? {
        let last = lock.withLock { lastPTS }
        guard last != .min else { return nil }
        return last + Int64((Double(VideoEncoding.timeBase.den) / max(1, video.fps)).rounded())
    }

    public func finishVideo() throws { try call(WorkerOp.VideoFinishFrames()) }

    /// Writes the trailer and closes the file. The worker goes back to the pool then, done or not
    /// (the finalizer that follows finds it idle).
    public func close() throws {
        guard !lock.withLock({ closed }) else { return }
        defer {
            lock.withLock { closed = true; frames = nil }   // (the worker unmaps its side at its reset)
            worker.release()
        }
        try call(WorkerOp.VideoClose())
    }

    /// `onOutputWritten` is called under `lock`, as `VideoFileWriter` called it under its muxer's.
    private func call<Op: WorkerOperation>(_ op: Op, sending: UnsafeRawBufferPointer? = nil) throws {
        _ = try lock.withLock { try worker.call(op, sending: sending, onOutput: onOutputWritten, operation: "writing \(path)") }
    }
}
