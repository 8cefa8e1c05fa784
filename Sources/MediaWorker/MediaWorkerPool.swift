// recd's side: worker processes (`recd-media`) started on demand, lent out one user at a time, kept a
// while when idle and then ended. FFmpeg and the ~130 libraries it pulls in live only in them: recd
// itself links none of it (docs/design.md, "One FFmpeg boundary").
import CProcessShim
import Foundation
import MediaWire
import RecdAPI
import Synchronization

/// Starts, lends and ends media workers. One thread of its own ("media-workers") starts them —
/// a worker is killed when the *thread* that started it ends (PR_SET_PDEATHSIG), so none may come
/// from a pool thread that could exit — and ends idle ones when their time is up; it sleeps
/// otherwise (no timer while nothing is idle).
public final class MediaWorkerPool: @unchecked Sendable {
    public static let shared = MediaWorkerPool()
    package init() {}

    /// `normal` workers run as recd does; `background` ones at `SCHED_IDLE` (the loudness of older
    /// recordings, measured when nothing else wants the CPU).
    public enum Priority: String, Sendable { case normal, background }

    /// What a worker is lent for. A `take`'s worker encodes what recd captured (and converts it),
    /// writes it and finalizes that file: it parses no file from elsewhere, and it is lent again to
    /// the next take (a start costs a second of CPU on a slow board, at a take's first moments). It
    /// loaded FFmpeg once, in a sandbox of `Recordings/`, and does no job itself: each lease's is
    /// done by a process it forks, walled in to that job's files (`MediaWorkerLease(forTake:)`),
    /// which ends with the lease — no take's worker reads another recording. A `files` job is one
    /// job on the library's files — a trim, a waveform's or a transcript's decode, a playback, a
    /// probe, a poster — walled in to that job's files alone (`MediaWorkerLease(reading:writing:)`):
    /// an imported file's packets that take over its parser reach no other recording, no folder and
    /// no later job, for its process ends with its lease. When its files all lie in the library's
    /// folders (`Recordings/`, `Enhanced/`) a library worker forks that process, as a take's worker
    /// does, and is kept for the next job: a playback starts in a millisecond instead of the ~100 ms
    /// (a second on a slow board) of a new process loading FFmpeg, and nothing is started beside a
    /// take after it. A job on files elsewhere (a restore's) gets a worker of its own (`--one-job`),
    /// started for it and ended with it. An `upload`'s worker
    /// does one import's jobs in that import's own folder (`.uploads/<id>/`: the bytes received,
    /// the file made from them), in a sandbox of that folder alone — not another import's —, and
    /// ends with its lease.
    public enum Use: Sendable { case take, files, upload }

    private struct Idle {
        var connection: MediaWorkerConnection
        var until: Date?
    }

    private let lock = NSCondition()
    // All guarded by `lock`.
    private var executable = MediaWorkerPool.besideThisProgram
    private var idleSeconds: Double? = 30
    private var logLevel = "info"
    /// A take's worker's folders (`Recordings/`); empty: no worker is walled in (Landlock and
    /// seccomp), as in most unit tests.
    private var sandbox: [String] = []
    /// A library worker's folders (`Recordings/`, `Enhanced/`): a `files` job whose files all lie
    /// beneath them is forked by one (kept between jobs); another gets a worker of its own.
    private var library: [String] = []
    /// Counts the times the sandbox's folders were replaced (`sandboxFoldersReplaced`); a take's
    /// worker started before the last is never lent again.
    private var generation = 0
    private var idle: [Idle] = []
    /// Workers to start, each for a waiting `checkout` (its reply).
    private var toStart: [Start] = []
    private struct Start {
        var priority: Priority, use: Use
        /// A `files` job's worker that forks each job in the library's folders (and is kept).
        var forksLibraryJobs: Bool
        /// An upload's worker's folder.
        var folder: String?
        var reply: (Result<MediaWorkerConnection, MediaWorkerError>) -> Void
    }
    private var toEnd: [MediaWorkerConnection] = []
    private var thread: Thread?

    /// Seconds a worker may go without answering a request before it is taken for stalled and killed
    /// (`MediaWorkerError.stalled`): no job can hold a blocking thread for longer. A recording's
    /// per-block calls answer in milliseconds; a whole-file job gets more by its size. 60, or
    /// $RECD_MEDIA_STALL_SECONDS (the tests' short limit).
    public static let stallLimit: Int = {
        if let set = ProcessInfo.processInfo.environment["RECD_MEDIA_STALL_SECONDS"].flatMap(Int.init), set > 0 { return set }
        return 60
    }()

    /// Landlock's ABI version on this kernel (the workers' sandbox), or nil when it has none.
    public static var landlockABI: Int32? {
        let abi = recd_landlock_abi()
        return abi > 0 ? abi : nil
    }

    /// What Landlock adds beyond files at `abi`, in words for the log (seccomp covers the rest).
    public static func landlockScopes(_ abi: Int32) -> String {
        switch abi {
        case ..<4: return ""
        case 4, 5: return " with TCP refused"
        default: return " with TCP, signals and abstract sockets refused"
        }
    }

    /// Refuses memory that is both written and executed to this process, not to those it starts
    /// (PR_SET_MDWE with PR_MDWE_NO_INHERIT, Linux 6.6+): systemd's MemoryDenyWriteExecute= would
    /// reach the transcriber too, whose math library (oneDNN, in CTranslate2) writes its kernels at
    /// run time. The media workers refuse it for themselves (`MediaWorkerProcess`). Returns what to log.
    public static func refuseExecGain() -> String {
        let rc = recd_refuse_exec_gain(0)
        return rc == 0 ? "memory is never both writable and executable in recd (PR_SET_MDWE)"
            : "PR_SET_MDWE without inheritance is not available (\(String(cString: strerror(-rc))); Linux 6.6 has it): recd runs without W^X of its own"
    }

    /// `recd-media` in the directory of the running program (recd's, wherever it was installed;
    /// $RECD_MEDIA_WORKER overrides it).
    public static var besideThisProgram: String {
        if let set = ProcessInfo.processInfo.environment["RECD_MEDIA_WORKER"], !set.isEmpty { return set }
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((me as NSString).deletingLastPathComponent as NSString).appendingPathComponent("recd-media")
    }

    /// `executable`: the worker program. `idleSeconds`: how long a worker nobody uses is kept for
    /// the next job (nil: until recd exits; 0: not at all). `logLevel`: swift-log's name of the level
    /// the workers log FFmpeg's messages at. `sandbox`: a take's worker's folders (the data
    /// directory's `Recordings/`); with them every worker is walled in (Landlock and seccomp) — a
    /// job's to its job's files, an upload's to its folder (`checkout`) —; without, as in most unit
    /// tests, none is. `library`: the folders of a library worker (`Recordings/`, `Enhanced/`).
    public func configure(executable: String? = nil, idleSeconds: Double?, logLevel: String, sandbox: [String] = [],
                          library: [String] = []) {
        lock.withLock {
            if let executable { self.executable = executable }
            self.logLevel = logLevel
            self.idleSeconds = idleSeconds
            self.sandbox = sandbox
            self.library = sandbox.isEmpty ? [] : library
        }
        lock.signal()
    }

    /// For `take`, an idle take's worker or a new one, its job confined to `job`'s files; for
    /// `files`, the same of a library worker when `job`'s files are all in the library's folders,
    /// else a new worker of its own, confined to them; for `upload`, a new worker in `folder`'s sandbox.
    func checkout(_ priority: Priority, for use: Use, job: (reading: [String], writing: [String])? = nil,
                  folder: String? = nil) throws(MediaWorkerError) -> MediaWorkerConnection {
        precondition((use != .upload) == (job != nil) && (use == .upload) == (folder != nil), "a job names its files, an upload its folder")
        let forks = use == .files && lock.withLock { Self.beneath(library, job!.reading + job!.writing) }
        let connection = try idleOrNew(priority, for: use, forksLibraryJobs: forks, folder: folder)
        guard let job, connection.confinesPerJob else { return connection }
        do {
            for path in job.writing {
                // Landlock's rule is on the file itself: recd makes it (never through a link), the
                // worker's FFmpeg opens and truncates it.
                let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o666)
                guard fd >= 0 else { throw MediaWorkerError.failed("could not make \(path) for its media job: \(String(cString: strerror(errno)))") }
                close(fd)
            }
            try connection.call(WorkerOp.Confine(reading: job.reading, writing: job.writing), operation: "confining a media job to its files")
        } catch {
            lock.withLock { toEnd.append(connection) }
            lock.signal()
            throw (error as? MediaWorkerError) ?? .failed("\(error)")
        }
        return connection
    }

    /// Whether every one of `paths` lies beneath one of `folders` (by its absolute name, with no `..`:
    /// recd names the files itself), so that a library worker's job process may be walled in to it.
    package static func beneath(_ folders: [String], _ paths: [String]) -> Bool {
        !folders.isEmpty && paths.allSatisfy { path in
            path.hasPrefix("/") && !path.split(separator: "/").contains("..")
                && folders.contains { path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
        }
    }

    private func idleOrNew(_ priority: Priority, for use: Use, forksLibraryJobs: Bool, folder: String?) throws(MediaWorkerError) -> MediaWorkerConnection {
        let reused: MediaWorkerConnection? = lock.withLock {
            guard let i = idle.lastIndex(where: { $0.connection.priority == priority && $0.connection.use == use
                && $0.connection.forksLibraryJobs == forksLibraryJobs }) else { return nil }
            return idle.remove(at: i).connection
        }
        if let reused { return reused }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<MediaWorkerConnection, MediaWorkerError>?>(nil)
        lock.withLock {
            startThreadIfNeeded()
            toStart.append(Start(priority: priority, use: use, forksLibraryJobs: forksLibraryJobs, folder: folder, reply: { r in result.withLock { $0 = r }; done.signal() }))
        }
        lock.signal()
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Back from its user: a take's worker and a library worker are emptied (`reset`: their job's
    /// process ends) and kept for the next job (unless their sandbox holds replaced folders); the
    /// others end — whatever a file did to a parser stays with that process, and its walls were its job's.
    func checkin(_ connection: MediaWorkerConnection) {
        if !connection.isKept || lock.withLock({ connection.generation != generation }) {
            lock.withLock { toEnd.append(connection) }
            lock.signal()
            return
        }
        guard !connection.isBroken, (try? connection.call(WorkerOp.Reset(), operation: "reset")) != nil else {
            return   // already ended and reaped by the failed call
        }
        lock.withLock {
            let seconds = idleSeconds
            if seconds == 0 || idle.contains(where: { $0.connection.priority == connection.priority && $0.connection.use == connection.use }) {
                toEnd.append(connection)   // one idle take's worker, and one library worker, of each priority is enough
            } else {
                idle.append(Idle(connection: connection, until: seconds.map { Date().addingTimeInterval($0) }))
            }
        }
        lock.signal()
    }

    /// The folders a kept worker's sandbox names were replaced by others of the same name (a
    /// delete-all swaps `Recordings/` for a new, empty one): Landlock's rules hold the folders a
    /// worker saw at its start, so the idle take's and library workers end now and the busy ones
    /// when given back.
    public func sandboxFoldersReplaced() {
        lock.withLock {
            generation += 1
            toEnd += idle.map(\.connection)
            idle.removeAll()
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
                let start = toStart.removeFirst()
                let priority = start.priority, use = start.use
                let exe = executable, level = logLevel, generation = generation
                // A job's worker names its files at its first request (`checkout`); a take's and an
                // upload's enter their folders' sandbox at start.
                let walls: [String]
                switch use {
                case _ where sandbox.isEmpty: walls = []
                case .take: walls = ["--take"] + sandbox
                case .files where start.forksLibraryJobs: walls = ["--library"] + library
                case .files: walls = ["--one-job"]
                case .upload: walls = [start.folder!]
                }
                lock.unlock()
                let result = Result { () throws(MediaWorkerError) in
                    try MediaWorkerConnection(starting: exe, arguments: [priority.rawValue, level] + walls, priority: priority,
                                              use: use, generation: generation, confinesPerJob: !walls.isEmpty && use != .upload,
                                              forksLibraryJobs: start.forksLibraryJobs)
                }
                lock.lock()
                start.reply(result)
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
package final class MediaWorkerConnection: @unchecked Sendable {
    package let pid: pid_t
    let priority: MediaWorkerPool.Priority
    let use: MediaWorkerPool.Use
    /// The pool's `generation` when it started (a take's worker: the sandbox's folders it holds).
    let generation: Int
    /// A library job's worker, or a take's, that waits for its job's files (`WorkerOp.Confine`) to
    /// wall the job in.
    let confinesPerJob: Bool
    /// A library worker (`--library`): forks each job, kept between jobs.
    package let forksLibraryJobs: Bool
    /// Kept for the next job when given back: a take's worker, or a library worker.
    var isKept: Bool { use == .take || forksLibraryJobs }
    private let fd: Int32
    private(set) var isBroken = false
    /// The payload of the last reply.
    private(set) var payload: [UInt8] = []

    /// Starts `executable PID PRIORITY LOG-LEVEL [DIR…]` with one end of a new socket pair as its fd 3.
    package init(starting executable: String, arguments: [String], priority: MediaWorkerPool.Priority, use: MediaWorkerPool.Use,
         generation: Int = 0, confinesPerJob: Bool = false, forksLibraryJobs: Bool = false) throws(MediaWorkerError) {
        (pid, fd) = try Self.spawn(executable, arguments: arguments)
        self.generation = generation
        self.confinesPerJob = confinesPerJob
        self.forksLibraryJobs = forksLibraryJobs
        self.priority = priority
        self.use = use
    }

    /// Starts `executable PID VERSION ARGUMENTS…` (PID: recd's, which it checks; VERSION: recd's, which
    /// it must be) with one end of a new socket
    /// pair as its descriptor 3; returns its pid and recd's end. The media workers and the transcriber.
    static func spawn(_ executable: String, arguments: [String]) throws(MediaWorkerError) -> (pid: pid_t, fd: Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw .spawnFailed(executable: executable, call: "socketpair", code: errno)
        }
        let args = [executable, String(getpid()), RecdVersion.current] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = recd_spawn_with_channel(executable, &argv, fds[1], &pid)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw .spawnFailed(executable: executable, call: "posix_spawn", code: rc)
        }
        return (pid, fds[0])
    }

    /// Sends `op` (and `sending` as its payload, `passing` as a descriptor the worker gets a copy
    /// of), waits for its reply; the reply's payload is in `payload` until the next call. Calls
    /// `onOutput` once for each time a writer's output reached its file during the call. Throws what
    /// the worker threw, or `died` when it is gone.
    @discardableResult
    package func call<Op: WorkerOperation>(_ op: Op, sending: UnsafeRawBufferPointer? = nil, passing descriptor: Int32? = nil,
                                   onOutput: (() -> Void)? = nil, operation: @autoclosure () -> String) throws -> Op.Reply {
        guard !isBroken else { throw MediaWorkerError.died(pid: pid, operation: operation(), status: "had already ended") }
        let answer: WorkerAnswer<Op.Reply>
        let seconds = MediaWorkerPool.stallLimit + (op.fileRead.map { path in
            // A second more for each 8 MB of the file a whole-file job reads (a remux of 4 GB from an SD card).
            var st = stat()
            return stat(path, &st) == 0 ? Int(st.st_size) / 8_000_000 : 0
        } ?? 0)
        // One deadline for the whole call, the request's bytes included: a stopped worker stops
        // reading, and a large request would otherwise wait in sendmsg for as long as it stays stopped.
        let deadline = ContinuousClock.now + .seconds(seconds)
        do {
            let header: [UInt8]
            do { header = try op.header() } catch { throw MediaWorkerError.failed("could not encode \(op): \(error)") }
            let reply: [UInt8]
            do {
                try WireIO.write(fd, header: header, payload: sending, passing: descriptor, deadline: deadline)
                reply = try WireIO.read(fd, payload: &payload, deadline: deadline)
            } catch is WireIO.TimedOut {
                // Closing the socket would not end a worker stuck in FFmpeg: it is killed, then reaped.
                kill(pid, SIGKILL)
                end()
                throw MediaWorkerError.stalled(pid: pid, operation: operation(), seconds: seconds)
            }
            do { answer = try WorkerAnswer(header: reply) } catch { throw WireIO.Closed(reason: "an unreadable reply (\(error))") }
        } catch let closed as WireIO.Closed {
            throw MediaWorkerError.died(pid: pid, operation: operation(), status: end(reason: closed.reason))
        }
        switch answer {
        case .reply(let reply, let outputs):
            for _ in 0..<outputs { onOutput?() }
            return reply
        case .failure(let failure): throw failure.error
        }
    }

    /// Closes the socket (the worker exits when it reads the end) and reaps the process. Returns how
    /// it ended, in words.
    @discardableResult
    package func end(reason: String? = nil) -> String {
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
        let code = (status >> 8) & 0xff
        // 127: the dynamic loader's exit when a library cannot be loaded (it says which on stderr).
        if code == 127 { return "could not start (exit status 127: a library it needs, such as FFmpeg's libavformat, could not be loaded; the loader's message is in recd's log)" }
        if code == 75 { return "is not of recd's version \(RecdVersion.current) (exit status 75: it was replaced, as by a package upgrade): restart recd" }
        return "exited with status \(code)\(reason.map { " (\($0))" } ?? "")"
    }
}

/// A worker lent to one user; returned to the pool by `release()` or when the lease goes. Share one
/// between objects that work together (an import's decoder and writer: the sound goes through recd
/// once, not twice).
public final class MediaWorkerLease: @unchecked Sendable {
    private let pool: MediaWorkerPool
    /// nil once given back.
    private let held: Mutex<MediaWorkerConnection?>

    /// A take's worker (`.take`), its job walled in to `reading` (for reading) and `writing` (made
    /// empty here when missing: the take's file, or what is finalized from it).
    public init(_ priority: MediaWorkerPool.Priority = .normal, forTake reading: [String], writing: [String],
                pool: MediaWorkerPool = .shared) throws(MediaWorkerError) {
        self.pool = pool
        held = Mutex(try pool.checkout(priority, for: .take, job: (reading, writing)))
    }

    /// An upload's worker: one import's jobs in its own folder alone (`.uploads/<id>/`).
    public init(_ priority: MediaWorkerPool.Priority = .normal, forUploadIn folder: String, pool: MediaWorkerPool = .shared) throws(MediaWorkerError) {
        self.pool = pool
        held = Mutex(try pool.checkout(priority, for: .upload, folder: folder))
    }

    /// A worker for one job on the library's files, walled in to them: it reads `reading` and
    /// reads and writes `writing` (made empty here when missing), and nothing else of the data
    /// directory; the process that did the job ends when given back (a library worker that forked
    /// it is kept for the next job).
    public init(_ priority: MediaWorkerPool.Priority = .normal, reading: [String], writing: [String] = [],
                pool: MediaWorkerPool = .shared) throws(MediaWorkerError) {
        self.pool = pool
        held = Mutex(try pool.checkout(priority, for: .files, job: (reading, writing)))
    }

    /// The worker, for `operation`; an error once the lease was given back (the worker may be another
    /// user's by then, so a late call must not reach it).
    package func connection(for operation: @autoclosure () -> String) throws(MediaWorkerError) -> MediaWorkerConnection {
        guard let connection = held.withLock({ $0 }) else {
            throw .failed("\(operation()): its media worker was already given back")
        }
        return connection
    }

    /// `MediaWorkerConnection.call` on the lent worker: its reply (the reply's payload is in
    /// `connection(for:).payload` until the next call).
    @discardableResult
    func call<Op: WorkerOperation>(_ op: Op, sending: UnsafeRawBufferPointer? = nil, onOutput: (() -> Void)? = nil,
                                   operation: @autoclosure () -> String) throws -> Op.Reply {
        try connection(for: operation()).call(op, sending: sending, onOutput: onOutput, operation: operation())
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
