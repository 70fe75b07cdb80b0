import Synchronization

/// `operation`'s result, or `timedOut` thrown once `timeout` has passed — then without waiting for `operation` (it is
/// cancelled, and a statement stuck on a dead connection ends when the pool retires that connection). Cancelling the
/// caller cancels `operation`. LedgerPostgres' `withDeadline(_:_:)` throws its "database unavailable" through this.
///
/// Every database statement goes through here, so it costs one task (`operation` runs in it, so the caller can be
/// answered while it is stuck) and an entry in ``DeadlineClock``: no timer armed and cancelled per statement (a day's
/// profile had the dispatch timer thread at 9 % of the daemon's samples when each statement slept in a task of its own).
package func withDeadline<T: Sendable>(
    _ timeout: Duration,
    timedOut: any Error,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let answer = Answer<T>()
    let work = Task {
        let result: Result<T, any Error>
        do { result = .success(try await operation()) } catch { result = .failure(error) }
        answer.give(result)
    }
    let entry = DeadlineClock.shared.add(after: timeout) {
        if answer.give(.failure(timedOut)) { work.cancel() }
    }
    defer { DeadlineClock.shared.remove(entry) }
    return try await withTaskCancellationHandler {
        try await withCheckedContinuation { answer.wait($0) }.get()
    } onCancel: {
        work.cancel()
    }
}

/// The writer's transaction outlived ``LedgerWriter/Configuration/transactionDeadline``: its outcome is unknown.
struct DeadlinePassed: Error {}

/// The first of the operation's result and the deadline, handed to a waiter that may arrive before or after it.
private final class Answer<T: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Result<T, any Error>, Never>)
        case given(Result<T, any Error>)
        case taken
    }
    private let state = Mutex(State.empty)

    /// Gives `result` unless an answer was given already; whether it was this one.
    @discardableResult
    func give(_ result: Result<T, any Error>) -> Bool {
        let (given, waiter): (Bool, CheckedContinuation<Result<T, any Error>, Never>?) = state.withLock { state in
            switch state {
            case .empty:
                state = .given(result)
                return (true, nil)
            case .waiting(let continuation):
                state = .taken
                return (true, continuation)
            case .given, .taken:
                return (false, nil)
            }
        }
        waiter?.resume(returning: result)
        return given
    }

    func wait(_ continuation: CheckedContinuation<Result<T, any Error>, Never>) {
        let ready: Result<T, any Error>? = state.withLock { state in
            switch state {
            case .empty:
                state = .waiting(continuation)
                return nil
            case .given(let result):
                state = .taken
                return result
            case .waiting, .taken:
                preconditionFailure("one waiter per answer")
            }
        }
        if let ready { continuation.resume(returning: ready) }
    }
}

/// One clock for the process's deadlines: a deadline is an entry in a table, and one task, running only while the table
/// has entries, wakes every ``tick`` and fires the entries that are due (so a deadline fires up to a tick late).
package final class DeadlineClock: Sendable {
    package static let shared = DeadlineClock(tick: .milliseconds(10))

    package struct Entry: Sendable {
        fileprivate let number: UInt64
    }

    private struct Due {
        let at: ContinuousClock.Instant
        let fire: @Sendable () -> Void
    }

    private struct State {
        var due: [UInt64: Due] = [:]
        var next: UInt64 = 0
        var ticking = false
        /// No entry is due before this (entries removed since may make it early, never late): most ticks look no further.
        var earliest: ContinuousClock.Instant?
    }

    private let tick: Duration
    private let state = Mutex(State())

    package init(tick: Duration) { self.tick = tick }

    /// Calls `fire` once `delay` has passed, unless the entry is removed first.
    package func add(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> Entry {
        let at = ContinuousClock.now + delay
        let (number, start) = state.withLock { state in
            state.next += 1
            state.due[state.next] = Due(at: at, fire: fire)
            if state.earliest.map({ at < $0 }) ?? true { state.earliest = at }
            defer { state.ticking = true }
            return (state.next, !state.ticking)
        }
        if start { Task.detached(priority: .high) { await self.run() } }
        return Entry(number: number)
    }

    package func remove(_ entry: Entry) {
        _ = state.withLock { $0.due.removeValue(forKey: entry.number) }
    }

    /// Ticks while there are entries; fires the due ones outside the lock.
    private func run() async {
        while true {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let fired: [Due]? = state.withLock { state in
                if state.due.isEmpty {
                    state.ticking = false
                    state.earliest = nil
                    return nil
                }
                guard let earliest = state.earliest, earliest <= now else { return [] }
                let due = state.due.filter { $0.value.at <= now }
                for number in due.keys { state.due[number] = nil }
                state.earliest = state.due.values.lazy.map(\.at).min()
                return Array(due.values)
            }
            guard let fired else { return }
            for entry in fired { entry.fire() }
        }
    }
}
