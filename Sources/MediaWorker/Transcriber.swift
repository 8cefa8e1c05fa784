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

    /// Starts the transcriber of `directory` with `model` and waits until the model is loaded
    /// (a second or two; `loadSeconds` at most). `launcher`: recd-media.
    public init(directory: String, model: String, launcher: String = MediaWorkerPool.besideThisProgram,
                loadSeconds: Int = 120) throws(TranscriberError) {
        guard Self.isInstalled(directory, model: model) else { throw .notInstalled(directory: directory) }
        self.model = model
        do {
            (pid, fd) = try MediaWorkerConnection.spawn(launcher, arguments: ["--transcriber", directory, model])
        } catch {
            throw .failed("\(error)")
        }
        do {
            let first = try receive(deadline: .now + .seconds(loadSeconds))
            if let error = first.error { throw TranscriberError.failed(error) }
            guard first.ready != nil else { throw TranscriberError.failed("it did not say it was ready") }
        } catch {
            end()
            throw error as? TranscriberError ?? .failed("\(error)")
        }
    }

    /// Sound for the job: 16 kHz mono samples, as many calls as it takes.
    public func append(_ samples: UnsafeBufferPointer<Int16>) throws(TranscriberError) {
        let seconds = MediaWorkerPool.stallLimit
        do {
            try WireIO.write(fd, header: Array(#"{"op":"append"}"#.utf8), payload: UnsafeRawBufferPointer(samples),
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
            try WireIO.write(fd, header: Array(#"{"op":"transcribe"}"#.utf8), payload: nil, deadline: .now + .seconds(stallSeconds))
            var segments: [TranscriptSegment] = []
            while true {
                let message = try receive(deadline: .now + .seconds(stallSeconds))
                if let error = message.error { throw TranscriberError.failed(error) }
                if let done = message.done { return (segments, done.language) }
                guard let segment = message.segment else { throw TranscriberError.failed("an answer of no known kind") }
                segments.append(segment)
                onSegment(segment)
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

    /// One message from the transcriber (transcribe/recd-transcribe.py's docstring).
    private struct Message: Decodable {
        struct Ready: Decodable { var model: String }
        struct Done: Decodable { var language: String?; var duration: Double? }
        var ready: Ready?
        var segment: TranscriptSegment?
        var done: Done?
        var error: String?
    }

    private func receive(deadline: ContinuousClock.Instant) throws -> Message {
        var payload: [UInt8] = []
        let header = try WireIO.read(fd, payload: &payload, deadline: deadline)
        return try JSONDecoder().decode(Message.self, from: Data(header))
    }

    /// The transcriber ended: how, for the error.
    private func died(_ reason: String) -> String {
        end()
        return "it ended (\(reason))"
    }
}
