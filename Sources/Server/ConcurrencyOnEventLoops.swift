// Swift concurrency's jobs run on NIO's event loops instead of Dispatch's global queues.
@_spi(ExperimentalScheduling) @_spi(ExperimentalCustomExecutors) import _Concurrency
import CSwiftRuntimeHooks
import Glibc
import NIOCore
import NIOPosix

/// Makes NIO's singleton event loops (the threads that already serve the socket) Swift concurrency's
/// global executor, for immediate jobs and for timed ones (`Task.sleep`).
///
/// Why: on Linux, the first job that runs on one of Dispatch's global (non-overcommit) queues
/// starts libdispatch's thread-pool monitor, a one-second timer on its manager thread that never
/// stops: an idle recd woke 1–1.5 times a second for it alone (issue 17; any Swift program that
/// awaits does, see bench/idle.py). With every job on the event loops, no such queue ever runs
/// and an idle recd sleeps in `epoll_wait`. It also spares a request two thread hand-offs: its
/// handler runs on the event loop that read it (NIO picks the current loop when there is one).
///
/// What stays as it was: blocking work keeps its own threads (`BlockingPool`, the capture,
/// encoder and sync threads), so the loops are no more blocked than the cooperative pool was; the
/// main actor stays on the main thread; Dispatch still runs the signal sources.
public enum ConcurrencyOnEventLoops {
    /// What `install` managed to take over.
    public enum Installed: Sendable {
        /// Immediate and timed jobs run on the event loops.
        case all
        /// Immediate jobs and the runtime's timed hooks, but `Task.sleep` still schedules on
        /// Dispatch (the default executor could not be replaced).
        case allButSleeps
        /// Nothing: another global executor was installed first.
        case none

        /// For recd's start-up log: what runs where, and what it costs when not all of it took.
        public var description: String {
            switch self {
            case .all: return "Swift concurrency runs on NIO's event loops (jobs and timers): an idle recd does not wake"
            case .allButSleeps: return "Swift concurrency runs on NIO's event loops, but Task.sleep's timers stay on Dispatch: an idle recd wakes once a second"
            case .none: return "Swift concurrency stays on Dispatch (another global executor was installed first): an idle recd wakes once a second"
            }
        }
    }

    /// What the last `install` did (recd logs it once logging is set up).
    nonisolated(unsafe) public private(set) static var installed: Installed = .none

    /// Installs the hooks; call first thing in `main`, before any task runs. What took is also kept
    /// in `installed`.
    @discardableResult
    public static func install() -> Installed {
        installed = takeOver()
        return installed
    }

    private static func takeOver() -> Installed {
        // Immediate jobs (`swift_task_enqueueGlobal_hook`, reached by address: NIO's own take-over
        // finds it with dlsym, which fails where the runtime is linked in, as in the package). Each
        // job runs on an event loop as NIO's take-over does, but with `EventLoopTaskExecutor` as its
        // executor rather than the loop's: Swift 6.3's `Task.sleep` asks the job's executor to
        // schedule the wake-up, and only one that is a `SchedulingExecutor` keeps it off Dispatch.
        let immediateHook = hookVariable(0)
        guard immediateHook.pointee == nil else { return .none }
        let immediate: EnqueueHook = { job, _ in EventLoopTaskExecutor.shared.enqueue(job) }
        immediateHook.pointee = unsafeBitCast(immediate, to: UnsafeRawPointer.self)
        // The runtime's own timed entry points (`swift_task_enqueueGlobalWithDelay`/`…Deadline`,
        // which `Task.sleep` called before Swift 6.3) have their own hooks, left to Dispatch by NIO
        // (a `dispatch_after` on a global queue: the same monitor). Here they become event-loop
        // timers that enqueue the job, when due, through the hook above.
        let delayHook = hookVariable(1), deadlineHook = hookVariable(2)
        let afterDelay: DelayHook = { nanoseconds, job, _ in
            ConcurrencyOnEventLoops.enqueue(job, in: Int64(clamping: nanoseconds))
        }
        let atDeadline: DeadlineHook = { seconds, nanoseconds, _, _, clock, job, _ in
            // The deadline is on the sleeping clock (continuous or suspending); the delay from now
            // on that clock is what the event loop's timer needs.
            var nowSeconds: Int64 = 0, nowNanoseconds: Int64 = 0
            swiftGetTime(&nowSeconds, &nowNanoseconds, clock)
            // In floating point: a far deadline saturates rather than overflows (NIO's timers
            // saturate too).
            let delay = Double(seconds &- nowSeconds) * 1e9 + Double(nanoseconds &- nowNanoseconds)
            ConcurrencyOnEventLoops.enqueue(job, in: delay >= 9.2e18 ? .max : Int64(delay))
        }
        delayHook.pointee = unsafeBitCast(afterDelay, to: UnsafeRawPointer.self)
        deadlineHook.pointee = unsafeBitCast(atDeadline, to: UnsafeRawPointer.self)
        // Swift 6.3's `Task.sleep` calls neither: it asks the current scheduling executor, and in
        // an actor's code (a default actor has none) that is the default executor, Dispatch's.
        _createExecutors(factory: EventLoopExecutorFactory.self)
        return Task.defaultExecutor === EventLoopTaskExecutor.shared ? .all : .allButSleeps
    }

    // The hooks' types as the runtime declares them (Runtime/Concurrency.h): plain function
    // pointers with Swift's calling convention, the last argument the runtime's own implementation.
    private typealias DelayHook = @convention(thin) (UInt64, UnownedJob, @convention(thin) (UInt64, UnownedJob) -> Void) -> Void
    private typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob,
                                                        @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void) -> Void

    private typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// The runtime's hook variable (`recd_swift_executor_hook`: 0 immediate, 1 delay, 2 deadline).
    private static func hookVariable(_ which: Int32) -> UnsafeMutablePointer<UnsafeRawPointer?> {
        UnsafeMutableRawPointer(recd_swift_executor_hook(which)!).assumingMemoryBound(to: UnsafeRawPointer?.self)
    }

    /// Runs `job` on an event loop once `nanoseconds` have passed (at once when ≤ 0).
    fileprivate static func enqueue(_ job: UnownedJob, in nanoseconds: Int64) {
        guard nanoseconds > 0 else { return EventLoopTaskExecutor.shared.enqueue(job) }
        // A cancelled sleep still gets its job run when the timer fires (the runtime then finds
        // the sleep already resumed): the timer is not cancelled, as Dispatch's is not.
        let timerJob = SendableJob(job: job)
        MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(nanoseconds)) {
            EventLoopTaskExecutor.shared.enqueue(timerJob.job)
        }
    }

    fileprivate struct SendableJob: @unchecked Sendable { let job: UnownedJob }
}

/// Swift 6.3's executors (`@_spi(ExperimentalCustomExecutors)`): the platform's main executor,
/// and `EventLoopTaskExecutor` as the default one, which `Task.sleep` schedules its wake-up on.
enum EventLoopExecutorFactory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { PlatformExecutorFactory.mainExecutor }
    static var defaultExecutor: any TaskExecutor { EventLoopTaskExecutor.shared }
}

/// The executor every global job runs on: NIO's singleton event loops, jobs and timers.
///
/// A task executor, as Swift 6.3's own default executor is, and installed as the default executor
/// (`EventLoopExecutorFactory`): `Task.sleep` asks the current actor's executor, the task's
/// preferred one, the thread's task executor, then the default one for a `SchedulingExecutor`, and
/// in an actor's code (a default actor has no executor of its own) it gets to the default one.
/// Actors keep their own serial queues; this only decides the thread a job runs on, as the
/// cooperative pool did.
final class EventLoopTaskExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    static let shared = EventLoopTaskExecutor()

    func enqueue(_ job: UnownedJob) {
        // The loop the caller is on when it is one (no hand-off), otherwise the next.
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let sendable = ConcurrencyOnEventLoops.SendableJob(job: job)
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
        let (seconds, attoseconds) = delay.components
        // Saturating, as NIO's timers do: a far deadline is "never" rather than an overflow.
        let nanoseconds = seconds >= Int64.max / 1_000_000_000 ? Int64.max
            : seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
        ConcurrencyOnEventLoops.enqueue(unowned, in: nanoseconds)
    }
}

/// The runtime's clock reading for a clock id of `Task.sleep` (1 continuous, 2 suspending).
@_silgen_name("swift_get_time")
private func swiftGetTime(_ seconds: UnsafeMutablePointer<Int64>, _ nanoseconds: UnsafeMutablePointer<Int64>, _ clock: Int32)
