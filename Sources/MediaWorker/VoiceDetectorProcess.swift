// recd's side of listening's voice detector: Silero VAD in the transcriber's environment
// (transcribe/recd-transcribe.py --voice-detector), started through `recd-media --voice-detector`
// (ends with recd, Landlock, seccomp), fed 16 kHz mono sound, answering one speech probability per
// 32 ms window. Its messages are `VoiceDetectorWire`'s.
import Foundation
import MediaWire

/// The voice detector's protocol: recd sends `detect` with 16 kHz mono S16 as the payload (whole
/// windows of `windowSamples`), or `reset`; the detector answers `ready` once, then `speech` per
/// `detect`, or `error`.
public enum VoiceDetectorWire {
    public static let windowSamples = 512
    public static let sampleRate = 16_000

    public enum Operation: String, Codable, CaseIterable, Sendable { case detect, reset }

    public struct Request: Codable, Sendable {
        public var op: Operation
        public init(_ op: Operation) { self.op = op }
        public var header: [UInt8] { Array((try? JSONEncoder().encode(self)) ?? Data()) }
    }

    /// Exactly one key of `ready`, `speech`, `error`.
    public struct Reply: Decodable, Sendable, Equatable {
        public struct Ready: Decodable, Sendable, Equatable { public var model: String }
        public var ready: Ready?
        public var speech: [Double]?
        public var error: String?
    }
}

/// One running voice detector. Its calls block: one thread (listening's detector thread) uses it.
public final class VoiceDetectorProcess: @unchecked Sendable {
    private let pid: pid_t
    private let fd: Int32
    private var ended = false
    public private(set) var model = ""

    /// Whether `directory` holds an installed transcriber (the detector is part of its environment).
    public static func isInstalled(_ directory: String) -> Bool {
        ["/venv/bin/python3", "/recd-transcribe.py", "/.installed"].allSatisfy { FileManager.default.fileExists(atPath: directory + $0) }
    }

    /// Starts the detector of the transcriber's `directory` and waits until its model is loaded.
    public init(directory: String, launcher: String = MediaWorkerPool.besideThisProgram, loadSeconds: Int = 60) throws(TranscriberError) {
        guard Self.isInstalled(directory) else { throw .notInstalled(directory: directory) }
        do {
            (pid, fd) = try MediaWorkerConnection.spawn(launcher, arguments: ["--voice-detector", directory])
        } catch {
            throw .failed("the voice detector did not start: \(error)")
        }
        do {
            let reply = try receive(seconds: loadSeconds)
            guard let ready = reply.ready else { throw TranscriberError.failed(reply.error ?? "the voice detector did not say it was ready") }
            model = ready.model
        } catch {
            end()
            throw error as? TranscriberError ?? .failed("the voice detector: \(error)")
        }
    }

    /// Each window's speech probability (0...1) for `samples` (16 kHz mono, whole windows), in order;
    /// the model's state carries over from the last call. `stallSeconds`: how long an answer may take
    /// before the detector is taken for stuck (and killed).
    public func detect(_ samples: UnsafeBufferPointer<Int16>, stallSeconds: Int = 10) throws(TranscriberError) -> [Double] {
        precondition(samples.count % VoiceDetectorWire.windowSamples == 0, "whole windows")
        do {
            try WireIO.write(fd, header: Self.detect, payload: UnsafeRawBufferPointer(samples), deadline: .now + .seconds(stallSeconds))
            let reply = try receive(seconds: stallSeconds)
            guard let speech = reply.speech else { throw TranscriberError.failed(reply.error ?? "an answer without probabilities") }
            guard speech.count == samples.count / VoiceDetectorWire.windowSamples else {
                throw TranscriberError.failed("\(speech.count) probabilities for \(samples.count / VoiceDetectorWire.windowSamples) windows")
            }
            return speech
        } catch let error as TranscriberError {
            kill(pid, SIGKILL)
            end()
            throw error
        } catch {
            kill(pid, SIGKILL)
            end()
            throw .failed("the voice detector: \(error is WireIO.TimedOut ? "no answer for \(stallSeconds) s" : "\(error)")")
        }
    }

    /// The next sound does not follow the last (capture was reopened).
    public func reset() throws(TranscriberError) {
        do { try WireIO.write(fd, header: Self.reset, payload: nil, deadline: .now + .seconds(10)) } catch {
            throw .failed("the voice detector: \(error)")
        }
    }

    /// Closes the socket (the detector exits when it reads the end) and reaps it.
    public func end() {
        guard !ended else { return }
        ended = true
        close(fd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    deinit { end() }

    private static let detect = VoiceDetectorWire.Request(.detect).header
    private static let reset = VoiceDetectorWire.Request(.reset).header

    private func receive(seconds: Int) throws -> VoiceDetectorWire.Reply {
        var payload: [UInt8] = []
        let header = try WireIO.read(fd, payload: &payload, deadline: .now + .seconds(seconds))
        return try JSONDecoder().decode(VoiceDetectorWire.Reply.self, from: Data(header))
    }
}
