// The worker's side: `recd-media PARENT_PID VERSION PRIORITY LEVEL [--one-job | --take DIR… | --library DIR… | DIR…]`
// with its socket as descriptor 3.
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
        _ = recd_refuse_exec_gain(1)   // FFmpeg's code is static: no memory need be both written and run
        let level = Logger.Level(rawValue: arguments[2]) ?? .info
        let logger = Logger(label: "recd.media-worker") { handler($0, level) }
        FFmpegLog.route(to: logger)
        // `--one-job`: a library job's worker, confined to its job's files by its first request
        // (`WorkerOp.Confine`). `--take` or `--library` and folders: a take's worker or a library
        // worker, confined to them now and each of its jobs to that job's files in a process forked
        // for it (`WorkerServer`); the two differ only in their folders (and in ps, to a person).
        // Folders alone: an upload's worker, confined to them now.
        let mode = arguments.dropFirst(3).first
        let oneJob = mode == "--one-job", forks = mode == "--take" || mode == "--library"
        let writable = oneJob ? [] : Array(arguments.dropFirst(forks ? 4 : 3))
        // Read while /proc is still open to it: a take's job processes are walled in after it closed.
        let mapped = forks ? WorkerSandbox.mappedDirectories() : nil
        if oneJob || !writable.isEmpty {
            do {
                if !writable.isEmpty { try WorkerSandbox.enter(writable: writable, readable: mapped) }
                try WorkerSandbox.refuseBeyondFiles(allowExec: false)
            } catch {
                // recd logs the kernel's lack of Landlock once (MediaWorkerPool); anything else is a
                // bug of the rules, and a worker without its sandbox must not serve.
                switch error {
                case .unsupported: break
                case .unsupportedSeccomp: logger.warning("media worker: \(error)")
                case .failed:
                    logger.error("media worker: \(error)")
                    _exit(70)
                }
            }
        }
        let server = WorkerServer(awaitingConfinement: oneJob || forks, forksJobs: forks ? mapped ?? [] : nil, logger: logger)
        var call = WorkerCall()
        while true {
            let header: [UInt8]
            // recd closed the socket (the worker is no longer wanted) or broke the framing: the end.
            do { header = try WireIO.read(3, payload: &call.payload, descriptor: &call.descriptor) } catch { _exit(0) }
            // nil: a job's process answered the requests up to its end (a take's worker's own turn).
            guard let reply = server.handle(header, &call) else { continue }
            do { try call.out.withUnsafeBytes { try WireIO.write(3, header: reply, payload: $0) } } catch { _exit(0) }
            if server.jobEnded { _exit(0) }
        }
    }
}

/// What a handler gets beside its request: the frame's payload, a descriptor passed with it (only
/// `VideoShareFrames` takes one; closed after the call), and the reply's payload to fill.
package struct WorkerCall {
    var payload: [UInt8] = []
    var descriptor: Int32?
    package var out: [UInt8] = []

    package init(payload: [UInt8] = [], descriptor: Int32? = nil, out: [UInt8] = []) {
        (self.payload, self.descriptor, self.out) = (payload, descriptor, out)
    }
}

/// The objects a worker holds between requests, and one function for each operation (`handlers`).
package final class WorkerServer {
    /// A `--one-job` worker before its `Confine`: it serves nothing else until then (it has parsed
    /// nothing yet, and must not before its walls stand).
    private var awaitingConfinement: Bool
    /// A take's worker or a library worker: the directories of its mapped code. It serves nothing
    /// itself: each lease's `Confine` forks a process that walls itself in to that job's files,
    /// answers the job's requests and ends at its `Reset`, while this one waits for it. So a take's
    /// file and what is finalized from it (or a playback's, a trim's files) are all that one
    /// process can reach, and FFmpeg is loaded once, not per job (a new worker's start is ~100 ms
    /// here and a second of a slow board's CPU: before a take's first moments, or a playback's).
    private let forksJobs: [String]?
    /// In a forked job's process: its `Reset` was answered, so it ends.
    private(set) var jobEnded = false
    /// The job's process answered this request and those after it: nothing for this one to send.
    private var answeredByJob = false
    private let logger: Logger?

    package init(awaitingConfinement: Bool = false, forksJobs: [String]? = nil, logger: Logger? = nil) {
        self.awaitingConfinement = awaitingConfinement
        self.forksJobs = forksJobs
        self.logger = logger
    }

    private var decoder: AudioFileDecoder?
    private var writer: AudioFileWriter?
    private var hash: ContentHash?
    private var converter: CapturedPCMConverter?
    private var filter: AudioFilterGraph?
    private var video: VideoFileWriter?
    /// The memory file the video writer's camera frames come in (`VideoShareFrames`).
    private var sharedFrames: SharedMemory?
    private var pcm: [Int16] = []
    /// A decoding error met after some blocks of a read were joined: the next read's answer.
    private var decoderFailure: (any Error)?
    /// The channel count the decoder's output was set to.
    private var outputChannels = 1
    /// Counts `onOutputWritten` calls of the writers during one request.
    private let outputs = OutputCounter()

    final class OutputCounter: @unchecked Sendable { var count = 0 }

    /// Decodes a request's header, serves it and returns the reply's header (a failure when the
    /// operation threw, or the header was not one: the framing held, so the worker goes on), or nil
    /// when a job's process it forked answered instead.
    package func handle(_ header: [UInt8], _ call: inout WorkerCall) -> [UInt8]? {
        defer { if let descriptor = call.descriptor { close(descriptor); call.descriptor = nil } }
        call.out = []
        do {
            let (name, end) = try WireJSON.name(of: header)
            guard !awaitingConfinement || name == WorkerOp.Confine.name else { throw MediaWorkerError.failed("media worker: \(name) before the job's files were named (Confine)") }
            guard let handler = Self.handlers[name] else { throw MediaWorkerError.failed("media worker: no operation \(name)") }
            let reply = try handler(self, header, end, &call)
            if answeredByJob {
                answeredByJob = false
                return nil
            }
            return reply
        } catch {
            call.out = []
            return (try? WorkerAnswer<Done>.failure(WorkerFailure(error)).header()) ?? []
        }
    }

    /// Enters the job's sandbox: its files alone, and the folders of the code mapped (Landlock; a
    /// kernel without it leaves the worker as it is, which recd logged at its start). A failure
    /// of the rules ends the worker: one without its walls must not serve.
    private func confine(_ op: WorkerOp.Confine) throws {
        guard awaitingConfinement else { throw MediaWorkerError.failed("media worker: already confined to a job") }
        if let mapped = forksJobs {
            let child = recd_fork_job()
            guard child >= 0 else { throw MediaWorkerError.failed("media worker: fork for a job: \(String(cString: strerror(-child)))") }
            if child > 0 {
                Self.waitForJob(child)
                answeredByJob = true
                return
            }
            // The job's process. The filter it inherited lets it signal its parent (the pid it was
            // made with): a second one, made with its own, lets it signal no process.
            _ = recd_seccomp_enter(0)
            do {
                try WorkerSandbox.enterForJob(reading: op.reading, writing: op.writing, mapped: mapped)
            } catch {
                if case .unsupported = error {} else {
                    logger?.error("media worker: \(error)")
                    _exit(70)
                }
            }
            awaitingConfinement = false
            return
        }
        do {
            try WorkerSandbox.enterForJob(reading: op.reading, writing: op.writing)
        } catch {
            if case .unsupported = error {} else {
                logger?.error("media worker: \(error)")
                _exit(70)
            }
        }
        awaitingConfinement = false
    }

    /// Waits for a take's job process to end. One that ended by itself (its `Reset` answered, or
    /// recd gone) leaves this worker serving; one that was killed or failed ends it the same way, so
    /// that recd sees the job's end as this worker's (its pid is the one recd knows and reaps).
    private static func waitForJob(_ child: pid_t) {
        var status: Int32 = 0
        var rc: pid_t
        repeat { rc = waitpid(child, &status, 0) } while rc < 0 && errno == EINTR
        guard rc == child else { _exit(71) }
        let signal = status & 0x7f, code = (status >> 8) & 0xff
        if signal != 0 {
            Glibc.signal(signal, SIG_DFL)
            kill(getpid(), signal)
            _exit(128 + signal)
        }
        if code != 0 { _exit(code) }
    }

    package typealias Handler = @Sendable (WorkerServer, _ header: [UInt8], _ nameEnd: Int, inout WorkerCall) throws -> [UInt8]

    /// The operations served, by name, each with what it does (`answer`: one with a reply; `serve`: one
    /// answered `Done`), grouped by the object they work on; the longer ones are functions below.
    package static let handlers = Dictionary(uniqueKeysWithValues: wholeFiles + decoding + writing + video)

    /// One-shot jobs on whole files, the hash of an upload, a job's walls, and emptying the worker.
    private static let wholeFiles: [(String, Handler)] = [
        answer(WorkerOp.Probe.self) { _, op, _ in try MediaProbe.probe(op.path) },
        answer(WorkerOp.Remux.self) { _, op, _ in
            try MP4Finalizer.remux(from: op.source, to: op.destination, streams: op.streams, container: op.container, hidePriming: op.hidePriming)
        },
        answer(WorkerOp.Trim.self) { _, op, _ in
            try MP4Trimmer.trim(from: op.source, to: op.destination, start: op.start, end: op.end, chapters: op.chapters)
        },
        serve(WorkerOp.Poster.self) { _, op, call in call.out = [UInt8](try PosterExtractor.poster(fromFile: op.path)) },
        serve(WorkerOp.HashUpdate.self) { s, _, call in
            if s.hash == nil { s.hash = try ContentHash() }
            call.payload.withUnsafeBytes { s.hash!.update($0) }
        },
        answer(WorkerOp.HashFinish.self) { s, _, _ in
            defer { s.hash = nil }
            return try (s.hash ?? ContentHash()).hex()
        },
        serve(WorkerOp.Confine.self) { s, op, _ in try s.confine(op) },
        serve(WorkerOp.Reset.self) { s, _, _ in
            s.decoder = nil; s.writer = nil; s.hash = nil; s.converter = nil; s.filter = nil; s.video = nil; s.sharedFrames = nil; s.pcm = []; s.decoderFailure = nil
            // A take's job process: its job is over, and so is it (its parent serves the next).
            if s.forksJobs != nil { s.jobEnded = true }
        },
    ]

    /// The decoder: a playback's, a waveform's, an import's.
    private static let decoding: [(String, Handler)] = [
        answer(WorkerOp.OpenDecoder.self) { s, op, _ in
            s.decoder = nil
            s.decoderFailure = nil
            let d = try AudioFileDecoder(path: op.path)
            s.decoder = d
            return .init(sampleRate: d.sourceSampleRate, channels: d.sourceChannels, duration: d.duration)
        },
        serve(WorkerOp.DecoderSetOutput.self) { s, op, _ in
            try s.openDecoder().setOutput(rate: op.rate, channels: op.channels)
            s.outputChannels = op.channels
        },
        serve(WorkerOp.DecoderSeek.self) { s, op, _ in
            s.decoderFailure = nil
            try s.openDecoder().seek(to: op.seconds)
        },
        answer(WorkerOp.DecoderRead.self) { s, op, call in try s.decoderRead(op, &call) },
    ]

    /// The audio writer and the converter of captured sound: a recording's, an import's.
    private static let writing: [(String, Handler)] = [
        serve(WorkerOp.OpenWriter.self) { s, op, _ in
            s.writer = nil
            s.writer = try AudioFileWriter(path: op.path, encoding: op.encoding) { [outputs = s.outputs] in outputs.count += 1 }
        },
        answer(WorkerOp.WriterAppend.self) { s, op, call in
            let w = try s.openWriter()
            try withSamples(call.payload, frames: op.frames, channels: w.encoding.channels) { try w.append(interleaved: $0, frames: op.frames) }
            return w.samplesWritten
        },
        serve(WorkerOp.WriterFlush.self) { s, _, _ in try s.openWriter().flush() },
        answer(WorkerOp.WriterFinish.self) { s, _, _ in
            let w = try s.openWriter()
            try w.finish()
            return w.samplesWritten
        },
        serve(WorkerOp.OpenConverter.self) { s, op, _ in
            s.converter = nil
            s.converter = try CapturedPCMConverter(from: op.format, rate: op.rate, channels: op.channels, toRate: op.toRate, toChannels: op.toChannels)
        },
        serve(WorkerOp.Convert.self) { s, op, call in
            guard let converter = s.converter else { throw MediaWorkerError.failed("media worker: no converter is open") }
            guard op.frames >= 0, call.payload.count >= op.frames * converter.input.channels * converter.input.format.bytesPerSample else {
                throw MediaWorkerError.failed("media worker: \(call.payload.count) bytes for \(op.frames) frames")
            }
            let converted = try call.payload.withUnsafeBytes { try converter.convert($0.baseAddress!, frames: op.frames) }
            call.out = [UInt8](UnsafeRawBufferPointer(converted))
        },
        serve(WorkerOp.OpenFilter.self) { s, op, _ in
            s.filter = nil
            s.filter = try AudioFilterGraph(description: op.description, rate: op.rate, channels: op.channels)
        },
        serve(WorkerOp.Filter.self) { s, op, call in
            guard let filter = s.filter else { throw MediaWorkerError.failed("media worker: no filter is open") }
            let out = try withSamples(call.payload, frames: op.frames, channels: filter.channels) { try filter.process($0, frames: op.frames) }
            call.out = out.withUnsafeBytes { [UInt8]($0) }
        },
        serve(WorkerOp.FilterDrain.self) { s, _, call in
            guard let filter = s.filter else { throw MediaWorkerError.failed("media worker: no filter is open") }
            call.out = try filter.drain().withUnsafeBytes { [UInt8]($0) }
        },
    ]

    /// The video writer: a camera take's.
    private static let video: [(String, Handler)] = [
        serve(WorkerOp.OpenVideoWriter.self) { s, op, _ in
            s.video = nil
            s.sharedFrames = nil
            s.video = try VideoFileWriter(path: op.path, video: op.video, camera: op.camera, audio: op.audio) { [outputs = s.outputs] in outputs.count += 1 }
        },
        serve(WorkerOp.VideoAppendAudio.self) { s, op, call in
            let v = try s.openVideo()
            try withSamples(call.payload, frames: op.frames, channels: v.audioChannels) { try v.appendAudio(interleaved: $0, frames: op.frames) }
        },
        serve(WorkerOp.VideoFinishAudio.self) { s, _, _ in try s.openVideo().finishAudio() },
        serve(WorkerOp.VideoFlush.self) { s, _, _ in try s.openVideo().flush() },
        serve(WorkerOp.VideoShareFrames.self) { s, op, call in
            guard let descriptor = call.descriptor else { throw MediaWorkerError.failed("media worker: no memory file came with VideoShareFrames") }
            s.sharedFrames = nil
            s.sharedFrames = try SharedMemory(mapping: descriptor, bytes: op.bytes)
        },
        answer(WorkerOp.VideoAppendFrame.self) { s, op, call in try s.videoAppendFrame(op, &call) },
        serve(WorkerOp.VideoFinishFrames.self) { s, _, _ in try s.openVideo().finishVideo() },
        serve(WorkerOp.VideoClose.self) { s, _, _ in try s.openVideo().close() },
    ]

    /// A handler of `Op`: decodes its request, calls `body`, encodes its reply.
    private static func answer<Op: WorkerOperation>(_: Op.Type, _ body: @escaping @Sendable (WorkerServer, Op, inout WorkerCall) throws -> Op.Reply) -> (String, Handler) {
        (Op.name, { server, header, nameEnd, call in
            let op = try Op.fields(of: header, after: nameEnd)
            let reply = try body(server, op, &call)
            defer { server.outputs.count = 0 }
            return try WorkerAnswer<Op.Reply>.reply(reply, outputs: server.outputs.count).header()
        })
    }

    private static func serve<Op: WorkerOperation>(_: Op.Type, _ body: @escaping @Sendable (WorkerServer, Op, inout WorkerCall) throws -> Void) -> (String, Handler)
    where Op.Reply == Done {
        answer(Op.self) { server, op, call -> Done in
            try body(server, op, &call)
            return Done()
        }
    }

    private func decoderRead(_ op: WorkerOp.DecoderRead, _ call: inout WorkerCall) throws -> WorkerOp.DecoderRead.Block? {
        let decoder = try openDecoder()
        if let failed = decoderFailure {
            decoderFailure = nil
            throw failed
        }
        var joined: WorkerOp.DecoderRead.Block?
        while (joined?.frames ?? 0) < max(1, op.atLeast) {
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
                call.out.reserveCapacity(max(op.atLeast, block.frames) * outputChannels * MemoryLayout<Int16>.size)
            }
            joined!.frames += block.frames
            // Only the block's samples go back (the buffer is kept at its largest).
            let bytes = block.frames * outputChannels * MemoryLayout<Int16>.size
            pcm.withUnsafeBytes { call.out.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<bytes])) }
        }
        return joined
    }

    private func videoAppendFrame(_ op: WorkerOp.VideoAppendFrame, _ call: inout WorkerCall) throws -> Bool {
        var poster: Data?
        let video = try openVideo()
        let append = { (raw: UnsafeRawBufferPointer) in
            try video.appendVideo(raw, pts: op.pts, poster: op.poster ? { poster = $0 } : nil)
        }
        defer { if let poster { call.out = [UInt8](poster) } }
        guard op.shared > 0 else { return try call.payload.withUnsafeBytes(append) }
        guard let sharedFrames, op.shared <= sharedFrames.bytes.count else {
            throw MediaWorkerError.failed("media worker: a frame of \(op.shared) bytes in a memory file of \(sharedFrames?.bytes.count ?? 0)")
        }
        return try append(UnsafeRawBufferPointer(rebasing: sharedFrames.bytes[0..<op.shared]))
    }

    /// `payload` as the interleaved S16 samples of `frames` frames; a payload too short for them is an
    /// error of that request (a crash here would end a recording's worker).
    private static func withSamples<T>(_ payload: [UInt8], frames: Int, channels: Int,
                                       _ body: (UnsafeBufferPointer<Int16>) throws -> T) throws -> T {
        guard frames >= 0, payload.count >= frames * channels * MemoryLayout<Int16>.size else {
            throw MediaWorkerError.failed("media worker: \(payload.count) bytes for \(frames) frames of \(channels) channels")
        }
        return try payload.withUnsafeBytes { try body($0.bindMemory(to: Int16.self)) }
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
