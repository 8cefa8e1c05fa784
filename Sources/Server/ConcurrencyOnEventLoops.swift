// Swift concurrency's jobs run on NIO's event loops instead of Dispatch's global queues.
@_spi(ExperimentalScheduling) @_spi(ExperimentalCustomExecutors) import _Concurrency
import NIOCore
import NIOPosix

/// Makes NIO's singleton event loops (the threads that already serve the socket) Swift concurrency's
/// default executor, for immediate jobs and for timed ones (`Task.sleep`).
///
/// Why: on Linux, the first job that runs on one of Dispatch's global (non-overcommit) queues
/// starts libdispatch's thread-pool monitor, a one-second timer on its manager thread that never
/// stops: an idle recd woke 1–1.5 times a second for it alone (issue 17; any Swift program that
/// awaits does, see bench/idle.py). With every job on the event loops, no such queue ever runs
/// and an idle recd sleeps in `epoll_wait`. It also spares a request two thread hand-offs: its
/// handler runs on the event loop that read it (NIO picks the current loop when there is one).
///
/// How: Swift 6.3's runtime sends every global job (`swift_task_enqueueGlobal`) and every timed
/// one (`Task.sleep`, and the runtime's own delay and deadline entry points) to the default
/// executor, which a program may choose once, before the first job (`_createExecutors`, still
/// `@_spi(ExperimentalCustomExecutors)`). The runtime's hook variables, which recd set before
/// (issue 17, reached by address from C), are no longer needed. `IdleTests` and the package test
/// (`scripts/deb-test.sh`, the runtime linked in) count the idle daemon's context switches: they
/// fail if a toolchain stops honouring the choice.
///
/// What stays as it was: blocking work keeps its own threads (`BlockingPool`, the capture,
/// encoder and sync threads), so the loops are no more blocked than the cooperative pool was; the
/// main actor stays on the main thread; Dispatch still runs the signal sources, on serial queues.
public enum ConcurrencyOnEventLoops {
    /// Chooses the executors; call first thing in `main`, before any task runs.
    public static func install() {
        _createExecutors(factory: EventLoopExecutorFactory.self)
    }
}

/// Swift 6.3's executors (`@_spi(ExperimentalCustomExecutors)`): the platform's main executor,
/// and `EventLoopTaskExecutor` as the default one.
enum EventLoopExecutorFactory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { PlatformExecutorFactory.mainExecutor }
    static var defaultExecutor: any TaskExecutor { EventLoopTaskExecutor.shared }
}

/// The executor every global job runs on: NIO's singleton event loops, jobs and timers.
///
/// A task executor, as Swift 6.3's own default executor is, so that each job runs with it as its
/// task executor: `Task.sleep` asks the current actor's executor, the task's preferred one, the
/// thread's task executor, then the default one for a `SchedulingExecutor`, and each of those
/// that it can reach is this one. Actors keep their own serial queues; this only decides the
/// thread a job runs on, as the cooperative pool did.
final class EventLoopTaskExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    static let shared = EventLoopTaskExecutor()

    func enqueue(_ job: UnownedJob) {
        // The loop the caller is on when it is one (no hand-off), otherwise the next.
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let sendable = SendableJob(job: job)
        loop.execute { sendable.job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        enqueue(UnownedJob(job))
    }

    /// `Task.sleep`'s wake-up: an event-loop timer. A clock whose durations are not `Duration`
    /// (the standard library's all are) is left to the platform's default executor, Dispatch.
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let unowned = UnownedJob(job)
        guard let delay = clock.now.duration(to: instant) as? Duration else {
            // Not `Task.defaultExecutor`: that is this executor.
            guard let dispatch = PlatformExecutorFactory.defaultExecutor as? any SchedulingExecutor else { return enqueue(unowned) }
            return dispatch.enqueue(ExecutorJob(unowned), at: instant, tolerance: tolerance, clock: clock)
        }
        guard delay > .zero else { return enqueue(unowned) }
        // A cancelled sleep still gets its job run when the timer fires (the runtime then finds
        // the sleep already resumed): the timer is not cancelled, as Dispatch's is not. NIO's
        // `TimeAmount` clamps a far deadline to "never" rather than overflowing.
        let timerJob = SendableJob(job: unowned)
        MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(delay)) {
            self.enqueue(timerJob.job)
        }
    }

    private struct SendableJob: @unchecked Sendable { let job: UnownedJob }
}
