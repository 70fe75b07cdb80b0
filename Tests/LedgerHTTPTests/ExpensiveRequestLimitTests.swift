import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerHTTP
import Synchronization
import Testing

/// Beyond the limit of expensive requests running at once, one more is 429 `busy` with `Retry-After`; cheap
/// requests are not counted; once one finishes, the next is admitted.
@Suite struct ExpensiveRequestLimitTests {
    /// A gate the held request waits at until the test opens it.
    final class Gate: Sendable {
        let entered = Mutex(false)
        let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let opened = Mutex(false)

        func wait() async {
            entered.withLock { $0 = true }
            await withCheckedContinuation { continuation in
                let now = opened.withLock { opened in
                    if !opened { waiter.withLock { $0 = continuation } }
                    return opened
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            let continuation = opened.withLock { opened in
                opened = true
                return waiter.withLock { $0.take() }
            }
            continuation?.resume()
        }
    }

    @Test func oneMoreThanTheLimitIsA429AndCheapRequestsPass() async throws {
        let gate = Gate()
        let router = Router()
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: ExpensiveRequestLimitMiddleware(limit: 1))
        router.get("/audit/verify") { _, _ -> String in
            await gate.wait()
            return "verified"
        }
        router.get("/inventory") { _, _ in "live" }
        try await Application(router: router).test(.router) { client in
            async let held = client.execute(uri: "/audit/verify", method: .get) { $0.status }
            while !gate.entered.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
            try await client.execute(uri: "/audit/verify", method: .get) { response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers[.retryAfter] == "1")
                #expect(String(buffer: response.body).contains(#""code":"busy""#))
            }
            try await client.execute(uri: "/inventory?as_of=3", method: .get) { #expect($0.status == .tooManyRequests) }
            // Review 3, N3: a journal page is expensive too.
            try await client.execute(uri: "/journal?from=2026-01-01&to=2027-01-01", method: .get) { #expect($0.status == .tooManyRequests) }
            // The console's verification is the same work.
            try await client.execute(uri: "/console/audit?verify=1", method: .get) { #expect($0.status == .tooManyRequests) }
            // So are its upload, as-of page, journal and exports; its other pages are not.
            for path in ["/console/audit/as-of?order=o", "/console/audit/journal?day=2026-06-17", "/console/audit/events.jsonl"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .tooManyRequests, "\(path)") }
            }
            try await client.execute(uri: "/console/reports", method: .post) { #expect($0.status == .tooManyRequests) }
            try await client.execute(uri: "/console/today", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/inventory", method: .get) { #expect($0.status == .ok) }
            gate.open()
            #expect(try await held == .ok)
            try await client.execute(uri: "/inventory?as_of=3", method: .get) { #expect($0.status == .ok) }
        }
    }

    /// N15: when the last expensive request ends, the memory it freed is given back (by default one `malloc_trim`
    /// soon after: `bench/memory.sh` measures what that returns); a cheap request, or one still running beside another,
    /// does not.
    @Test func theLastExpensiveRequestOutGivesTheMemoryBack() async throws {
        let idle = Mutex(0)
        let gate = Gate()
        let router = Router()
        router.add(middleware: ExpensiveRequestLimitMiddleware(limit: 4) { idle.withLock { $0 += 1 } })
        router.get("/audit/verify") { _, _ -> String in
            await gate.wait()
            return "verified"
        }
        router.get("/inventory") { _, _ in "live" }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/inventory", method: .get) { #expect($0.status == .ok) }
            #expect(idle.withLock { $0 } == 0, "a cheap request gave memory back")
            async let held = client.execute(uri: "/audit/verify", method: .get) { $0.status }
            while !gate.entered.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
            try await client.execute(uri: "/inventory?as_of=3", method: .get) { #expect($0.status == .ok) }
            #expect(idle.withLock { $0 } == 0, "an expensive request ended beside another, and memory was given back")
            gate.open()
            #expect(try await held == .ok)
            #expect(idle.withLock { $0 } == 1)
        }
    }
}
