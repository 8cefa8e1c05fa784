// The worker's side: `recd-media PARENT_PID PRIORITY LEVEL [DIR…]` with its socket as descriptor 3.
// It enters its sandbox, then answers recd's requests one by one with Media's types until recd
// closes the socket (or dies: the kernel kills the worker then, see below). docs/design.md, "One
// FFmpeg boundary".
import CProcessShim
import Foundation
import Logging
import Media
import MediaWire

public enum MediaWorkerProcess {
    /// Serves requests on descriptor 3 until it closes; never returns. `arguments`: recd's pid, the
    /// priority, the log level, then the directories the worker may use (`WorkerSandbox`; none: no
    /// sandbox, as in the unit tests). `handler`: the log lines' form, for a label at a level.
    public static func run(arguments: [String], handler: @escaping @Sendable (String, Logger.Level) -> any LogHandler) -> Never {
        guard arguments.count >= 3, let parent = pid_t(arguments[0]), fcntl(3, F_GETFD) >= 0 else {
            FileHandle.standardError.write(Data("recd-media is started by recd itself (it serves recd's media requests on descriptor 3)\n".utf8))
            exit(64)
        }
        if arguments[1] == "background" {
            // SCHED_IDLE (5 on Linux) for this process's only thread: runs on CPU time nothing else wants.
            var param = sched_param(sched_priority: 0)
            if sched_setscheduler(0, 5, &param) != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
        }
        // SIGKILL when recd dies (kill -9 included), so no worker goes on writing a file that
        // recd's next start recovers; checked after the call too, in case recd died before it.
        _ = recd_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(0) }
        // recd finishes a recording when it is stopped (systemd's SIGTERM to the whole unit, Ctrl-C to
        // a terminal's process group): the worker must outlive that and ends when recd closes it.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        let level = Logger.Level(rawValue: arguments[2]) ?? .info
        let logger = Logger(label: "recd.media-worker") { handler($0, level) }
        FFmpegLog.route(to: logger)
        let writable = Array(arguments.dropFirst(3))
        if !writable.isEmpty {
            do { try WorkerSandbox.enter(writable: writable) } catch {
                // recd logs the kernel's lack of Landlock once (MediaWorkerPool); anything else is a
                // bug of the rules, and a worker without its sandbox must not serve.
                if case WorkerSandbox.Failure.unsupported = error {} else {
                    logger.error("media worker: \(error)")
                    _exit(70)
                }
            }
        }
        var server = WorkerServer()
        var payload: [UInt8] = []
        let encoder = JSONEncoder(), decoder = JSONDecoder()
        while true {
            let request: WorkerRequest
            var descriptor: Int32?
            do {
                let header = try WireIO.read(3, payload: &payload, descriptor: &descriptor)
                request = try WorkerCoding.decodeRequest(header, json: decoder)
            } catch {
                _exit(0)   // recd closed the socket (the worker is no longer wanted) or broke the protocol
            }
            var out: [UInt8] = []
            let reply = server.handle(request, payload: payload, descriptor: descriptor, out: &out)
            do {
                let header = try WorkerCoding.encode(reply, json: encoder)
                try out.withUnsafeBytes { try WireIO.write(3, header: header, payload: $0) }
            } catch {
                _exit(0)
            }
        }
    }
}

/// The objects a worker holds between requests, and what each request does with them.
public struct WorkerServer {
    private var decoder: AudioFileDecoder?
    private var writer: AudioFileWriter?
    private var hash: ContentHash?
    private var converter: CapturedPCMConverter?
    private var video: VideoFileWriter?
    /// The memory file the video writer's camera frames come in (`videoShareFrames`).
    private var sharedFrames: SharedMemory?
    private var pcm: [Int16] = []
    /// A decoding error met after some blocks of a read were joined: the next read's answer.
    private var decoderFailure: (any Error)?
    /// The channel count the decoder's output was set to.
    private var outputChannels = 1
    /// Counts `onOutputWritten` calls of the writer during one request.
    private let outputs = OutputCounter()

    public init() {}

    final class OutputCounter: @unchecked Sendable { var count = 0 }

    /// `descriptor`: one passed with the request (only `videoShareFrames` takes one); closed here
    /// whatever the request.
    public mutating func handle(_ request: WorkerRequest, payload: [UInt8], descriptor: Int32? = nil, out: inout [UInt8]) -> WorkerReply {
        defer { if let descriptor { close(descriptor) } }
        if case .reset = request {
            decoder = nil; writer = nil; hash = nil; converter = nil; video = nil; sharedFrames = nil; pcm = []; decoderFailure = nil
            return WorkerReply()
        }
        do { return try perform(request, payload: payload, descriptor: descriptor, out: &out) } catch {
            return WorkerReply(failure: WorkerFailure(error))
        }
    }

    private mutating func perform(_ request: WorkerRequest, payload: [UInt8], descriptor: Int32?, out: inout [UInt8]) throws -> WorkerReply {
        var reply = WorkerReply()
        switch request {
        case .reset:
            break
        case .probe(let path):
            reply.info = try MediaProbe.probe(path)
        case .remux(let source, let destination, let streams, let container, let hidePriming):
            reply.remux = try MP4Finalizer.remux(from: source, to: destination, streams: streams,
                                                 container: container, hidePriming: hidePriming)
        case .trim(let source, let destination, let start, let end):
            reply.trim = try MP4Trimmer.trim(from: source, to: destination, start: start, end: end)
        case .poster(let path):
            out = [UInt8](try PosterExtractor.poster(fromFile: path))
        case .hashUpdate:
            if hash == nil { hash = try ContentHash() }
            payload.withUnsafeBytes { hash!.update($0) }
        case .hashFinish:
            reply.hex = try (hash ?? ContentHash()).hex()
            hash = nil
        case .openDecoder(let path):
            decoder = nil
            decoderFailure = nil
            let d = try AudioFileDecoder(path: path)
            decoder = d
            reply.decoder = .init(sampleRate: d.sourceSampleRate, channels: d.sourceChannels, duration: d.duration)
        case .decoderSetOutput(let rate, let channels):
            try openDecoder().setOutput(rate: rate, channels: channels)
            outputChannels = channels
        case .decoderSeek(let seconds):
            decoderFailure = nil
            try openDecoder().seek(to: seconds)
        case .decoderRead(let atLeast):
            let decoder = try openDecoder()
            if let failed = decoderFailure {
                decoderFailure = nil
                throw failed
            }
            var joined: WorkerReply.Block?
            while (joined?.frames ?? 0) < max(1, atLeast) {
                let next: (start: Double, frames: Int)?
                do { next = try decoder.read(into: &pcm) } catch {
                    // What was decoded before the failure goes first (as it did block by block); the
                    // error answers the next read.
                    guard joined != nil else { throw error }
                    decoderFailure = error
                    break
                }
                guard let block = next else { break }
                if joined == nil {
                    joined = .init(start: block.start, frames: 0)
                    out.reserveCapacity(max(atLeast, block.frames) * outputChannels * MemoryLayout<Int16>.size)
                }
                joined!.frames += block.frames
                // Only the block's samples go back (the buffer is kept at its largest).
                let bytes = block.frames * outputChannels * MemoryLayout<Int16>.size
                pcm.withUnsafeBytes { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<bytes])) }
            }
            reply.block = joined
        case .openWriter(let path, let encoding):
            writer = nil
            let counter = outputs
            writer = try AudioFileWriter(path: path, encoding: encoding) { counter.count += 1 }
        case .writerAppend(let frames):
            let w = try openWriter()
            try Self.withSamples(payload, frames: frames, channels: w.encoding.channels) { try w.append(interleaved: $0, frames: frames) }
            reply.samplesWritten = w.samplesWritten
        case .writerFlush:
            try openWriter().flush()
        case .writerFinish:
            let w = try openWriter()
            try w.finish()
            reply.samplesWritten = w.samplesWritten
        case .openConverter(let format, let rate, let channels, let toRate, let toChannels):
            converter = nil
            converter = try CapturedPCMConverter(from: format, rate: rate, channels: channels, toRate: toRate, toChannels: toChannels)
        case .convert(let frames):
            guard let converter else { throw MediaWorkerError.failed("media worker: no converter is open") }
            guard frames >= 0, payload.count >= frames * converter.input.channels * converter.input.format.bytesPerSample else {
                throw MediaWorkerError.failed("media worker: \(payload.count) bytes for \(frames) frames")
            }
            let converted = try payload.withUnsafeBytes { try converter.convert($0.baseAddress!, frames: frames) }
            out = [UInt8](UnsafeRawBufferPointer(converted))
        case .openVideoWriter(let path, let encoding, let camera, let audio):
            video = nil
            sharedFrames = nil
            let counter = outputs
            video = try VideoFileWriter(path: path, video: encoding, camera: camera, audio: audio) { counter.count += 1 }
        case .videoAppendAudio(let frames):
            let v = try openVideo()
            try Self.withSamples(payload, frames: frames, channels: v.audioChannels) { try v.appendAudio(interleaved: $0, frames: frames) }
        case .videoFinishAudio:
            try openVideo().finishAudio()
        case .videoFlush:
            try openVideo().flush()
        case .videoShareFrames(let bytes):
            guard let descriptor else { throw MediaWorkerError.failed("media worker: no memory file came with videoShareFrames") }
            sharedFrames = nil
            sharedFrames = try SharedMemory(mapping: descriptor, bytes: bytes)
        case .videoAppendFrame(let pts, let wantsPoster, let shared):
            var poster: Data?
            let video = try openVideo()
            let append = { (raw: UnsafeRawBufferPointer) in
                try video.appendVideo(raw, pts: pts, poster: wantsPoster ? { poster = $0 } : nil)
            }
            if shared > 0 {
                guard let sharedFrames, shared <= sharedFrames.bytes.count else {
                    throw MediaWorkerError.failed("media worker: a frame of \(shared) bytes in a memory file of \(sharedFrames?.bytes.count ?? 0)")
                }
                reply.appended = try append(UnsafeRawBufferPointer(rebasing: sharedFrames.bytes[0..<shared]))
            } else {
                reply.appended = try payload.withUnsafeBytes(append)
            }
            if let poster { out = [UInt8](poster) }
        case .videoFinishFrames:
            try openVideo().finishVideo()
        case .videoClose:
            try openVideo().close()
        }
        if outputs.count > 0 {
            reply.outputsWritten = outputs.count
            outputs.count = 0
        }
        return reply
    }

    /// `payload` as the interleaved S16 samples of `frames` frames; a payload too short for them is an
    /// error of that request (a crash here would end a recording's worker).
    private static func withSamples(_ payload: [UInt8], frames: Int, channels: Int,
                                    _ body: (UnsafeBufferPointer<Int16>) throws -> Void) throws {
        guard frames >= 0, payload.count >= frames * channels * MemoryLayout<Int16>.size else {
            throw MediaWorkerError.failed("media worker: \(payload.count) bytes for \(frames) frames of \(channels) channels")
        }
        try payload.withUnsafeBytes { try body($0.bindMemory(to: Int16.self)) }
    }

    private func openDecoder() throws -> AudioFileDecoder {
        guard let decoder else { throw MediaWorkerError.failed("media worker: no decoder is open") }
        return decoder
    }

    private func openVideo() throws -> VideoFileWriter {
        guard let video else { throw MediaWorkerError.failed("media worker: no video writer is open") }
        return video
    }

    private func openWriter() throws -> AudioFileWriter {
        guard let writer else { throw MediaWorkerError.failed("media worker: no writer is open") }
        return writer
    }
}
