import LedgerPostgres
import Logging
import PostgresNIO
import Testing

/// The watcher's wake rule (issue 57): waiters are woken at most once per wake interval, with every commit since; a
/// commit after a quiet spell wakes them at once; a wait's timeout still ends it. No database: `confirm` and `wait` use
/// none (the watcher's pool is never run).
@Suite struct HeadWatcherWakeTests {
    static func watcher(wakeInterval: Duration) -> HeadWatcher {
        let logger = Logger(label: "HeadWatcherWakeTests")
        let unused = PostgresClient.Configuration(unixSocketPath: "/nonexistent/.s.PGSQL.5432", username: "none", password: nil, database: nil)
        return HeadWatcher(
            client: DatabaseClient(configuration: unused, backgroundLogger: logger),
            pollInterval: .seconds(60),
            wakeInterval: wakeInterval,
            logger: logger
        )
    }

    @Test func commitsWithinTheIntervalWakeTheWaitersOnceAtItsEnd() async throws {
        let interval = Duration.seconds(2)
        let watcher = Self.watcher(wakeInterval: interval)
        let clock = ContinuousClock()
        // The first commit after a quiet spell: published at once, a waiter returns without waiting.
        watcher.confirm(1)
        let woken = clock.now
        #expect(watcher.published == 1)
        #expect(await watcher.wait(beyond: 0, timeout: .seconds(10)) == 1)
        // Three more within the interval: the durable head moves, the published head waits for the interval's end.
        async let waited = watcher.wait(beyond: 1, timeout: .seconds(30))
        for position in Int64(2)...4 {
            watcher.confirm(position)
            #expect(watcher.head == position)
        }
        if clock.now - woken < interval { #expect(watcher.published == 1, "published within the interval") }
        let head = await waited
        #expect(head == 4, "one wake carries every commit of the interval")
        #expect(clock.now - woken >= interval, "woken \(clock.now - woken) after the last wake, within the interval")
        #expect(watcher.published == 4)
    }

    @Test func withoutAnIntervalEveryCommitWakes() async throws {
        let watcher = Self.watcher(wakeInterval: .zero)
        for position in 1...3 {
            async let waited = watcher.wait(beyond: Int64(position - 1), timeout: .seconds(10))
            try await Task.sleep(for: .milliseconds(20))
            watcher.confirm(Int64(position))
            #expect(await waited == Int64(position))
        }
    }

    @Test func aWaitEndsAtItsTimeoutWithThePublishedHead() async throws {
        let watcher = Self.watcher(wakeInterval: .milliseconds(50))
        watcher.confirm(7)
        let clock = ContinuousClock()
        let began = clock.now
        let head = await watcher.wait(beyond: 7, timeout: .milliseconds(150))
        #expect(head == 7)
        #expect(clock.now - began >= .milliseconds(150))
        // A timeout shorter than the deadline clock's tick, and one of zero: the wait still ends.
        #expect(await watcher.wait(beyond: 7, timeout: .milliseconds(1)) == 7)
        #expect(await watcher.wait(beyond: 7, timeout: .zero) == 7)
    }

    @Test func aCancelledWaitReturns() async throws {
        let watcher = Self.watcher(wakeInterval: .milliseconds(50))
        let task = Task { await watcher.wait(beyond: 0, timeout: .seconds(600)) }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        #expect(await task.value == 0)
    }
}
