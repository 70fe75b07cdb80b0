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
    /// A gate the held requests wait at until the test opens it.
    final class Gate: Sendable {
        let entered = Mutex(false)
        let state = Mutex<(opened: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            entered.withLock { $0 = true }
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    if !state.opened { state.waiters.append(continuation) }
                    return state.opened
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { state in
                state.opened = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Every caller is authenticated as `key` (the routes' own authentication is not what these tests are about).
    static func limited(_ limit: ExpensiveRequestLimit) -> ExpensiveRequestLimitMiddleware<BasicRequestContext> {
        ExpensiveRequestLimitMiddleware(limit) { request, _ in request.headers[.authorization] ?? "key" }
    }

    @Test(.timeLimit(.minutes(1))) func oneMoreThanTheLimitIsA429AndCheapRequestsPass() async throws {
        let gate = Gate()
        let router = Router()
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: Self.limited(ExpensiveRequestLimit(limit: 1)))
        router.get("/audit/verify") { _, _ -> String in
            await gate.wait()
            return "verified"
        }
        router.get("/inventory") { _, _ in "live" }
        // Expensive by route (review 4, M4): these are, the payment with `as_of` is not.
        for path in [
            "/journal", "/console/audit", "/console/audit/as-of", "/console/audit/journal", "/console/audit/events.jsonl",
        ] {
            router.get(RouterPath(path)) { _, _ in "served" }
        }
        router.post("/console/reports") { _, _ in "uploaded" }
        router.post("/payment") { _, _ in "paid" }
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
            try await client.execute(uri: "/console/audit", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/inventory", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/payment?as_of=1", method: .post) { #expect($0.status == .ok) }
            try await client.execute(uri: "/no/such/path?as_of=1", method: .get) { #expect($0.status == .notFound) }
            gate.open()
            #expect(try await held == .ok)
            try await client.execute(uri: "/inventory?as_of=3", method: .get) { #expect($0.status == .ok) }
        }
    }

    /// N15: when the last expensive request ends, the memory it freed is given back (by default one `malloc_trim`
    /// soon after: `bench/memory.sh` measures what that returns); a cheap request, or one still running beside another,
    /// does not.
    @Test(.timeLimit(.minutes(1))) func theLastExpensiveRequestOutGivesTheMemoryBack() async throws {
        let idle = Mutex(0)
        let gate = Gate()
        let router = Router()
        router.add(middleware: Self.limited(ExpensiveRequestLimit(limit: 4) { idle.withLock { $0 += 1 } }))
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

    /// A count shared by concurrent tasks.
    final class Count: Sendable {
        let value = Mutex(0)
    }

    /// A streamed reply whose body waits at `gate` before its one part.
    static func streamed(_ gate: Gate) -> Response {
        Response(
            status: .ok,
            body: ResponseBody { writer in
                await gate.wait()
                try await writer.write(ByteBuffer(string: "part\n"))
                try await writer.finish(nil)
            }
        )
    }

    /// Review 4, M5: the slot was given back when the handler returned its streamed reply, before the body was written:
    /// 12 concurrent exports were 12 × 200 with the limit at 4. Held until the body ends: at most 4 run, 8 are 429 at
    /// once, and once the bodies end the slots are free again.
    @Test func aStreamedReplyHoldsItsSlotUntilItsBodyEnds() async throws {
        let gate = Gate()
        let router = Router()
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: Self.limited(ExpensiveRequestLimit(limit: 4, exportsPerKey: 100)))
        router.get("/console/audit/events.jsonl") { _, _ in Self.streamed(gate) }
        try await Application(router: router).test(.router) { client in
            let refused = Count()
            // The router framework's client serves concurrent requests (the tests above use it from `async let`s).
            let client = client
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        let status = try await client.execute(uri: "/console/audit/events.jsonl", method: .get) { $0.status }
                        if status == .tooManyRequests { refused.value.withLock { $0 += 1 } }
                        return status
                    }
                }
                // The refusals come at once; the admitted wait at the gate (bounded: unfixed, all 12 wait there).
                let started = ContinuousClock.now
                while refused.value.withLock({ $0 }) < 8, ContinuousClock.now - started < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(refused.value.withLock { $0 } == 8, "streams unfinished, \(12 - refused.value.withLock { $0 }) admitted with the limit at 4")
                gate.open()
                var statuses: [HTTPResponse.Status] = []
                for try await status in group { statuses.append(status) }
                #expect(statuses.filter { $0 == .ok }.count == 4 && statuses.filter { $0 == .tooManyRequests }.count == 8, "\(statuses)")
            }
            try await client.execute(uri: "/console/audit/events.jsonl", method: .get) { #expect($0.status == .ok) }
        }
    }

    /// Review 4, M5: exports are capped per key as the live feed's streams are: a key's one too many is 429 `busy`
    /// while another key is served; an export that ends gives its key's slot back.
    @Test func anExportBeyondItsKeysCapIsA429() async throws {
        let gate = Gate()
        let router = Router()
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: Self.limited(ExpensiveRequestLimit(limit: 10, exportsPerKey: 2)))
        router.get("/settlements/:id/report.csv") { _, _ in Self.streamed(gate) }
        try await Application(router: router).test(.router) { client in
            let a: HTTPFields = [.authorization: "a"]
            async let first = client.execute(uri: "/settlements/b1/report.csv", method: .get, headers: a) { $0.status }
            async let second = client.execute(uri: "/settlements/b1/report.csv", method: .get, headers: a) { $0.status }
            try await Task.sleep(for: .milliseconds(300))
            // Bounded either way: refused at once, or (unfixed) admitted and answered when the gate opens.
            async let third = client.execute(uri: "/settlements/b1/report.csv", method: .get, headers: a) { response in
                (response.status, String(buffer: response.body))
            }
            async let other = client.execute(uri: "/settlements/b1/report.csv", method: .get, headers: [.authorization: "b"]) { $0.status }
            try await Task.sleep(for: .milliseconds(300))
            gate.open()
            let (status, text) = try await third
            #expect(status == .tooManyRequests && text.contains("exports"), "\(status): \(text)")
            #expect(try await [first, second, other] == [.ok, .ok, .ok])
            try await client.execute(uri: "/settlements/b1/report.csv", method: .get, headers: a) { #expect($0.status == .ok) }
        }
    }
}
