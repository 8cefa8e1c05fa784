// restic, run as a child process: the engine that keeps recd's library somewhere else (issue 48).
// recd never writes a repository itself: restic encrypts, deduplicates and verifies, on a local disk,
// SFTP, S3-compatible stores, rest-server and rclone. docs/design.md, "Backups".
import CProcessShim
import FoundationEssentials
import Glibc
import RecdAPI

/// Where the backups go and how restic reaches them. The password is only ever a file's path
/// (`--password-file`): never in an argument list or an environment another process can read.
public struct ResticRepository: Sendable, Equatable {
    /// restic's repository: a path, `sftp:host:/path`, `s3:…`, `rest:…`, `rclone:…`.
    public var location: String
    public var passwordFile: String
    /// restic's `-o key=value` options (`sftp.command=…`, `s3.storage-class=…`).
    public var options: [String]
    /// restic's cache (it cannot use ~/.cache under the units' read-only home); nil: none (a
    /// one-off restore).
    public var cacheDirectory: String?
    /// The restic program (found in PATH when recd starts).
    public var executable: String
    /// The snapshots' host name: recd's snapshots are found by it and the tag `recd`.
    public var host: String

    public init(location: String, passwordFile: String, options: [String] = [], cacheDirectory: String?,
                executable: String, host: String) {
        self.location = location; self.passwordFile = passwordFile; self.options = options
        self.cacheDirectory = cacheDirectory; self.executable = executable; self.host = host
    }

    /// `restic` in PATH (or `$RECD_RESTIC`), or nil.
    public static func findExecutable() -> String? {
        if let set = ProcessInfo.processInfo.environment["RECD_RESTIC"], !set.isEmpty { return set }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/restic"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The arguments every command starts with.
    var common: [String] {
        ["--repo", location, "--password-file", passwordFile] + (cacheDirectory.map { ["--cache-dir", $0] } ?? ["--no-cache"])
            + options.flatMap { ["-o", $0] }
    }
}

/// A restic command that failed, in the words a person acts on.
public struct ResticError: Error, CustomStringConvertible, Sendable {
    public var reason: BackupFailure
    public var message: String
    public var description: String { message }

    public init(reason: BackupFailure, message: String) { self.reason = reason; self.message = message }

    /// What restic's exit and standard error say (0.14 exits 1 for every failure: the text tells them
    /// apart; each case was measured, docs/decisions/0022-backups-through-restic.md).
    static func classify(status: Int32, stderr: String, command: String, repository: String) -> ResticError {
        // restic clears its progress line (ESC [2K) before some messages.
        let lines = stderr.split(separator: "\n").map { String($0).replacing("\u{1B}[2K", with: "") }
        let fatal = lines.first { $0.contains("Fatal: ") }.map { line in String(line.split(separator: "Fatal: ", maxSplits: 1).last ?? "") }
        let said = fatal ?? lines.last(where: { !$0.isEmpty }) ?? "exit status \(status)"
        let text = stderr.lowercased()
        let reason: BackupFailure
        if text.contains("wrong password or no key found") || text.contains("an empty password is not a password") {
            reason = .wrongPassword
        } else if text.contains("resolving password failed") {
            reason = .wrongPassword
        } else if text.contains("is there a repository at the following location") {
            reason = .noRepository
        } else if text.contains("no space left on device") || text.contains("disk quota exceeded") || text.contains("quota exceeded") {
            reason = .full
        } else if text.contains("repository is already locked") {
            reason = .locked
        } else if text.contains("subprocess ssh:") || text.contains("unable to start the sftp session") || text.contains("connection refused")
                    || text.contains("no such host") || text.contains("network is unreachable") || text.contains("timed out")
                    || text.contains("connection lost") || text.contains("i/o timeout") {
            reason = .unreachable
        } else {
            reason = .failed
        }
        let message: String
        switch reason {
        case .wrongPassword: message = "restic \(command): the password in the password file does not open \(repository) (\(said))"
        case .noRepository: message = "restic \(command): there is no repository at \(repository) yet: `recctl backup init` makes one (\(said))"
        case .full: message = "restic \(command): the repository \(repository) is full (\(said))"
        case .locked: message = "restic \(command): another restic holds \(repository)'s lock (\(said))"
        case .unreachable: message = "restic \(command): \(repository) could not be reached (\(lines.first { $0.contains("subprocess ssh:") }.map { "\($0); " } ?? "")\(said))"
        default: message = "restic \(command) failed (exit status \(status)): \(said)"
        }
        return ResticError(reason: reason, message: message)
    }
}

/// restic's `backup --json` lines (0.14: every field but the type and `percent_done` left out when zero).
struct ResticMessage: Decodable {
    var message_type: String
    var percent_done: Double?
    var total_files: Int?
    var files_done: Int?
    var total_bytes: Int64?
    var bytes_done: Int64?
    // The summary.
    var data_added: Int64?
    var total_files_processed: Int?
    var total_bytes_processed: Int64?
    var total_duration: Double?
    var snapshot_id: String?
}

/// One run of restic: started at idle priority (nice 19, the idle I/O class) with no standard input,
/// its output read line by line, interrupted with SIGINT (restic then removes its lock; SIGTERM
/// would leave it) — also when the thread that started it ends (the parent-death signal): run it on
/// a thread that waits for it. Blocking.
final class ResticRun: @unchecked Sendable {
    let pid: pid_t
    private let out: Int32
    private let err: Int32

    /// `workingDirectory`: where restic runs (a backup of `.` there keeps the snapshot's tree free
    /// of where recd's data lives).
    init(_ repository: ResticRepository, _ arguments: [String], workingDirectory: String? = nil) throws(ResticError) {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        // Close-on-exec (set just after: recd's other children close every inherited descriptor anyway).
        guard pipe(&outPipe) == 0 else { throw ResticError(reason: .failed, message: "pipe: \(String(cString: strerror(errno)))") }
        for fd in outPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard pipe(&errPipe) == 0 else {
            close(outPipe[0]); close(outPipe[1])
            throw ResticError(reason: .failed, message: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let args = [repository.executable] + repository.common + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let rc = recd_spawn_piped(repository.executable, &argv, workingDirectory, outPipe[1], errPipe[1], 1, SIGINT, &child)
        close(outPipe[1]); close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw ResticError(reason: rc == ENOENT ? .resticMissing : .failed,
                              message: "could not start \(repository.executable): \(String(cString: strerror(rc)))")
        }
        pid = child
        out = outPipe[0]
        err = errPipe[0]
    }

    /// Reads standard output to its end, a line at a time (`onLine`), and standard error beside it
    /// (poll: neither pipe can fill and stall restic); then reaps restic. Returns its exit status
    /// (128 + the signal that ended it, 127: it could not be run) and what it wrote.
    /// `stalled`, asked about once a second: true stops restic (SIGINT, then SIGKILL if it has not
    /// ended 10 s later: a process that hangs may not handle the first).
    func wait(onLine: (Substring) -> Void = { _ in }, stalled: () -> Bool = { false }) -> (status: Int32, stdout: String, stderr: String) {
        var all: [UInt8] = [], errBytes: [UInt8] = [], pending: [UInt8] = []
        var fds = [pollfd(fd: out, events: Int16(POLLIN), revents: 0), pollfd(fd: err, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var open = 2
        var interruptedAt: ContinuousClock.Instant?
        while open > 0 {
            let ready = poll(&fds, 2, 1000)
            guard ready >= 0 || errno == EINTR else { break }
            if let at = interruptedAt {
                if ContinuousClock.now - at > .seconds(10) { kill(pid, SIGKILL) }
            } else if stalled() {
                interrupt()
                interruptedAt = .now
            }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    fds[i].fd = -1
                    open -= 1
                    continue
                }
                if i == 1 { errBytes += buffer[0..<n]; continue }
                all += buffer[0..<n]
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    onLine(Substring(String(decoding: pending[..<newline], as: UTF8.self)))
                    pending.removeSubrange(...newline)
                }
            }
        }
        close(out); close(err)
        var status: Int32 = 0
        var rc: pid_t
        repeat { rc = waitpid(pid, &status, 0) } while rc < 0 && errno == EINTR
        let signal = status & 0x7f
        let code = signal != 0 ? 128 + signal : (status >> 8) & 0xff
        return (code, String(decoding: all, as: UTF8.self), String(decoding: errBytes, as: UTF8.self))
    }

    /// Asks restic to stop (it removes its lock first).
    func interrupt() { kill(pid, SIGINT) }
}

/// The commands recd runs. Each blocks until restic ends: call them on a thread of their own
/// (`ResticRun`'s death signal follows the thread that started it).
extension ResticRepository {
    /// The tag of every snapshot recd makes (restore and the list find them by it, on any host).
    public static let tag = "recd"

    /// `restic init`: makes the repository (once; an existing one is an error that says so).
    public func initialize() throws(ResticError) {
        let run = try ResticRun(self, ["init"])
        let r = run.wait()
        guard r.status == 0 else { throw ResticError.classify(status: r.status, stderr: r.stderr, command: "init", repository: location) }
    }

    /// `restic backup` of `stage` (its contents at the snapshot's root), reporting restic's progress;
    /// `started` gets the run, so that it can be interrupted. A run counts only with restic's summary
    /// and exit 0 (progress may reach 100 % and the save still fail, as on a full disk).
    /// `stallSeconds`: a run whose figures (files and bytes found, files and bytes read) do not move
    /// for this long is stopped and fails, so that a repository that stopped answering does not hold
    /// the backups up for ever.
    public func backup(stage: URL, stallSeconds: Double = 600, started: (any ResticInterruptible) -> Void = { _ in },
                       progress: (BackupProgressFigures) -> Void) throws(ResticError) -> (snapshotID: String, addedBytes: Int64, totalBytes: Int64) {
        // --ignore-ctime: the stage's hard links are made anew each run, which changes a file's
        // ctime; without it restic reads and hashes every recording again (size, mtime and inode
        // still tell a changed file).
        let run = try ResticRun(self, ["backup", "--json", "--host", host, "--tag", Self.tag, "--ignore-ctime", "."],
                                workingDirectory: stage.path)
        started(run)
        var summary: ResticMessage?
        var figures: [Int64] = [], moved = ContinuousClock.now, stalled = false
        let r = run.wait(onLine: { line in
            guard line.hasPrefix("{"), let m = try? JSONDecoder().decode(ResticMessage.self, from: Data(line.utf8)) else { return }
            switch m.message_type {
            case "status":
                progress(BackupProgressFigures(fraction: m.percent_done ?? 0, bytesDone: m.bytes_done ?? 0, totalBytes: m.total_bytes ?? 0,
                                               filesDone: m.files_done ?? 0, totalFiles: m.total_files ?? 0))
                let now = [Int64(m.files_done ?? 0), m.bytes_done ?? 0, Int64(m.total_files ?? 0), m.total_bytes ?? 0]
                if now != figures { figures = now; moved = .now }
            case "summary": summary = m
            default: break
            }
        }, stalled: {
            stalled = ContinuousClock.now - moved > .seconds(stallSeconds)
            return stalled
        })
        if stalled {
            throw ResticError(reason: .failed, message: "restic backup made no progress for \(Int(stallSeconds)) s and was stopped (--backup-stall; is \(location) still answering?)")
        }
        guard r.status == 0, let summary, let id = summary.snapshot_id else {
            if r.status == 128 + SIGINT { throw ResticError(reason: .failed, message: "restic backup was interrupted (recd is stopping, or the run was cancelled)") }
            throw ResticError.classify(status: r.status, stderr: r.stderr, command: "backup", repository: location)
        }
        return (id, summary.data_added ?? 0, summary.total_bytes_processed ?? 0)
    }

    /// `restic unlock` (only locks of runs that are gone: a killed backup's would keep `check` out),
    /// then `restic check --read-data-subset=subset`: whether the repository is sound, and restic's
    /// last words. Throws only when restic could not be run or the repository not opened.
    public func check(subset: String, started: (any ResticInterruptible) -> Void = { _ in }) throws(ResticError) -> (ok: Bool, message: String) {
        let unlocking = try ResticRun(self, ["unlock"])
        started(unlocking)
        let unlock = unlocking.wait()
        guard unlock.status == 0 else { throw ResticError.classify(status: unlock.status, stderr: unlock.stderr, command: "unlock", repository: location) }
        let checking = try ResticRun(self, ["check", "--read-data-subset=\(subset)"])
        started(checking)
        let r = checking.wait()
        let said = (r.stdout + r.stderr).split(separator: "\n").map { String($0).replacing("\u{1B}[2K", with: "") }
        if r.status == 0 {
            return (true, said.last { $0.contains("no errors were found") } ?? "no errors were found")
        }
        if r.status == 128 + SIGINT { throw ResticError(reason: .failed, message: "restic check was interrupted (recd is stopping)") }
        let failure = ResticError.classify(status: r.status, stderr: r.stderr, command: "check", repository: location)
        if failure.reason != .failed { throw failure }
        // What check found: its lines before the verdict ("Pack ID does not match", "pack …: does not exist").
        let found = said.filter { !$0.isEmpty && !$0.hasPrefix("using temporary cache") && !$0.hasPrefix("create exclusive lock")
            && !$0.hasPrefix("load indexes") && !$0.hasPrefix("check ") && !$0.hasPrefix("read ") && !$0.hasPrefix("[") }
        return (false, found.suffix(3).joined(separator: "; "))
    }

    /// recd's snapshots (tag `recd`, any host), newest first.
    public func snapshots() throws(ResticError) -> [BackupSnapshot] {
        struct Snapshot: Decodable { var short_id: String; var time: String; var hostname: String }
        let r = try ResticRun(self, ["snapshots", "--json", "--tag", Self.tag]).wait()
        guard r.status == 0 else { throw ResticError.classify(status: r.status, stderr: r.stderr, command: "snapshots", repository: location) }
        guard let list = try? JSONDecoder().decode([Snapshot].self, from: Data(r.stdout.utf8)) else {
            throw ResticError(reason: .failed, message: "restic snapshots: an answer recd cannot read: \(r.stdout.prefix(200))")
        }
        return list.compactMap { s in ResticTime.parse(s.time).map { BackupSnapshot(id: s.short_id, time: $0, hostname: s.hostname) } }
            .sorted { $0.time > $1.time }
    }

    /// `restic restore` of `snapshot` (an id, or nil: recd's newest) into `directory`; only the
    /// snapshot's paths `including` (such as `/catalog.sqlite`) when given.
    public func restore(snapshot: String?, into directory: String, including: [String] = []) throws(ResticError) {
        var args = ["restore", snapshot ?? "latest", "--target", directory]
        if snapshot == nil { args += ["--tag", Self.tag] }
        args += including.flatMap { ["--include", $0] }
        let r = try ResticRun(self, args).wait()
        guard r.status == 0 else { throw ResticError.classify(status: r.status, stderr: r.stderr, command: "restore", repository: location) }
    }
}

/// Which of recd's snapshots to keep (`--backup-keep`): restic's `forget` policy. A snapshot is kept
/// if any rule keeps it: the `last` newest, and the newest of each of the last `daily` days,
/// `weekly` weeks, `monthly` months, `yearly` years.
public struct ResticRetention: Sendable, Equatable, CustomStringConvertible {
    public static let rules = ["last", "daily", "weekly", "monthly", "yearly"]
    /// Rule and count, in `rules`' order.
    public let counts: [(rule: String, count: Int)]

    public static func == (a: Self, b: Self) -> Bool { a.counts.elementsEqual(b.counts) { $0 == $1 } }

    /// "daily=7,weekly=5,monthly=12" (any of `rules`, each 1-10000); nil for anything else.
    public init?(_ text: String) {
        var found: [String: Int] = [:]
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let kv = part.split(separator: "=", omittingEmptySubsequences: false)
            guard kv.count == 2, Self.rules.contains(String(kv[0])), found[String(kv[0])] == nil,
                  let n = Int(kv[1]), (1...10_000).contains(n) else { return nil }
            found[String(kv[0])] = n
        }
        guard !found.isEmpty else { return nil }
        counts = Self.rules.compactMap { r in found[r].map { (r, $0) } }
    }

    public var description: String { counts.map { "\($0.rule)=\($0.count)" }.joined(separator: ",") }
    var arguments: [String] { counts.flatMap { ["--keep-\($0.rule)", String($0.count)] } }
}

extension ResticRepository {
    /// `restic forget` of recd's snapshots of this host (another host's, and other programs' in a
    /// shared repository, are left alone) that `retention` does not keep; with `prune`, the data no
    /// snapshot uses any more is removed too (the slow part: it rewrites packs). Returns how many
    /// snapshots were kept and removed.
    public func forget(_ retention: ResticRetention, prune: Bool, started: (any ResticInterruptible) -> Void = { _ in }) throws(ResticError) -> (kept: Int, removed: Int) {
        let run = try ResticRun(self, ["forget", "--json", "--tag", Self.tag, "--host", host] + retention.arguments + (prune ? ["--prune"] : []))
        started(run)
        let r = run.wait()
        if r.status == 128 + SIGINT { throw ResticError(reason: .failed, message: "restic forget was interrupted (recd is stopping)") }
        guard r.status == 0 else { throw ResticError.classify(status: r.status, stderr: r.stderr, command: "forget", repository: location) }
        // The groups as JSON on one line; with --prune, prune's own report follows it as text.
        struct Group: Decodable { struct Snap: Decodable { var id: String }; var keep: [Snap]?; var remove: [Snap]? }
        guard let line = r.stdout.split(separator: "\n").first(where: { $0.hasPrefix("[") }),
              let groups = try? JSONDecoder().decode([Group].self, from: Data(line.utf8)) else {
            return (0, 0)   // nothing of recd's on this host yet: restic prints no groups
        }
        return (groups.reduce(0) { $0 + ($1.keep?.count ?? 0) }, groups.reduce(0) { $0 + ($1.remove?.count ?? 0) })
    }
}

/// A run that can be asked to stop.
public protocol ResticInterruptible: Sendable { func interrupt() }
extension ResticRun: ResticInterruptible {}

/// restic's progress figures, as it reports them.
public struct BackupProgressFigures: Sendable, Equatable {
    public var fraction: Double, bytesDone: Int64, totalBytes: Int64, filesDone: Int, totalFiles: Int
}

/// restic's times (RFC 3339 with nanoseconds, in the local zone's offset or Z).
enum ResticTime {
    static func parse(_ text: String) -> Date? {
        // Nanoseconds cut to milliseconds (what the parser reads).
        var t = text
        if let dot = t.firstIndex(of: "."), let end = t[dot...].firstIndex(where: { $0 == "Z" || $0 == "+" || $0 == "-" }) {
            let fraction = String(t[t.index(after: dot)..<end].prefix(3))
            t.replaceSubrange(dot..<end, with: "." + fraction + String(repeating: "0", count: 3 - fraction.count))
        }
        return (try? Date(t, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle()))
    }
}
