// Making a recording's file durable while it is written, so a power cut loses about what kill -9
// loses (the fragment being built), not everything still in the kernel's page cache.
import Foundation
import Synchronization

/// fdatasync of one growing file as it grows, on a thread of its own.
///
/// The encoder thread writes a recording one fragment at a time (about one a second) into the page
/// cache; kill -9 cannot touch what is there, a power cut loses all of it (on ext4 with delayed
/// allocation even the file's size: a cut 6 s into a take left nothing to salvage). This thread
/// makes it durable without ever making the capture or encoder threads wait on the disk:
/// - once at the start, fsync of the directory, so the new file's entry survives (its row is
///   already committed: recovery finds the row and salvages the file);
/// - then it sleeps until the writer says a fragment landed (`written()`, called by the muxer
///   after the write: the fragment is in the file whole) and calls fdatasync on a descriptor of its
///   own (any descriptor of the inode flushes all of its data), at most twice per interval; a file
///   that changes without a word from its writer is synced once per interval (a trickle). So with
///   one-second fragments each fragment is on the disk as soon as it is written, one fdatasync and
///   one wake-up a second. (It used to look at the file every 50 ms: 20 wake-ups a second, 9% of a
///   FLAC recording's CPU.)
/// - at `stop()` (the writer has closed the file), one last fdatasync if it changed: the whole
///   fragmented file is on the disk before finalization starts, so a cut while the stop is under way
///   loses nothing (the VM's flush-point replay found a take lost whole when its first fragment
///   landed just before the stop).
/// An error (EIO, ENOSPC on a filesystem that allocates at writeback) goes to `onError` once, as
/// other disk errors of a recording do, and the thread ends. `stop()` wakes and joins it.
public final class PeriodicDataSync: @unchecked Sendable {
    public let path: String
    public let intervalMs: Int
    private let onError: @Sendable (StorageError) -> Void
    /// fdatasync; replaceable so tests can make it fail.
    private let syncCall: @Sendable (Int32) -> Int32
    /// Signalled by `written()` and by `stop()`.
    private let wake = DispatchSemaphore(value: 0)
    /// Whether a `written()` is waiting for the thread (so a burst of them signals once).
    private let wakePending = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let counters = Mutex(Counters())

    public struct Counters: Sendable {
        public var syncs = 0
        /// Bytes of the file at its last fdatasync.
        public var syncedBytes: Int64 = 0
        public var longestSyncMs = 0.0
    }

    /// Nil when `intervalMs` is 0 or less (the cadence is off). Nothing runs until `start()`.
    public init?(path: String, intervalMs: Int, onError: @escaping @Sendable (StorageError) -> Void,
                 sync: @escaping @Sendable (Int32) -> Int32 = { fdatasync($0) }) {
        guard intervalMs > 0 else { return nil }
        self.path = path
        self.intervalMs = intervalMs
        self.onError = onError
        syncCall = sync
    }

    /// Starts the thread (once).
    public func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { [self] in
            self.run()
            self.ended.signal()
        }
        thread.name = "recd-data-sync"
        thread.start()
    }

    /// The writer has put a whole fragment into the file. Any thread; never blocks.
    public func written() {
        guard !wakePending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
    }

    /// Wakes the thread and waits for it to end, after its last fdatasync. Idempotent.
    public func stop() {
        guard started.load(ordering: .relaxed), !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        ended.wait()
    }

    public var stats: Counters { counters.withLock { $0 } }

    /// When to sync, given what the last two looks saw (a pure function, for the tests).
    /// `changed`: the file differs from what was last synced; `settled`: it is as it was at the
    /// previous look; `sinceSyncMs`: time since the last sync (or the start).
    public static func shouldSync(changed: Bool, settled: Bool, sinceSyncMs: Double, intervalMs: Int) -> Bool {
        guard changed else { return false }
        return settled ? sinceSyncMs >= Double(intervalMs) / 2 : sinceSyncMs >= Double(intervalMs)
    }

    private func run() {
        let directory = (path as NSString).deletingLastPathComponent
        do { try FileOps.sync(directory) } catch {
            onError(error)
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            onError(.storage(file: path, operation: "open (for fdatasync)", underlying: FileOps.errnoText()))
            return
        }
        defer { close(fd) }
        var synced = Version()
        var lastSync = DispatchTime.now().uptimeNanoseconds
        /// A whole fragment is in the file, held back by "at most twice per interval".
        var settledChange = false
        while true {
            // Asleep until the writer speaks or the stop; with a settled change held back, until it
            // may be synced; else at most an interval (a change nobody announced).
            let waitMs = settledChange ? max(1, intervalMs / 2 - Int((DispatchTime.now().uptimeNanoseconds - lastSync) / 1_000_000))
                                       : intervalMs
            let signalled = wake.wait(timeout: .now() + .milliseconds(waitMs)) == .success
            if signalled { wakePending.store(false, ordering: .releasing) }
            let stopping = stopped.load(ordering: .acquiring)
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                onError(.storage(file: path, operation: "fstat", underlying: FileOps.errnoText()))
                return
            }
            let now = Version(st)
            if stopping {
                if now != synced, !sync(fd, size: now.size) { return }
                return
            }
            if signalled { settledChange = true }
            let elapsedMs = Double(DispatchTime.now().uptimeNanoseconds - lastSync) / 1e6
            guard Self.shouldSync(changed: now != synced, settled: settledChange, sinceSyncMs: elapsedMs,
                                  intervalMs: intervalMs) else {
                if now == synced { settledChange = false }
                continue
            }
            guard sync(fd, size: now.size) else { return }
            synced = now
            settledChange = false
            lastSync = DispatchTime.now().uptimeNanoseconds
        }
    }

    /// One fdatasync, counted; false (reported) when it failed.
    private func sync(_ fd: Int32, size: Int64) -> Bool {
        let t0 = DispatchTime.now().uptimeNanoseconds
        var result = syncCall(fd)
        while result != 0 && errno == EINTR { result = syncCall(fd) }
        guard result == 0 else {
            onError(.storage(file: path, operation: "fdatasync", underlying: FileOps.errnoText()))
            return false
        }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
        counters.withLock {
            $0.syncs += 1
            $0.syncedBytes = size
            $0.longestSyncMs = max($0.longestSyncMs, ms)
        }
        return true
    }

    /// What tells that a file changed: its size and modification time.
    private struct Version: Equatable {
        public var size: Int64 = -1
        public var mtimeNs: Int64 = -1
        public init() {}
        public init(_ st: stat) {
            size = Int64(st.st_size)
            mtimeNs = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        }
    }
}
