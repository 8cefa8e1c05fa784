// The media worker's wire (MediaWorker): frames over a socket pair, and errors that cross it as the
// types recd acts on. The workers themselves are driven through the daemon (MediaWorkerTests).
import Capture
import Foundation
import Media
import MediaWire
@testable import MediaWorker
import MediaWorkerServer
import XCTest

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
        let header = try JSONEncoder().encode(WorkerRequest.writerAppend(frames: 5))
        try samples.withUnsafeBytes { try WireIO.write(a, header: header, payload: $0) }
        try WireIO.write(a, header: try JSONEncoder().encode(WorkerRequest.reset), payload: nil)
        var payload: [UInt8] = [9, 9, 9]
        let first = try WireIO.read(b, payload: &payload)
        guard case .writerAppend(let frames) = try JSONDecoder().decode(WorkerRequest.self, from: first) else {
            return XCTFail("not the request sent")
        }
        XCTAssertEqual(frames, 5)
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
            let reply = WorkerReply(failure: WorkerFailure(error))
            let back = try JSONDecoder().decode(WorkerReply.self, from: JSONEncoder().encode(reply))
            return try XCTUnwrap(back.failure?.error)
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
        var server = WorkerServer()
        var out: [UInt8] = []
        XCTAssertNil(server.handle(.openWriter(path: path, encoding: AudioEncoding()), payload: [], out: &out).failure)
        let short = server.handle(.writerAppend(frames: 1024), payload: [UInt8](repeating: 0, count: 100), out: &out)
        guard case .other(let text)? = short.failure else { return XCTFail("a short payload must be refused: \(short)") }
        XCTAssertTrue(text.contains("100 bytes for 1024 frames"), text)
        let samples = [UInt8](repeating: 0, count: 2048 * 2)
        let ok = server.handle(.writerAppend(frames: 2048), payload: samples, out: &out)
        XCTAssertNil(ok.failure)
        XCTAssertEqual(ok.samplesWritten, 2048)
        XCTAssertNil(server.handle(.writerFinish, payload: [], out: &out).failure)
    }

    /// The per-block requests and replies go without JSON (`WorkerCoding`) and come back as sent;
    /// the others still go as JSON.
    func testPerBlockMessagesGoCompactAndComeBackAsSent() throws {
        let json = JSONEncoder(), parse = JSONDecoder()
        let compact: [WorkerRequest] = [.writerAppend(frames: 4096), .videoAppendAudio(frames: 1), .convert(frames: 0),
                                        .decoderRead(atLeast: 65_536), .hashUpdate, .videoAppendFrame(pts: -3_000_000_000, poster: true, shared: 0),
                                        .videoAppendFrame(pts: 512, poster: false, shared: 86_400)]
        for request in compact {
            let header = try WorkerCoding.encode(request, json: json)
            XCTAssertLessThan(try XCTUnwrap(header.first), 0x20, "\(request) should go compact")
            XCTAssertEqual("\(try WorkerCoding.decodeRequest(header, json: parse))", "\(request)")
        }
        for request: WorkerRequest in [.writerFinish, .probe(path: "/a b/ç.m4a"), .reset] {
            let header = try WorkerCoding.encode(request, json: json)
            XCTAssertEqual(header.first, UInt8(ascii: "{"), "\(request) should go as JSON")
            XCTAssertEqual("\(try WorkerCoding.decodeRequest(header, json: parse))", "\(request)")
        }
        var block = WorkerReply()
        block.block = .init(start: 12.345678901, frames: 1024)
        var written = WorkerReply()
        written.samplesWritten = 1 << 40
        written.outputsWritten = 2
        var skipped = WorkerReply()
        skipped.appended = false
        for reply in [WorkerReply(), block, written, skipped] {
            let header = try WorkerCoding.encode(reply, json: json)
            XCTAssertLessThan(try XCTUnwrap(header.first), 0x20, "\(reply) should go compact")
            XCTAssertEqual("\(try WorkerCoding.decodeReply(header, json: parse))", "\(reply)")
        }
        var hex = WorkerReply()
        hex.hex = String(repeating: "ab", count: 32)
        for reply in [hex, WorkerReply(failure: .other("disk on fire"))] {
            let header = try WorkerCoding.encode(reply, json: json)
            XCTAssertEqual(header.first, UInt8(ascii: "{"), "\(reply) should go as JSON")
            XCTAssertEqual("\(try WorkerCoding.decodeReply(header, json: parse))", "\(reply)")
        }
    }

    /// A compact header that is cut short, too long or of an unknown kind is an error, not a crash
    /// or a wrong request.
    func testAMalformedCompactHeaderIsRefused() throws {
        let parse = JSONDecoder()
        let good = try WorkerCoding.encode(WorkerRequest.writerAppend(frames: 7), json: JSONEncoder())
        for bad in [good.prefix(5), good + [0], Data([0x1f]), Data([0x10, 0])] {
            XCTAssertThrowsError(try WorkerCoding.decodeRequest(Data(bad), json: parse), "\(Array(bad))")
        }
        for bad in [Data([0x10]), Data([0x10, 0x20]), Data([0x10, 1, 0]), Data([0x01, 0])] {
            XCTAssertThrowsError(try WorkerCoding.decodeReply(bad, json: parse), "\(Array(bad))")
        }
    }

    /// A frame far larger than the socket's buffer (a camera picture) arrives whole and in order:
    /// the sender's one `sendmsg` goes out in parts.
    func testAFrameLargerThanTheSocketBufferArrivesWhole() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let picture = (0..<3_000_001).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let header = try WorkerCoding.encode(WorkerRequest.videoAppendFrame(pts: 99, poster: false, shared: 0), json: JSONEncoder())
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
        let header = try WorkerCoding.encode(WorkerRequest.videoShareFrames(bytes: 8192), json: JSONEncoder())
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
        var server = WorkerServer()
        var out: [UInt8] = []
        let camera = CameraFrameFormat(fourcc: FourCC.yuyv.rawValue, width: 64, height: 48, bytesPerLine: 128)
        XCTAssertNil(server.handle(.openVideoWriter(path: path, video: VideoEncoding(width: 64, height: 48, fps: 25, preset: "ultrafast"),
                                                    camera: camera, audio: nil), payload: [], out: &out).failure)
        let frameBytes = 128 * 48
        let unpassed = server.handle(.videoShareFrames(bytes: frameBytes), payload: [], out: &out)
        XCTAssertTrue("\(String(describing: unpassed.failure))".contains("no memory file"), "\(unpassed)")
        let shared = try SharedMemory(creating: "recd-test-frames", bytes: frameBytes)
        let passed = try XCTUnwrap(shared.descriptor)
        let copy = dup(passed)
        XCTAssertNil(server.handle(.videoShareFrames(bytes: frameBytes), payload: [], descriptor: copy, out: &out).failure)
        XCTAssertEqual(fcntl(copy, F_GETFD), -1, "the worker closed the descriptor it was given (its mapping stays)")
        for i in 0..<10 {
            for y in 0..<48 { for x in 0..<64 { shared.bytes[y * 128 + x * 2] = UInt8(16 + (x + i * 4) % 200); shared.bytes[y * 128 + x * 2 + 1] = 128 } }
            let reply = server.handle(.videoAppendFrame(pts: Int64(i) * 3600, poster: i == 0, shared: frameBytes), payload: [], out: &out)
            XCTAssertNil(reply.failure)
            XCTAssertEqual(reply.appended, true)
            if i == 0 { XCTAssertEqual(Array(out.prefix(2)), [0xFF, 0xD8], "the poster, a JPEG of the shared frame") }
        }
        let tooLarge = server.handle(.videoAppendFrame(pts: 36_000, poster: false, shared: frameBytes + 1), payload: [], out: &out)
        XCTAssertTrue("\(String(describing: tooLarge.failure))".contains("in a memory file of \(frameBytes)"), "\(tooLarge)")
        // The same frame as a payload still goes.
        let payload = [UInt8](UnsafeRawBufferPointer(shared.bytes))
        XCTAssertEqual(server.handle(.videoAppendFrame(pts: 36_000, poster: false, shared: 0), payload: payload, out: &out).appended, true)
        XCTAssertNil(server.handle(.videoFinishFrames, payload: [], out: &out).failure)
        XCTAssertNil(server.handle(.videoClose, payload: [], out: &out).failure)
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
            var server = WorkerServer()
            var out: [UInt8] = []
            XCTAssertNil(server.handle(.openDecoder(path: path), payload: [], out: &out).failure)
            XCTAssertNil(server.handle(.decoderSetOutput(rate: 48000, channels: 1), payload: [], out: &out).failure)
            var reads: [Int] = [], samples: [Int16] = []
            while true {
                out = []
                let reply = server.handle(.decoderRead(atLeast: atLeast), payload: [], out: &out)
                XCTAssertNil(reply.failure)
                guard let block = reply.block else { break }
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
