import Catalog
import Glibc
import NIOPosix

/// Threads meant for blocking work: device opens and closes, fsyncs, SQLite writes (each commit an
/// fsync under `synchronous=FULL`), remuxes, recoveries and delete-all. Swift's cooperative pool has
/// as many threads as cores (two here), and Dispatch's global queues grow slowly past that (eight
/// blocking one-second items took 3 s here): one long repair there, or on an actor's executor, held up
/// every request and the watchdog with it. Eight threads, so that a long repair or delete-all leaves
/// room for the short writes that follow it.
public enum BlockingPool {
    public static let shared: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 8)
        pool.start()
        return pool
    }()
}

/// One thread for work nobody waits for (the loudness of older recordings, measured after start-up):
/// scheduled `SCHED_IDLE`, so it runs only on CPU time nothing else wants — decoding a library of
/// 100,000 files after an upgrade slows no request, recording or start-up. (Its own thread: a
/// thread's policy is its own, and one of `BlockingPool`'s could not be given back its priority
/// without privileges.)
public enum BackgroundPool {
    public static let shared: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        pool.submit { _ in
            var param = sched_param(sched_priority: 0)
            // 5 = SCHED_IDLE (Linux); pid 0 = this thread. Failing that, the lowest nice.
            if sched_setscheduler(0, 5, &param) != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
        }
        return pool
    }()
}

/// Runs work nobody waits for on `BackgroundPool` and awaits its result.
public func runInBackground<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await BackgroundPool.shared.runIfActive(body)
}

/// Runs blocking work on `BlockingPool` and awaits its result; the caller (an actor, a request's
/// task) is suspended meanwhile, not blocked, so its executor serves others.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await BlockingPool.shared.runIfActive(body)
}
