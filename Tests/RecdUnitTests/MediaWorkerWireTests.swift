// The media worker's wire (MediaWorker): frames over a socket pair, every operation and its reply
// through the one coding (JSON headers), malformed headers refused, and errors that cross as the types
// recd acts on. The workers themselves are driven through the daemon (MediaWorkerTests).
import Capture
import Foundation
import Media
import MediaWire
import MediaWorker
import MediaWorkerServer
import XCTest

extension WorkerServer {
    /// `handle` for one operation, typed, through the wire's coding both ways (as recd-media serves it).
    func handle<Op: WorkerOperation>(_ op: Op, payload: [UInt8] = [], descriptor: Int32? = nil, out: inout [UInt8]) throws -> WorkerAnswer<Op.Reply> {
        var call = WorkerCall(payload: payload, descriptor: descriptor)
        defer { out = call.out }
        return try WorkerAnswer(header: XCTUnwrap(handle(try op.header(), &call)))
    }
}

extension WorkerAnswer {
    var failure: WorkerFailure? { if case .failure(let f) = self { f } else { nil } }
    func get() throws -> Reply {
        switch self {
        case .reply(let reply, _): return reply
        case .failure(let failure): throw failure.error
        }
    }
}

final class MediaWorkerWireTests: XCTestCase {
    func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        return (fds[0], fds[1])
    }

    func testFramesCarryTheHeaderAndThePayloadAndTheEndIsClosed() throws {
        let (a, b) = try socketPair()
        defer { close(b) }
        let samples: [Int16] = [1, -2, 3, .max, .min]
        let header = try WorkerOp.WriterAppend(frames: 5).header()
        try samples.withUnsafeBytes { try WireIO.write(a, header: header, payload: $0) }
        try WireIO.write(a, header: try WorkerOp.Reset().header(), payload: nil)
        var payload: [UInt8] = [9, 9, 9]
        let first = try WireIO.read(b, payload: &payload)
        let (name, end) = try WireJSON.name(of: first)
        XCTAssertEqual(name, "WriterAppend")
        XCTAssertEqual(try WorkerOp.WriterAppend.fields(of: first, after: end).frames, 5)
        XCTAssertEqual(payload.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }, samples)
        _ = try WireIO.read(b, payload: &payload)
        XCTAssertEqual(payload, [], "a frame without payload empties the buffer")
        close(a)
        XCTAssertThrowsError(try WireIO.read(b, payload: &payload)) { XCTAssertTrue($0 is WireIO.Closed, "\($0)") }
    }

    func testAnOversizedFrameIsAProtocolErrorNotAnAllocation() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        var lengths: (UInt32, UInt32) = (UInt32(WireIO.maxHeader + 1).littleEndian, 0)
        XCTAssertEqual(withUnsafeBytes(of: &lengths) { send(a, $0.baseAddress, $0.count, 0) }, 8)
        var payload: [UInt8] = []
        XCTAssertThrowsError(try WireIO.read(b, payload: &payload)) { error in
            XCTAssertTrue("\(error)".contains("protocol error"), "\(error)")
        }
    }

    func testErrorsCrossAsTheTypesRecdActsOn() throws {
        func roundTrip(_ error: any Error) throws -> any Error {
            let header = try WorkerAnswer<Done>.failure(WorkerFailure(error)).header()
            guard case .failure(let back) = try WorkerAnswer<Done>(header: header) else { throw MediaWorkerError.failed("not a failure") }
            return back.error
        }
        // A full disk (AVERROR(ENOSPC)) keeps its code, so recd still says "disk full", and its text.
        let full = FFmpegError(call: "av_write_frame", code: -ENOSPC, file: "/data/Recordings/a.m4a")
        let fullBack = try XCTUnwrap(try roundTrip(full) as? FFmpegError)
        XCTAssertTrue(fullBack.isDiskFull)
        XCTAssertEqual(fullBack.description, full.description)
        XCTAssertTrue(fullBack.message.contains("No space left"), fullBack.message)
        let missing = try XCTUnwrap(try roundTrip(FFmpegError(call: "avformat_open_input", code: -ENOENT, file: "/x")) as? FFmpegError)
        XCTAssertTrue(missing.isFileMissing)
        guard case .noStream(let kind, let file)? = try roundTrip(MediaError.noStream(kind: "audio", file: "/y.mov")) as? MediaError else {
            return XCTFail("MediaError.noStream should cross as itself")
        }
        XCTAssertEqual([kind, file], ["audio", "/y.mov"])
        XCTAssertEqual((try roundTrip(FrameRejected(reason: "short frame")) as? FrameRejected)?.reason, "short frame")
        struct Other: Error, CustomStringConvertible { var description: String { "something else" } }
        XCTAssertEqual("\(try roundTrip(Other()))", "something else")
    }

    /// A request whose samples are fewer than it says is an error of that request, not the end of
    /// the worker (which holds a recording's file): the next, right one is written.
    func testAShortPayloadIsRefusedAndTheWriterGoesOn() throws {
        let path = NSTemporaryDirectory() + "recd-worker-\(UUID().uuidString).m4a"
        defer { unlink(path) }
        let server = WorkerServer()
        var out: [UInt8] = []
        XCTAssertNil(try server.handle(WorkerOp.OpenWriter(path: path, encoding: AudioEncoding()), out: &out).failure)
        let short = try server.handle(WorkerOp.WriterAppend(frames: 1024), payload: [UInt8](repeating: 0, count: 100), out: &out)
        guard case .other(let text)? = short.failure else { return XCTFail("a short payload must be refused: \(short)") }
        XCTAssertTrue(text.contains("100 bytes for 1024 frames"), text)
        let samples = [UInt8](repeating: 0, count: 2048 * 2)
        XCTAssertEqual(try server.handle(WorkerOp.WriterAppend(frames: 2048), payload: samples, out: &out).get(), 2048)
        XCTAssertEqual(try server.handle(WorkerOp.WriterFinish(), out: &out).get(), 2048)
    }

    /// An enhanced copy's filters in the worker: every frame that goes in comes out (look-ahead
    /// filters give the rest at the drain), changed as asked; a description FFmpeg cannot parse, or
    /// a payload shorter than it says, is an error of that request.
    func testTheFilterGivesBackEveryFrameFiltered() throws {
        let server = WorkerServer()
        var out: [UInt8] = []
        XCTAssertNil(try server.handle(WorkerOp.OpenFilter(description: "highpass=f=80,volume=-6.0206dB", rate: 48_000, channels: 2), out: &out).failure)
        // A 440 Hz tone at 0.5, stereo, in three blocks.
        let frames = 48_000
        let tone = (0..<frames).flatMap { i -> [Int16] in
            let v = Int16(16_384 * sin(2 * Double.pi * 440 * Double(i) / 48_000))
            return [v, v]
        }
        var filtered: [Int16] = []
        func collect() { filtered += out.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) } }
        for block in stride(from: 0, to: frames, by: 20_000) {
            let n = min(20_000, frames - block)
            let bytes = tone[(2 * block)..<(2 * (block + n))].withUnsafeBytes { [UInt8]($0) }
            XCTAssertNil(try server.handle(WorkerOp.Filter(frames: n), payload: bytes, out: &out).failure)
            collect()
        }
        XCTAssertNil(try server.handle(WorkerOp.FilterDrain(), out: &out).failure)
        collect()
        XCTAssertEqual(filtered.count, tone.count, "every frame, no more")
        let peak = filtered[48_000...].map { abs(Int($0)) }.max() ?? 0
        XCTAssertEqual(Double(peak), 8192, accuracy: 100, "-6 dB: half the amplitude")
        let short = try server.handle(WorkerOp.Filter(frames: 1024), payload: [0, 0], out: &out)
        XCTAssertNotNil(short.failure)
        let bad = try server.handle(WorkerOp.OpenFilter(description: "nosuchfilter=3", rate: 48_000, channels: 1), out: &out)
        guard case .ffmpeg(let e)? = bad.failure else { return XCTFail("\(bad)") }
        XCTAssertEqual(e.call, "avfilter_graph_parse_ptr")
    }

    /// One of each operation, with values at the edges: each comes back as sent, and together they
    /// are every operation the worker serves (a new one gets a round trip here).
    static let everyOperation: [any WorkerOperation] = [
        WorkerOp.Probe(path: "/a b/ç 🎙.m4a"),
        WorkerOp.Remux(source: "/s.m4a", destination: "/d.m4a", streams: [0, 2], container: "mov", hidePriming: false),
        WorkerOp.Remux(source: "", destination: "/d", streams: nil, container: nil, hidePriming: true),
        WorkerOp.Trim(source: "/s", destination: "/d", start: -0.0, end: .greatestFiniteMagnitude),
        WorkerOp.Poster(path: "/p.mov"), WorkerOp.HashUpdate(), WorkerOp.HashFinish(),
        WorkerOp.OpenDecoder(path: "/x.opus"), WorkerOp.DecoderSetOutput(rate: 48_000, channels: 2),
        WorkerOp.DecoderSeek(seconds: 12.345678901), WorkerOp.DecoderRead(atLeast: .max),
        WorkerOp.OpenWriter(path: "/w.m4a", encoding: AudioEncoding(codec: .opus, sampleRate: 24_000, channels: 2, bitRate: 32_000)),
        WorkerOp.WriterAppend(frames: 8192), WorkerOp.WriterFlush(), WorkerOp.WriterFinish(),
        WorkerOp.OpenConverter(format: .s24Packed, rate: 44_100, channels: 6, toRate: 48_000, toChannels: 2),
        WorkerOp.Convert(frames: 0),
        WorkerOp.OpenFilter(description: "highpass=f=80,afftdn=nr=12:tn=1,volume=+3.5dB", rate: 8000, channels: 2),
        WorkerOp.Filter(frames: 65_536), WorkerOp.FilterDrain(),
        WorkerOp.OpenVideoWriter(path: "/v.mov", video: VideoEncoding(width: 1920, height: 1080, fps: 29.97, bitRate: 4_000_000),
                                 camera: CameraFrameFormat(fourcc: FourCC.yuyv.rawValue, width: 1920, height: 1080, bytesPerLine: 3840),
                                 audio: nil),
        WorkerOp.OpenVideoWriter(path: "/v.mov", video: VideoEncoding(width: 2, height: 2, fps: 1),
                                 camera: CameraFrameFormat(fourcc: 0, width: 2, height: 2, bytesPerLine: 2), audio: AudioEncoding()),
        WorkerOp.VideoAppendAudio(frames: 1), WorkerOp.VideoFinishAudio(), WorkerOp.VideoFlush(),
        WorkerOp.VideoShareFrames(bytes: 86_400),
        WorkerOp.VideoAppendFrame(pts: -3_000_000_000, poster: true, shared: 0),
        WorkerOp.VideoAppendFrame(pts: .max, poster: false, shared: 86_400),
        WorkerOp.VideoFinishFrames(), WorkerOp.VideoClose(), WorkerOp.Reset(),
        WorkerOp.Confine(reading: ["/data/Recordings/audio_a.m4a"], writing: ["/data/Recordings/.trim-a.m4a"]),
    ]

    func testEveryOperationComesBackAsSentAndIsServed() throws {
        var names: Set<String> = []
        for op in Self.everyOperation {
            let (name, back) = try Self.roundTrip(op)
            names.insert(name)
            XCTAssertEqual("\(back)", "\(op)")
        }
        XCTAssertEqual(names, Set(WorkerServer.handlers.keys), "every operation served has a round trip here, and only those")
        XCTAssertEqual(WorkerServer.handlers.count, 29)
    }

    /// `op`'s header read back: the name it went under, and `op` again.
    static func roundTrip<Op: WorkerOperation>(_ op: Op) throws -> (String, Op) {
        let header = try op.header()
        let (name, end) = try WireJSON.name(of: header)
        return (name, try Op.fields(of: header, after: end))
    }

    /// Replies of every shape come back as sent: optionals nil and not, arrays, a dictionary, enums
    /// with and without values, text that is not ASCII, numbers at their limits.
    func testRepliesComeBackAsSent() throws {
        func check<R: Codable & Sendable>(_ reply: R, outputs: Int = 0, _ line: UInt = #line) throws {
            guard case .reply(let back, let n) = try WorkerAnswer<R>(header: WorkerAnswer<R>.reply(reply, outputs: outputs).header()) else {
                return XCTFail("not a reply", line: line)
            }
            XCTAssertEqual("\(back)", "\(reply)", line: line)
            XCTAssertEqual(n, outputs, line: line)
        }
        let info = MediaInfo(formatName: "mov,mp4,m4a", duration: 3600.000001, streams: [
            .init(kind: "audio", codec: "aac", sampleRate: 48_000, channels: 2),
            .init(kind: "video", codec: "mjpeg", isCoverArt: true),
        ], tags: ["title": "Ça va — 🎙", "": "", String(repeating: "k", count: 300): "long key"])
        XCTAssertEqual(try WorkerAnswer<MediaInfo>(header: WorkerAnswer.reply(info, outputs: 0).header()).get(), info)
        try check(MediaInfo(formatName: "", duration: nil, streams: []))
        try check(RemuxResult(packets: .max, stoppedAtDamage: true))
        try check(TrimResult(packets: 0, videoLeadIn: -.infinity))
        try check(WorkerOp.OpenDecoder.Reply(sampleRate: 44_100, channels: 1, duration: nil))
        try check(Optional(WorkerOp.DecoderRead.Block(start: 12.345678901, frames: 1024)))
        try check(WorkerOp.DecoderRead.Block?.none)
        try check(Int64.min, outputs: 3)
        try check(true, outputs: .max)
        try check(String(repeating: "ab", count: 32))
        try check(Done())
        guard case .reply(let nan, _) = try WorkerAnswer<Double>(header: WorkerAnswer<Double>.reply(.nan, outputs: 0).header()) else {
            return XCTFail("not a reply")
        }
        XCTAssertTrue(nan.isNaN)
    }

    /// A header cut short, too long, of an unknown operation, with a field of the wrong type or
    /// missing, a name that is not UTF-8, or fields that are not JSON is an error that says so — of that request only: the worker
    /// answers it and serves the next. And none of them crashes either side.
    func testMalformedHeadersAreRefusedNotCrashed() throws {
        let server = WorkerServer()
        func refusal(_ header: [UInt8]) throws -> String {
            var call = WorkerCall()
            guard case .failure(let failure) = try WorkerAnswer<Done>(header: XCTUnwrap(server.handle(header, &call))) else { return "" }
            return "\(failure.error)"
        }
        let good = try WorkerOp.DecoderSeek(seconds: 1).header()
        XCTAssertTrue(try refusal(good).contains("no decoder is open"), "a well-formed request is served")
        for cut in 0..<good.count {
            XCTAssertTrue(try refusal(Array(good.prefix(cut))).contains("malformed worker message"), "cut at \(cut)")
        }
        XCTAssertTrue(try refusal(good + [0]).contains("malformed"))
        func header(_ text: String) -> [UInt8] { Array(text.utf8) }
        XCTAssertTrue(try refusal(header("Format {}")).contains("no operation Format"))
        // DecoderSeek's `seconds` as text, then under another key.
        let wrongType = try refusal(header(#"DecoderSeek {"seconds":"1"}"#))
        XCTAssertTrue(wrongType.contains("DecoderSeek: seconds is not a Double"), wrongType)
        let renamed = try refusal(header(#"DecoderSeek {"second":1}"#))
        XCTAssertTrue(renamed.contains("seconds is missing"), renamed)
        let notText = try refusal([0xC3, 0x28, 0x20, 0x7B, 0x7D])
        XCTAssertTrue(notText.contains("no operation"), notText)
        let notJSON = try refusal(header("DecoderSeek seconds=1"))
        XCTAssertTrue(notJSON.contains("malformed worker message: DecoderSeek"), notJSON)
        // Every byte of a request changed, with seeded values: an answer each time, never a crash.
        var random = SeededGenerator(seed: 36)
        let requests = [try WorkerOp.WriterAppend(frames: 8192).header(), try WorkerOp.Probe(path: "/nonexistent/ç").header(),
                        try WorkerOp.VideoAppendFrame(pts: 7, poster: true, shared: 3).header()]
        for request in requests {
            for i in request.indices {
                var bad = request
                bad[i] = UInt8.random(in: 0...255, using: &random)
                var call = WorkerCall()
                XCTAssertNoThrow(try WorkerAnswer<Done>(header: XCTUnwrap(server.handle(bad, &call))), "byte \(i)")
            }
        }
        // recd's side: a reply cut short is an error too.
        let reply = try WorkerAnswer.reply(RemuxResult(packets: 3, stoppedAtDamage: false), outputs: 0).header()
        for cut in 0..<reply.count {
            XCTAssertThrowsError(try WorkerAnswer<RemuxResult>(header: Array(reply.prefix(cut))), "cut at \(cut)")
        }
    }

    /// A frame far larger than the socket's buffer (a camera picture) arrives whole and in order:
    /// the sender's one `sendmsg` goes out in parts.
    func testAFrameLargerThanTheSocketBufferArrivesWhole() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let picture = (0..<3_000_001).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let header = try WorkerOp.VideoAppendFrame(pts: 99, poster: false, shared: 0).header()
        let sent = DispatchSemaphore(value: 0)
        let failure = NSLock()
        nonisolated(unsafe) var sendError: (any Error)?
        Thread {
            do { try picture.withUnsafeBytes { try WireIO.write(a, header: header, payload: $0) } } catch {
                failure.withLock { sendError = error }
            }
            sent.signal()
        }.start()
        var payload: [UInt8] = []
        let got = try WireIO.read(b, payload: &payload)
        sent.wait()
        XCTAssertNil(failure.withLock { sendError })
        XCTAssertEqual(got, header)
        XCTAssertEqual(payload.count, picture.count)
        XCTAssertTrue(payload == picture, "the bytes differ")
    }

    /// A descriptor passed with a frame (`WireIO.write(passing:)`) arrives with that frame and no
    /// other, and refers to the same memory: what recd writes there after, the worker reads. The
    /// memory file is sealed at its size (the worker cannot be made to read past its end).
    func testAMemoryFilePassedWithAFrameArrivesWithItAndSharesItsBytes() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let mine = try SharedMemory(creating: "recd-test", bytes: 8192)
        let header = try WorkerOp.VideoShareFrames(bytes: 8192).header()
        try WireIO.write(a, header: header, payload: nil, passing: mine.descriptor)
        try WireIO.write(a, header: header, payload: nil)
        var payload: [UInt8] = []
        var descriptor: Int32?
        XCTAssertEqual(try WireIO.read(b, payload: &payload, descriptor: &descriptor), header)
        let fd = try XCTUnwrap(descriptor, "the descriptor came with the frame")
        defer { close(fd) }
        XCTAssertNotEqual(fd, mine.descriptor)
        XCTAssertEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC, "received close-on-exec")
        var none: Int32?
        _ = try WireIO.read(b, payload: &payload, descriptor: &none)
        XCTAssertNil(none, "a frame without one brings none")
        XCTAssertEqual(ftruncate(fd, 4096), -1, "sealed at its size")
        XCTAssertEqual(ftruncate(fd, 16384), -1, "sealed at its size")
        XCTAssertThrowsError(try SharedMemory(mapping: fd, bytes: 8193), "larger than the file")
        let theirs = try SharedMemory(mapping: fd, bytes: 8192)
        for i in 0..<8192 { mine.bytes[i] = UInt8(truncatingIfNeeded: i &* 7) }
        XCTAssertTrue(theirs.bytes.elementsEqual(mine.bytes), "the same memory")
        mine.closeDescriptor()
        XCTAssertNil(mine.descriptor)
    }

    /// A video writer in the worker takes its camera frames from the memory file recd passed, as it
    /// takes them from payloads; a frame said to be larger than that file, or a file that came
    /// without its descriptor, is an error of that request, and the writer goes on.
    func testCameraFramesFromTheSharedMemoryFileAreWrittenAsPayloadsAre() throws {
        let path = NSTemporaryDirectory() + "recd-worker-\(UUID().uuidString).mov"
        defer { unlink(path) }
        let server = WorkerServer()
        var out: [UInt8] = []
        let camera = CameraFrameFormat(fourcc: FourCC.yuyv.rawValue, width: 64, height: 48, bytesPerLine: 128)
        XCTAssertNil(try server.handle(WorkerOp.OpenVideoWriter(path: path, video: VideoEncoding(width: 64, height: 48, fps: 25, preset: "ultrafast"),
                                                                camera: camera, audio: nil), out: &out).failure)
        let frameBytes = 128 * 48
        let unpassed = try server.handle(WorkerOp.VideoShareFrames(bytes: frameBytes), out: &out)
        XCTAssertTrue("\(String(describing: unpassed.failure))".contains("no memory file"), "\(unpassed)")
        let shared = try SharedMemory(creating: "recd-test-frames", bytes: frameBytes)
        let passed = try XCTUnwrap(shared.descriptor)
        let copy = dup(passed)
        XCTAssertNil(try server.handle(WorkerOp.VideoShareFrames(bytes: frameBytes), descriptor: copy, out: &out).failure)
        XCTAssertEqual(fcntl(copy, F_GETFD), -1, "the worker closed the descriptor it was given (its mapping stays)")
        for i in 0..<10 {
            for y in 0..<48 { for x in 0..<64 { shared.bytes[y * 128 + x * 2] = UInt8(16 + (x + i * 4) % 200); shared.bytes[y * 128 + x * 2 + 1] = 128 } }
            XCTAssertEqual(try server.handle(WorkerOp.VideoAppendFrame(pts: Int64(i) * 3600, poster: i == 0, shared: frameBytes), out: &out).get(), true)
            if i == 0 { XCTAssertEqual(Array(out.prefix(2)), [0xFF, 0xD8], "the poster, a JPEG of the shared frame") }
        }
        let tooLarge = try server.handle(WorkerOp.VideoAppendFrame(pts: 36_000, poster: false, shared: frameBytes + 1), out: &out)
        XCTAssertTrue("\(String(describing: tooLarge.failure))".contains("in a memory file of \(frameBytes)"), "\(tooLarge)")
        // The same frame as a payload still goes.
        let payload = [UInt8](UnsafeRawBufferPointer(shared.bytes))
        XCTAssertEqual(try server.handle(WorkerOp.VideoAppendFrame(pts: 36_000, poster: false, shared: 0), payload: payload, out: &out).get(), true)
        XCTAssertNil(try server.handle(WorkerOp.VideoFinishFrames(), out: &out).failure)
        XCTAssertNil(try server.handle(WorkerOp.VideoClose(), out: &out).failure)
        let info = try MediaProbe.probe(path)
        XCTAssertEqual(info.streams.map(\.codec), ["h264"])
        XCTAssertEqual(try XCTUnwrap(info.duration), 11.0 / 25, accuracy: 0.05)
    }

    /// Through a real worker (recd-media, as the daemon starts it): `WorkerVideoWriter` sends
    /// camera frames through one shared memory file that recd and the worker both map, makes a new
    /// one twice as large for a frame larger than it (a compressed camera's frames vary), and writes
    /// every frame. This is recd's side of the wire (`videoShareFrames` with its descriptor); the
    /// daemon's video takes go through it in the VM (VideoTests).
    func testAVideoWriterSharesFramesWithItsWorkerAndGrowsTheFileForALargerFrame() throws {
        let binary = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
            .map { $0.appendingPathComponent("recd-media").path }.first { FileManager.default.isExecutableFile(atPath: $0) }
        let worker = try XCTUnwrap(binary, "recd-media is built beside the tests")
        MediaWorkerPool.shared.configure(executable: worker, idleSeconds: 0, logLevel: "error")
        let path = NSTemporaryDirectory() + "recd-worker-\(UUID().uuidString).mov"
        defer { unlink(path) }
        let writer = try WorkerVideoWriter(path: path, video: VideoEncoding(width: 64, height: 48, fps: 25, preset: "ultrafast"),
                                           camera: CameraFrameFormat(fourcc: FourCC.yuyv.rawValue, width: 64, height: 48, bytesPerLine: 128),
                                           audio: nil)
        /// Sizes of the frame files mapped, in this process and in its worker (its only child).
        func mapped() throws -> (mine: [Int], worker: [Int]) {
            /// (Read to the end: /proc's files say they are empty, and String(contentsOfFile:) believes it.)
            func read(_ file: String) -> String {
                String(decoding: FileHandle(forReadingAtPath: file)?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
            }
            func sizes(_ pid: String) throws -> [Int] {
                read("/proc/\(pid)/maps").split(separator: "\n")
                    .filter { $0.contains("memfd:recd-camera-frames") }
                    .map { line in
                        let range = line.split(separator: " ")[0].split(separator: "-").map { Int($0, radix: 16)! }
                        return range[1] - range[0]
                    }
            }
            let children = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").flatMap { task in
                read("/proc/self/task/\(task)/children").split(separator: " ").map(String.init)
            }
            return (try sizes("self"), try children.flatMap { try sizes($0) })
        }
        var poster: Data?
        for i in 0..<12 {
            var frame = VideoMediaTests.yuyvFrame(width: 64, height: 48, index: i)   // 6144 bytes
            if i >= 6 { frame += [UInt8](repeating: 0, count: 4000) }   // larger: padding the format ignores
            try frame.withUnsafeBytes { raw in
                XCTAssertTrue(try writer.appendVideo(raw, pts: Int64(i) * 3600, poster: i == 0 ? { poster = $0 } : nil))
            }
            if i == 0 || i == 6 {
                let (mine, worker) = try mapped()
                XCTAssertEqual(mine, [i == 0 ? 8192 : 16384], "recd maps one frame file, of the first frame's size in pages, then twice that")
                XCTAssertEqual(worker, mine, "the worker (the only child) maps the same file, and only it")
            }
        }
        XCTAssertEqual(Array(try XCTUnwrap(poster).prefix(2)), [0xFF, 0xD8])
        try writer.finishVideo()
        try writer.close()
        XCTAssertEqual(writer.framesWritten, 12)
        XCTAssertEqual(try mapped().mine, [], "closing the writer unmaps it (the writer goes on living)")
        let info = try MediaProbe.probe(path)
        XCTAssertEqual(info.streams.map(\.codec), ["h264"])
        XCTAssertEqual(try XCTUnwrap(info.duration), 12.0 / 25, accuracy: 0.05)
    }

    /// A decoder read joins the decoder's blocks up to the frames asked for, so a whole-file pass is a
    /// few round trips, and gives exactly the samples that reading block by block gives.
    func testADecoderReadJoinsBlocksIntoTheSameSamples() throws {
        let path = NSTemporaryDirectory() + "recd-worker-\(UUID().uuidString).m4a"
        defer { unlink(path) }
        let writer = try AudioFileWriter(path: path, encoding: AudioEncoding(sampleRate: 48000, channels: 1, bitRate: 96_000))
        let tone = (0..<72_000).map { Int16(8000 * sin(Double($0) * 2 * .pi * 440 / 48000)) }
        try tone.withUnsafeBufferPointer { try writer.append(interleaved: $0, frames: tone.count) }
        try writer.finish()

        func decode(atLeast: Int) throws -> (reads: [Int], samples: [Int16]) {
            let server = WorkerServer()
            var out: [UInt8] = []
            XCTAssertNil(try server.handle(WorkerOp.OpenDecoder(path: path), out: &out).failure)
            XCTAssertNil(try server.handle(WorkerOp.DecoderSetOutput(rate: 48000, channels: 1), out: &out).failure)
            var reads: [Int] = [], samples: [Int16] = []
            while true {
                guard let block = try server.handle(WorkerOp.DecoderRead(atLeast: atLeast), out: &out).get() else { break }
                XCTAssertEqual(out.count, block.frames * 2, "the payload holds the joined frames")
                reads.append(block.frames)
                samples += out.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            }
            return (reads, samples)
        }
        let single = try decode(atLeast: 1)
        let joined = try decode(atLeast: 16_384)
        XCTAssertGreaterThan(single.reads.count, 50, "AAC decodes 1024 frames a block")
        XCTAssertTrue(joined.reads.dropLast().allSatisfy { $0 >= 16_384 }, "\(joined.reads)")
        XCTAssertLessThanOrEqual(joined.reads.count, 5, "\(joined.reads)")
        XCTAssertGreaterThanOrEqual(single.samples.count, 72_000)
        XCTAssertTrue(joined.samples == single.samples, "joined reads give the same samples")
    }
}
