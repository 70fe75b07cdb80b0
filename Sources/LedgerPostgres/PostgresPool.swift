import LedgerMacros
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// A `PostgresClient` run as a service that tells its users when the pool has started.
///
/// PostgresNIO logs a warning ("Trying to lease connection from `PostgresClient`, but `PostgresClient.run()`
/// hasn't been called yet") for every connection leased before `run()` has begun. A service group starts its
/// services concurrently and a task group's child may start after the parent's next line, so the writer, the
/// sweepers, the catalog seeding or a command's first query can otherwise lease before the pool runs.
/// Whatever may query at start awaits ``running()`` first.
///
/// ``run()`` lets the waiters go as it calls `PostgresClient.run()`, which marks the pool as running before
/// its first suspension point, so the waiters' first lease comes after it.
@MemberwiseInit
public final class PostgresPool: Service, Sendable {
    /// The client, which must not be run elsewhere; lease from it only after ``running()`` has returned.
    public let client: PostgresClient

    private enum State {
        case waiting(next: Int, [Int: CheckedContinuation<Void, Never>])
        case started
    }

    private let state = Mutex(State.waiting(next: 0, [:]))

    /// Runs the pool until the task is cancelled or the service group shuts down.
    public func run() async {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state = .started }
            if case .waiting(_, let waiters) = state { return Array(waiters.values) }
            return []
        }
        for waiter in waiters { waiter.resume() }
        await client.run()
    }

    /// Returns once ``run()`` has started the pool (at once if it has), or when the task is cancelled.
    public func running() async {
        let id = state.withLock { state -> Int? in
            guard case .waiting(let next, let waiters) = state else { return nil }
            state = .waiting(next: next + 1, waiters)
            return next
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard case .waiting(let next, var waiters) = state, !Task.isCancelled else { return true }
                    waiters[id] = continuation
                    state = .waiting(next: next, waiters)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard case .waiting(let next, var waiters) = state else { return nil }
                let waiter = waiters.removeValue(forKey: id)
                state = .waiting(next: next, waiters)
                return waiter
            }
            waiter?.resume()
        }
    }
}
