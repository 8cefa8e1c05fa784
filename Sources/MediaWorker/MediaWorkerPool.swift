// recd's side: worker processes started on demand, lent out one user at a time, kept a while when
// idle and then ended. FFmpeg and the ~130 libraries it pulls in live only in them, so recd itself
// never maps them (docs/design.md, "FFmpeg in a worker").
import CProcessShim
import Foundation
import Synchronization

/// Starts, lends and ends media workers. One thread of its own ("media-workers") starts them —
/// a worker is killed when the *thread* that started it ends (PR_SET_PDEATHSIG), so none may come
/// from a pool thread that could exit — and ends idle ones when their time is up; it sleeps
/// otherwise (no timer while nothing is idle).
public final class MediaWorkerPool: @unchecked Sendable {
    public static let shared = MediaWorkerPool()

    /// `normal` workers run as recd does; `background` ones at `SCHED_IDLE` (the loudness of older
    /// recordings, measured when nothing else wants the CPU).
    public enum Priority: String, Sendable { case normal, background }

    private struct Idle {
        var connection: MediaWorkerConnection
        var until: Date?
    }

    private let lock = NSCondition()
    // All guarded by `lock`.
    private var executable = "/proc/self/exe"
    private var idleSeconds: Double? = 30
    private var logLevel = "info"
    private var idle: [Idle] = []
    private var toStart: [(Priority, (Result<MediaWorkerConnection, MediaWorkerError>) -> Void)] = []
    private var toEnd: [MediaWorkerConnection] = []
    private var thread: Thread?

    /// `executable`: the program run as `executable --media-worker PID` (recd's own binary; the
    /// default, /proc/self/exe, is that even after an upgrade replaced the file). `idleSeconds`: how
    /// long a worker nobody uses is kept for the next job (nil: until recd exits; 0: not at all).
    /// `logLevel`: swift-log's name of the level the workers log FFmpeg's messages at.
    public func configure(executable: String? = nil, idleSeconds: Double?, logLevel: String) {
        lock.withLock {
            if let executable { self.executable = executable }
            self.logLevel = logLevel
            self.idleSeconds = idleSeconds
        }
        lock.signal()
    }

    /// An idle worker of `priority`, or a new one.
    func checkout(_ priority: Priority) throws(MediaWorkerError) -> MediaWorkerConnection {
        let reused: MediaWorkerConnection? = lock.withLock {
            guard let i = idle.lastIndex(where: { $0.connection.priority == priority }) else { return nil }
            return idle.remove(at: i).connection
        }
        if let reused { return reused }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<MediaWorkerConnection, MediaWorkerError>?>(nil)
        lock.withLock {
            startThreadIfNeeded()
            toStart.append((priority, { r in result.withLock { $0 = r }; done.signal() }))
        }
        lock.signal()
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Back from a user: emptied (`reset`) and kept for the next, or ended.
    func checkin(_ connection: MediaWorkerConnection) {
        guard !connection.isBroken, (try? connection.call(.reset, operation: "reset")) != nil else {
            return   // already ended and reaped by the failed call
        }
        lock.withLock {
            let seconds = idleSeconds
            if seconds == 0 || idle.contains(where: { $0.connection.priority == connection.priority }) {
                toEnd.append(connection)   // one idle worker of each priority is enough
            } else {
                idle.append(Idle(connection: connection, until: seconds.map { Date().addingTimeInterval($0) }))
            }
        }
        lock.signal()
    }

    private func startThreadIfNeeded() {
        guard thread == nil else { return }
        let t = Thread { [self] in run() }
        t.start()
        thread = t
    }

    private func run() {
        // Its name in /proc (Foundation's Thread.name does not reach the kernel's on Linux: a thread
        // otherwise keeps the name of the one that made it).
        _ = recd_set_thread_name("media-workers")
        lock.lock()
        while true {
            if !toStart.isEmpty {
                let (priority, reply) = toStart.removeFirst()
                let exe = executable, level = logLevel
                lock.unlock()
                let result = Result { () throws(MediaWorkerError) in
                    try MediaWorkerConnection.start(exe, arguments: [priority.rawValue, level], priority: priority)
                }
                lock.lock()
                reply(result)
                continue
            }
            let now = Date()
            toEnd += idle.filter { $0.until.map { $0 <= now } ?? false }.map(\.connection)
            idle.removeAll { $0.until.map { $0 <= now } ?? false }
            if !toEnd.isEmpty {
                let ending = toEnd
                toEnd = []
                lock.unlock()
                for c in ending { c.end() }
                lock.lock()
                continue
            }
            if let next = idle.compactMap(\.until).min() { _ = lock.wait(until: next) } else { lock.wait() }
        }
    }
}

/// One worker process and recd's end of its socket. Used by one thread at a time (its lease's owner).
final class MediaWorkerConnection: @unchecked Sendable {
    let pid: pid_t
    let priority: MediaWorkerPool.Priority
    private let fd: Int32
    private(set) var isBroken = false
    /// The payload of the last reply.
    private(set) var payload: [UInt8] = []
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    private init(pid: pid_t, fd: Int32, priority: MediaWorkerPool.Priority) {
        self.pid = pid; self.fd = fd; self.priority = priority
    }

    /// Starts `executable --media-worker PID PRIORITY LOG-LEVEL` with one end of a new socket pair as its fd 3.
    static func start(_ executable: String, arguments: [String], priority: MediaWorkerPool.Priority) throws(MediaWorkerError) -> MediaWorkerConnection {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw .spawnFailed(executable: executable, call: "socketpair", code: errno)
        }
        // argv[0]: the program's real name where /proc/self/exe is run (ps shows it).
        let name = (try? FileManager.default.destinationOfSymbolicLink(atPath: executable)) ?? executable
        let args = [name, MediaWorkerProcess.flag, String(getpid())] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = recd_spawn_with_channel(executable, &argv, fds[1], &pid)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw .spawnFailed(executable: executable, call: "posix_spawn", code: rc)
        }
        return MediaWorkerConnection(pid: pid, fd: fds[0], priority: priority)
    }

    /// Sends `request` (and `sending` as its payload, `passing` as a descriptor the worker gets a copy
    /// of), waits for the reply; the reply's payload is in `payload` until the next call. Throws what
    /// the worker threw, or `died` when it is gone.
    @discardableResult
    func call(_ request: WorkerRequest, sending: UnsafeRawBufferPointer? = nil, passing descriptor: Int32? = nil,
              operation: @autoclosure () -> String) throws -> WorkerReply {
        guard !isBroken else { throw MediaWorkerError.died(pid: pid, operation: operation(), status: "had already ended") }
        let reply: WorkerReply
        do {
            let header: Data
            do { header = try WorkerCoding.encode(request, json: encoder) } catch { throw MediaWorkerError.failed("could not encode \(request): \(error)") }
            try WireIO.write(fd, header: header, payload: sending, passing: descriptor)
            let answer = try WireIO.read(fd, payload: &payload)
            do { reply = try WorkerCoding.decodeReply(answer, json: decoder) } catch {
                throw WireIO.Closed(reason: "an unreadable reply (\(error))")
            }
        } catch let closed as WireIO.Closed {
            throw MediaWorkerError.died(pid: pid, operation: operation(), status: end(reason: closed.reason))
        }
        if let failure = reply.failure { throw failure.error }
        return reply
    }

    /// Closes the socket (the worker exits when it reads the end) and reaps the process. Returns how
    /// it ended, in words.
    @discardableResult
    func end(reason: String? = nil) -> String {
        guard !isBroken else { return "had already ended" }
        isBroken = true
        close(fd)
        var status: Int32 = 0
        var rc: pid_t
        repeat { rc = waitpid(pid, &status, 0) } while rc < 0 && errno == EINTR
        guard rc == pid else { return reason.map { "ended (\($0))" } ?? "ended" }
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS are macros: their definitions, on the status word.
        let signal = status & 0x7f
        if signal != 0 && signal != 0x7f {
            let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
            return "was killed by signal \(signal) (\(name))"
        }
        return "exited with status \((status >> 8) & 0xff)\(reason.map { " (\($0))" } ?? "")"
    }
}

/// A worker lent to one user; returned to the pool by `release()` or when the lease goes. Share one
/// between objects that work together (an import's decoder and writer: the sound goes through recd
/// once, not twice).
public final class MediaWorkerLease: @unchecked Sendable {
    private let pool: MediaWorkerPool
    /// nil once given back.
    private let held: Mutex<MediaWorkerConnection?>

    public init(_ priority: MediaWorkerPool.Priority = .normal, pool: MediaWorkerPool = .shared) throws(MediaWorkerError) {
        self.pool = pool
        held = Mutex(try pool.checkout(priority))
    }

    /// The worker, for `operation`; an error once the lease was given back (the worker may be another
    /// user's by then, so a late call must not reach it).
    func connection(for operation: @autoclosure () -> String) throws(MediaWorkerError) -> MediaWorkerConnection {
        guard let connection = held.withLock({ $0 }) else {
            throw .failed("\(operation()): its media worker was already given back")
        }
        return connection
    }

    /// `MediaWorkerConnection.call` on the lent worker: its reply (the reply's payload is in
    /// `connection(for:).payload` until the next call).
    @discardableResult
    func call(_ request: WorkerRequest, sending: UnsafeRawBufferPointer? = nil, passing descriptor: Int32? = nil,
              operation: @autoclosure () -> String) throws -> WorkerReply {
        try connection(for: operation()).call(request, sending: sending, passing: descriptor, operation: operation())
    }

    /// Gives the worker back now, for the next user (a recording's writer does when the file is
    /// finished, so the finalizing remux that follows reuses it rather than start a second worker).
    /// Idempotent; the lease is of no use after it.
    public func release() {
        let connection: MediaWorkerConnection? = held.withLock { c in
            defer { c = nil }
            return c
        }
        if let connection { pool.checkin(connection) }
    }

    deinit { release() }
}
