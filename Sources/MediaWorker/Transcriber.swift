// recd's side of the transcriber (transcribe/recd-transcribe.py): one Python process running Whisper,
// started through `recd-media --transcriber` (idle priority, ends with recd, Landlock), fed 16 kHz mono
// sound over a socket pair, answering segments of words with their times. One job at a time; recd
// ends it when nothing is left to transcribe (it holds ~400 MB while it runs).
import CProcessShim
import Foundation
import MediaWire
import RecdAPI

/// The sample rate and channels Whisper takes.
public enum TranscriberInput {
    public static let sampleRate = 16_000
    public static let channels = 1
}

/// The transcriber's protocol, defined once: what recd sends (`Request`) and what it answers
/// (`Reply`), each frame a header of JSON in recd's worker framing (`WireIO`). transcribe/recd-transcribe.py
/// speaks it; `TranscriberWireTests` holds the script's own messages (`--protocol-samples`) to these types.
public enum TranscriberWire {
    /// recd → transcriber: `append` (with 16 kHz mono S16 samples as the payload), as many as the
    /// recording takes; then `transcribe`: the sound appended so far, then forgotten.
    public enum Operation: String, Codable, CaseIterable, Sendable { case append, transcribe }

    public struct Request: Codable, Sendable {
        public var op: Operation
        public init(_ op: Operation) { self.op = op }
        /// The header's bytes.
        public var header: [UInt8] { Array((try? JSONEncoder().encode(self)) ?? Data()) }
    }

    /// transcriber → recd, exactly one of: `ready` once the model is loaded; a `segment` as each is
    /// found; `done` after the last; `error` (the model could not load, or a job failed).
    public enum Reply: Decodable, Sendable, Equatable {
        case ready(model: String)
        case segment(TranscriptSegment)
        case done(language: String?, duration: Double?)
        case error(String)

        private enum Key: String, CodingKey, CaseIterable { case ready, segment, done, error }
        private struct Ready: Decodable { var model: String }
        private struct Done: Decodable { var language: String?; var duration: Double? }

        /// One key, a known one: a reply of another shape is the transcriber's failure, not a guess.
        public init(from decoder: any Decoder) throws {
            let keys = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
            guard keys.count == 1, let key = Key(rawValue: keys[0]) else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a reply must have one of \(Key.allCases.map(\.rawValue)), not \(keys)"))
            }
            let c = try decoder.container(keyedBy: Key.self)
            switch key {
            case .ready: self = .ready(model: try c.decode(Ready.self, forKey: .ready).model)
            case .segment: self = .segment(try c.decode(TranscriptSegment.self, forKey: .segment))
            case .done:
                let d = try c.decode(Done.self, forKey: .done)
                self = .done(language: d.language, duration: d.duration)
            case .error: self = .error(try c.decode(String.self, forKey: .error))
            }
        }

        private struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }
}

/// What went wrong with the transcriber (not with a recording).
public enum TranscriberError: Error, CustomStringConvertible, Sendable {
    /// Not installed where recd looked: the folder, and how to install it.
    case notInstalled(directory: String)
    /// It could not start, or ended, or broke the protocol: what it said or how it ended.
    case failed(String)

    public var description: String {
        switch self {
        case .notInstalled(let dir):
            // The folder named: the script's default is the source tree's .build/transcribe, not
            // where a built or installed recd looks.
            return "the transcriber is not installed in \(dir) (scripts/install-deps.sh --transcribe \(dir) installs it there)"
        case .failed(let text): return "the transcriber failed: \(text)"
        }
    }
}

/// One running transcriber. Used by one task at a time (the engine's `TranscriptionPass`); its calls
/// block, so they run on a blocking thread.
public final class Transcriber: @unchecked Sendable {
    public let model: String
    private let pid: pid_t
    private let fd: Int32
    private var ended = false
    /// Guards the pid between `stop` (any thread) and its reaping by `end`.
    private let reaping = NSLock()

    /// Whether `directory` holds an installed transcriber with `model`.
    public static func isInstalled(_ directory: String, model: String) -> Bool {
        let files = ["/venv/bin/python3", "/recd-transcribe.py", "/models/\(model)/model.bin", "/.installed"]
        return files.allSatisfy { FileManager.default.fileExists(atPath: directory + $0) }
    }

    /// Starts the transcriber of `directory` with `model`; `waitUntilLoaded` then waits for its model.
    /// Two steps, so that `stop` can end a load that a busy CPU makes slow (recd stopping meanwhile).
    /// `idle`: at `SCHED_IDLE` (`--transcribe-priority`). `launcher`: recd-media.
    public init(directory: String, model: String, idle: Bool = true,
                launcher: String = MediaWorkerPool.besideThisProgram) throws(TranscriberError) {
        guard Self.isInstalled(directory, model: model) else { throw .notInstalled(directory: directory) }
        self.model = model
        do {
            (pid, fd) = try MediaWorkerConnection.spawn(launcher, arguments: ["--transcriber", directory, model, idle ? "idle" : "normal"])
        } catch {
            throw .failed("\(error)")
        }
    }

    /// Waits until the model is loaded (a second or two on an idle machine; `seconds` at most).
    public func waitUntilLoaded(seconds: Int = 120) throws(TranscriberError) {
        do {
            switch try receive(deadline: .now + .seconds(seconds)) {
            case .ready: break
            case .error(let error): throw TranscriberError.failed(error)
            default: throw TranscriberError.failed("it did not say it was ready")
            }
        } catch is WireIO.TimedOut {
            kill(pid, SIGKILL)
            end()
            throw .failed("its model did not load within \(seconds) s, and it was stopped")
        } catch {
            end()
            throw error as? TranscriberError ?? .failed("\(error)")
        }
    }

    /// Sound for the job: 16 kHz mono samples, as many calls as it takes.
    public func append(_ samples: UnsafeBufferPointer<Int16>) throws(TranscriberError) {
        let seconds = MediaWorkerPool.stallLimit
        do {
            try WireIO.write(fd, header: Self.append, payload: UnsafeRawBufferPointer(samples),
                             deadline: .now + .seconds(seconds))
        } catch is WireIO.TimedOut {
            kill(pid, SIGKILL)
            end()
            throw .failed("it took no sound for \(seconds) s, and was stopped")
        } catch {
            throw .failed(died("\(error)"))
        }
    }

    /// Transcribes what was appended (then forgotten). `onSegment` gets each segment as it is found
    /// (its end: how far the job has come). Returns the segments and the language Whisper heard.
    /// `stallSeconds`: how long it may go without a segment before it is taken for stuck and killed.
    public func transcribe(stallSeconds: Int, onSegment: (TranscriptSegment) -> Void) throws(TranscriberError) -> (segments: [TranscriptSegment], language: String?) {
        do {
            try WireIO.write(fd, header: Self.transcribe, payload: nil, deadline: .now + .seconds(stallSeconds))
            var segments: [TranscriptSegment] = []
            while true {
                switch try receive(deadline: .now + .seconds(stallSeconds)) {
                case .error(let error): throw TranscriberError.failed(error)
                case .done(let language, _): return (segments, language)
                case .segment(let segment):
                    segments.append(segment)
                    onSegment(segment)
                case .ready: throw TranscriberError.failed("it said it was ready in the middle of a job")
                }
            }
        } catch let error as TranscriberError {
            throw error
        } catch is WireIO.TimedOut {
            kill(pid, SIGKILL)
            end()
            throw .failed("it gave no answer for \(stallSeconds) s, and was stopped")
        } catch {
            throw .failed(died("\(error)"))
        }
    }

    /// Closes the socket (the transcriber exits when it reads the end) and reaps it.
    public func end() {
        guard !ended else { return }
        ended = true
        close(fd)
        var status: Int32 = 0
        reaping.withLock { while waitpid(pid, &status, 0) < 0 && errno == EINTR {} }
    }

    /// Kills the transcriber now, from any thread (recd is stopping): the call waiting for it then
    /// fails at once instead of waiting for the job, which may take minutes, to finish.
    public func stop() {
        reaping.withLock {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == 0 { kill(pid, SIGKILL) }
        }
    }

    deinit { end() }

    /// The two requests' headers, encoded once.
    private static let append = TranscriberWire.Request(.append).header
    private static let transcribe = TranscriberWire.Request(.transcribe).header

    private func receive(deadline: ContinuousClock.Instant) throws -> TranscriberWire.Reply {
        var payload: [UInt8] = []
        let header = try WireIO.read(fd, payload: &payload, deadline: deadline)
        do {
            return try JSONDecoder().decode(TranscriberWire.Reply.self, from: Data(header))
        } catch {
            throw TranscriberError.failed("an answer recd does not read (\(error))")
        }
    }

    /// The transcriber ended: how, for the error.
    private func died(_ reason: String) -> String {
        end()
        return "it ended (\(reason))"
    }
}
