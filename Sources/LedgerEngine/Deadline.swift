import Synchronization

/// `operation`'s result, or `timedOut` thrown once `timeout` has passed — then without waiting for `operation` (it is
/// cancelled, and a statement stuck on a dead connection ends when the pool retires that connection). Cancelling the
/// caller cancels `operation`. LedgerPostgres' `withDeadline(_:_:)` throws its "database unavailable" through this.
package func withDeadline<T: Sendable>(
    _ timeout: Duration,
    timedOut: any Error,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let work = Task { try await operation() }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let pending = Once(continuation)
            let timer = Task {
                try? await Task.sleep(for: timeout)
                if let waiting = pending.take() {
                    work.cancel()
                    waiting.resume(throwing: timedOut)
                }
            }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await work.value) } catch { result = .failure(error) }
                if let waiting = pending.take() {
                    timer.cancel()
                    waiting.resume(with: result)
                }
            }
        }
    } onCancel: {
        work.cancel()
    }
}

/// The writer's transaction outlived ``LedgerWriter/Configuration/transactionDeadline``: its outcome is unknown.
struct DeadlinePassed: Error {}

/// A continuation resumed by whichever comes first.
private final class Once<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>
    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }
    func take() -> CheckedContinuation<T, any Error>? { continuation.withLock { $0.take() } }
}
