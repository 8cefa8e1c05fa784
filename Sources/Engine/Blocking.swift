import Dispatch

/// Runs blocking work (device open/close, file finalization) on a Dispatch thread, off Swift's
/// cooperative pool, and awaits its result.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { cont in
        DispatchQueue.global(qos: .userInitiated).async {
            cont.resume(with: Result { try body() })
        }
    }
}
