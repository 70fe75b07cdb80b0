import Foundation
import LedgerAPI
import LedgerAcquirerService
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two real `ledgerd serve` processes on one database, in production mode: `LEDGERD_DATABASE_URL` names
/// an application login role (a member of `ledger_app`), and the first daemon applies the migrations
/// with `LEDGERD_MIGRATION_DATABASE_URL`, a separate login role that owns the database. Each process decides
/// payments in its own writer's batches, so the database alone stands between them and an oversell.
@Suite(.machine(.shared)) struct TwoDaemonsTests {
    /// `method path` on 127.0.0.1:`port` with `body` and `headers`; the status and the reply's text.
    static func call(
        _ port: Int,
        _ method: String,
        _ path: String,
        _ body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.timeoutInterval = 120
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
        }
        let (data, response) = try await TestHTTP.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// Starts daemon A with `first` (in `root/a`), then daemon B with `second` (in `root/b`), which gets the
    /// environment of the acquirer service A supervises: one acquirer for both, as real daemons share the real one.
    static func startPair(
        root: URL,
        log: URL,
        ports: (Int, Int),
        first: [String: String?],
        second: inout [String: String?]
    ) async throws -> (DaemonProcess, DaemonProcess) {
        let a = try await DaemonProcess.start(dataDirectory: root.appendingPathComponent("a"), port: ports.0, logFile: log, environment: first)
        second.merge(
            try SharedDatabase.acquirerEnvironment(
                supervisedBy: root.appendingPathComponent("a"),
                keyFile: root.appendingPathComponent("acquirer.key")
            )
        ) { $1 }
        let b = try await DaemonProcess.start(dataDirectory: root.appendingPathComponent("b"), port: ports.1, logFile: log, environment: second)
        return (a, b)
    }

    static func eventCount(_ db: TestDatabase, type: String) async throws -> Int64 {
        try await db.withOwner { client in
            var count: Int64 = -1
            for try await n in try await client.query("SELECT count(*) FROM ledger.events WHERE type = \(type)").decode(Int64.self) { count = n }
            return count
        }
    }

    @Test(.timeLimit(.minutes(3))) func twoDaemonsOnOneDatabaseSellTheLastUnitsOnceDrainOnSIGTERMAndReplayAKeyAfterARestart() async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        let shared = try await SharedDatabase.make(tag: tag)
        let (db, owner, app) = (shared.database, shared.owner, shared.app)
        func url(_ user: String) -> String { shared.url(user) }
        let root = URL(fileURLWithPath: "/tmp/ledgerd-two-\(tag)")
        defer { try? FileManager.default.removeItem(at: root) }
        let log = root.appendingPathComponent("daemons.log")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let common: [String: String?] = [
            "LEDGERD_DATABASE_URL": url(app), "LEDGERD_OPERATOR_KEYS": "op-\(tag)", "LEDGERD_AUDITOR_KEYS": "au-\(tag)",
            "LEDGERD_LOG_LEVEL": "warning",
        ]
        let portA = TestPorts.free()
        let portB = TestPorts.free()
        var first = common
        first["LEDGERD_MIGRATION_DATABASE_URL"] = url(owner)
        first["LEDGERD_SEED_DEMO_CATALOG"] = "true"
        var second = common
        second["LEDGERD_SEED_DEMO_CATALOG"] = "false"
        let pair = try await Self.startPair(root: root, log: log, ports: (portA, portB), first: first, second: &second)
        var a = pair.0
        let b = pair.1
        #expect(a.health?.status == 200, "daemon A did not come up:\n\(a.output())")
        #expect(b.health?.status == 200, "daemon B did not come up:\n\(b.output())")
        defer {
            a.process.terminate()
            b.process.terminate()
        }
        try #require(a.health?.status == 200 && b.health?.status == 200)
        // The migrations were applied by the owner: it owns the schema, the daemons' role does not.
        let schemaOwner = try await db.withOwner { client in
            var names: [String] = []
            for try await name in try await client.query("SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'ledger'")
                .decode(String.self)
            {
                names.append(name)
            }
            return names
        }
        #expect(schemaOwner == [owner])

        // 7 of the demo's 10 clocks are sold first; then 30 shoppers race for the last 3, half on each daemon.
        for _ in 0..<7 {
            let (status, text) = try await Self.call(portA, "POST", "/payment", StorefrontDriver.paymentBody())
            #expect(status == 200, "\(text)")
        }
        let statuses = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for i in 0..<30 {
                group.addTask { try await Self.call(i % 2 == 0 ? portA : portB, "POST", "/payment", StorefrontDriver.paymentBody()) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.filter { $0.0 == 200 }.count == 3, "\(statuses.map(\.0))")
        #expect(statuses.filter { $0.0 != 200 }.allSatisfy { $0.0 == 409 && isErrorBody($0.1) }, "\(statuses.filter { $0.0 != 200 })")
        for port in [portA, portB] {
            let (status, text) = try await Self.call(port, "GET", "/inventory")
            #expect(status == 200, "\(text)")
            let rows = try JSONDecoder().decode([StorefrontDriver.Product].self, from: Data(text.utf8))
            let clock = try #require(rows.first { $0.id == "clock" })
            #expect(clock.reserved == 10 && clock.available == 0 && clock.quantity_on_hand == 10, "\(clock)")
        }
        #expect(try await Self.eventCount(db, type: "OrderOpened") == 10)
        #expect(try await Self.eventCount(db, type: "AuthorizationHoldPlaced") == 10)

        // An Idempotency-Key answered by A is answered alike by A after a restart, and by B.
        let body = StorefrontDriver.paymentBody(amount: 3200, product: "Pen")
        let key = ["Idempotency-Key": "checkout-\(tag)"]
        let (firstStatus, firstReply) = try await Self.call(portA, "POST", "/payment", body, headers: key)
        #expect(firstStatus == 200, "\(firstReply)")
        // SIGTERM while payments are in flight on A: every request answered is answered in full, every
        // order acknowledged is in the log, authorized, and A exits cleanly.
        let (replies, signalled) = AsyncStream<Void>.makeStream()
        // Each request's reply (nil: none) and when it came: the drain is shown by replies that came after the signal,
        // not by the one that triggered it.
        let inFlight = Task {
            try await withThrowingTaskGroup(of: ((Int, String)?, ContinuousClock.Instant).self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        defer { signalled.yield() }
                        let reply = try? await Self.call(portA, "POST", "/payment", StorefrontDriver.paymentBody(amount: 3200, product: "Pen"))
                        return (reply, ContinuousClock.now)
                    }
                }
                return try await group.reduce(into: [((Int, String)?, ContinuousClock.Instant)]()) { $0.append($1) }
            }
        }
        for await _ in replies { break }
        let signalledAt = ContinuousClock.now
        a.process.terminate()
        let results = try await inFlight.value
        let answered = results.compactMap(\.0)
        let answeredAfterSignal = results.filter { $0.0 != nil && $0.1 > signalledAt }.count
        #expect(answeredAfterSignal > 0, "no request in flight at SIGTERM was answered (\(results.count - answered.count) unanswered)")
        for _ in 0..<240 where a.process.isRunning { try await Task.sleep(for: .milliseconds(250)) }
        #expect(!a.process.isRunning && a.process.terminationStatus == 0, "A did not drain and exit on SIGTERM:\n\(a.output())")
        #expect(answered.allSatisfy { $0.0 == 200 || ($0.0 == 409 && isErrorBody($0.1)) }, "\(answered)")
        let acknowledged = try answered.filter { $0.0 == 200 }.map { try JSONDecoder().decode(PaymentReply.self, from: Data($0.1.utf8)).orderId }
        #expect(!acknowledged.isEmpty)
        for order in acknowledged {
            let (status, text) = try await Self.call(portB, "GET", "/orders/\(order)", headers: ["Authorization": "Bearer au-\(tag)"])
            #expect(status == 200 && JSONValue.parse(text)?["order"]?["status"] == .string("authorized"), "\(order): \(text)")
        }

        let opened = try await Self.eventCount(db, type: "OrderOpened")
        a = try await DaemonProcess.start(dataDirectory: root.appendingPathComponent("a"), port: portA, logFile: log, environment: second)
        #expect(a.health?.status == 200, "daemon A did not come back:\n\(a.output())")
        let (againStatus, again) = try await Self.call(portA, "POST", "/payment", body, headers: key)
        let (otherStatus, other) = try await Self.call(portB, "POST", "/payment", body, headers: key)
        #expect(againStatus == 200 && JSONValue.sameObject(again, firstReply), "\(again) vs \(firstReply)")
        #expect(otherStatus == 200 && JSONValue.sameObject(other, firstReply), "\(other) vs \(firstReply)")
        var changed = try JSONSerialization.jsonObject(with: body) as? [String: Any] ?? [:]
        changed["shipping_zip"] = "10001"
        // Another body under the same key is another payment (review 4, L9: a payment's key is bound to its body, so
        // nobody can squat a shopper's key), not a replay: a new order, opened once.
        let (newStatus, newPayment) = try await Self.call(
            portB,
            "POST",
            "/payment",
            try JSONSerialization.data(withJSONObject: changed),
            headers: key
        )
        // Not the first reply and never 409: a new attempt, which opens a new order (200, or 502 when the acquirer
        // here cannot be reached) unless it is refused before one (the pens may be sold out by now).
        #expect(newStatus != 409 && !JSONValue.sameObject(newPayment, firstReply), "\(newStatus): \(newPayment)")
        if case .string(let newOrder)? = JSONValue.parse(newPayment)?["order_id"] {
            #expect(!firstReply.contains(newOrder), "\(newPayment)")
            #expect(try await Self.eventCount(db, type: "OrderOpened") == opened + 1)
        } else {
            #expect(isErrorBody(newPayment) && !newPayment.contains("idempotency"), "\(newStatus): \(newPayment)")
            #expect(try await Self.eventCount(db, type: "OrderOpened") == opened)
        }

        let chain = try await db.withAuditor { client in try await ChainVerifier(client: client, logger: TestCluster.logger).verify() }
        #expect(chain.ok, "\(chain)")
        try await a.stop()
        try await b.stop()
    }

    /// A flash sale across two daemons: 64 shoppers at once, half on each, for the demo's 50 pens. Each daemon
    /// decides its payments inside its writer's batches, on the pen as the batch has left it, with no lock per
    /// product; the other daemon's reservations reach it only through the database's version check, which makes
    /// the batch decide again. Exactly 50 are sold, the other 14 are told `out_of_stock`, and the pen's stream
    /// and the read model agree.
    @Test(.timeLimit(.minutes(3))) func sixtyFourShoppersOnTwoDaemonsBuyingOneProductNeverOversell() async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        let shared = try await SharedDatabase.make(tag: tag)
        let (db, owner, app) = (shared.database, shared.owner, shared.app)
        let root = URL(fileURLWithPath: "/tmp/ledgerd-flash-\(tag)")
        defer { try? FileManager.default.removeItem(at: root) }
        let log = root.appendingPathComponent("daemons.log")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let common: [String: String?] = ["LEDGERD_DATABASE_URL": shared.url(app), "LEDGERD_LOG_LEVEL": "warning"]
        var first = common
        first["LEDGERD_MIGRATION_DATABASE_URL"] = shared.url(owner)
        first["LEDGERD_SEED_DEMO_CATALOG"] = "true"
        var second = common
        second["LEDGERD_SEED_DEMO_CATALOG"] = "false"
        let (portA, portB) = (TestPorts.free(), TestPorts.free())
        let (a, b) = try await Self.startPair(root: root, log: log, ports: (portA, portB), first: first, second: &second)
        defer {
            a.process.terminate()
            b.process.terminate()
        }
        try #require(a.health?.status == 200 && b.health?.status == 200, "\(a.output())\n\(b.output())")

        let pen = StorefrontDriver.paymentBody(amount: 3200, product: "Pen")
        let statuses = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for i in 0..<64 { group.addTask { try await Self.call(i % 2 == 0 ? portA : portB, "POST", "/payment", pen) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.filter { $0.0 == 200 }.count == 50, "\(statuses.map(\.0))")
        let refused = statuses.filter { $0.0 != 200 }
        #expect(refused.count == 14 && refused.allSatisfy { $0.0 == 409 && $0.1.contains("out_of_stock") }, "\(refused)")
        for port in [portA, portB] {
            let (status, text) = try await Self.call(port, "GET", "/inventory")
            #expect(status == 200, "\(text)")
            let rows = try JSONDecoder().decode([StorefrontDriver.Product].self, from: Data(text.utf8))
            let row = try #require(rows.first { $0.id == "pen" })
            #expect(row.reserved == 50 && row.available == 0 && row.quantity_on_hand == 50, "\(row)")
        }
        #expect(try await Self.eventCount(db, type: "OrderOpened") == 50)
        #expect(try await Self.eventCount(db, type: "StockReserved") == 50)
        #expect(try await Self.eventCount(db, type: "AuthorizationHoldPlaced") == 50)
        let chain = try await db.withAuditor { client in try await ChainVerifier(client: client, logger: TestCluster.logger).verify() }
        #expect(chain.ok, "\(chain)")
        try await a.stop()
        try await b.stop()
    }

    /// Two `ledgerd serve` processes on one database both start the same business day's settlement at
    /// the same moment (issue 18): one batch, each capture and refund in it once, every batch event
    /// appended once, and the report reconciles. Both daemons rehearse a day (`LEDGERD_CLOCK_START`
    /// just before the 22:00 cut-off): the captures are recorded before it, the runs start after it. The rehearsal
    /// starts 40 s before the cut-off; when starting two debug daemons and the set-up take longer (a loaded machine), the
    /// whole run is done again on a fresh database with twice the time, up to 160 s, rather than failing.
    @Test(.timeLimit(.minutes(10))) func twoDaemonProcessesSettlingOneDayAtOnceSettleEachCaptureOnce() async throws {
        for window in [40, 80, 160] {
            if try await Self.settleOneDayOnTwoDaemons(window: window) { return }
        }
        Issue.record("the set-up never fitted before the cut-off, even in 160 s")
    }

    /// One run of `twoDaemonProcessesSettlingOneDayAtOnceSettleEachCaptureOnce` with the clocks starting `window`
    /// seconds before the cut-off; false when the set-up did not fit in it (nothing checked then).
    static func settleOneDayOnTwoDaemons(window: Int) async throws -> Bool {
        let tag = UUID().uuidString.prefix(8).lowercased()
        let shared = try await SharedDatabase.make(tag: tag)
        let db = shared.database
        let root = URL(fileURLWithPath: "/tmp/ledgerd-settle2-\(tag)")
        defer { try? FileManager.default.removeItem(at: root) }
        let log = root.appendingPathComponent("daemons.log")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let cutOff = Date(timeIntervalSince1970: 1_908_136_800)  // 2030-06-19T22:00:00Z, a Wednesday
        let clockStart = cutOff.addingTimeInterval(-Double(window))
        let common: [String: String?] = [
            "LEDGERD_DATABASE_URL": shared.url(shared.app), "LEDGERD_OPERATOR_KEYS": "op-\(tag)", "LEDGERD_AUDITOR_KEYS": "au-\(tag)",
            "LEDGERD_LOG_LEVEL": "warning", "LEDGERD_CLOCK_START": clockStart.formatted(.iso8601),
        ]
        let operatorKey = ["Authorization": "Bearer op-\(tag)"]
        let portA = TestPorts.free()
        let portB = TestPorts.free()
        var first = common
        first["LEDGERD_MIGRATION_DATABASE_URL"] = shared.url(shared.owner)
        first["LEDGERD_SEED_DEMO_CATALOG"] = "true"
        var second = common
        second["LEDGERD_SEED_DEMO_CATALOG"] = "false"
        // A's clock reads at most clockStart + (now − aLaunched); B's at least clockStart + (now − bUp).
        let aLaunched = Date()
        let (a, b) = try await Self.startPair(root: root, log: log, ports: (portA, portB), first: first, second: &second)
        let bUp = Date()
        defer {
            a.process.terminate()
            b.process.terminate()
        }
        try #require(a.health?.status == 200 && b.health?.status == 200, "the daemons did not come up:\n\(a.output())")

        // Four orders paid and captured in part, half on each daemon, and one refund, before the cut-off.
        var orders: [String] = []
        for i in 0..<4 {
            let (status, text) = try await Self.call(i % 2 == 0 ? portA : portB, "POST", "/payment", StorefrontDriver.paymentBody())
            try #require(status == 200, "\(text)")
            orders.append(try WireJSON.decode(PaymentReply.self, from: text).orderId)
        }
        for (i, order) in orders.enumerated() {
            let (status, text) = try await Self.call(
                i % 2 == 0 ? portB : portA,
                "POST",
                "/orders/\(order)/capture",
                Data(#"{"amount": "5.00"}"#.utf8),
                headers: operatorKey.merging(["Idempotency-Key": "capture-\(order)"]) { $1 }
            )
            #expect(status == 200, "\(text)")
        }
        let (refunded, refundText) = try await Self.call(
            portB,
            "POST",
            "/orders/\(orders[0])/refund",
            Data(#"{"amount": "1.00", "reason": "dent"}"#.utf8),
            headers: operatorKey.merging(["Idempotency-Key": "refund-\(orders[0])"]) { $1 }
        )
        #expect(refunded == 200, "\(refundText)")
        // Everything so far was recorded before the cut-off, on either daemon's clock.
        let elapsed = Date().timeIntervalSince(aLaunched)
        guard clockStart.addingTimeInterval(elapsed) < cutOff else {
            print("two daemons settling: the set-up took \(Int(elapsed)) s, longer than the rehearsal's \(window) s: again with more")
            try await a.stop()
            try await b.stop()
            return false
        }

        let wait = cutOff.timeIntervalSince(clockStart) + 1 - Date().timeIntervalSince(bUp)
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        let run = Data(#"{"business_date": "2030-06-19"}"#.utf8)
        async let onA = Self.call(portA, "POST", "/settlements/run", run, headers: operatorKey)
        async let onB = Self.call(portB, "POST", "/settlements/run", run, headers: operatorKey)
        let replies = try await [onA, onB]
        for reply in replies { #expect(reply.0 == 200, "\(reply.1)") }
        let summaries = try replies.map { try WireJSON.decode(SettlementRunReply.self, from: $0.1) }
        let batches = summaries.flatMap(\.batches)
        #expect(summaries.allSatisfy { $0.batches.count <= 1 } && !batches.isEmpty, "\(summaries)")
        #expect(Set(batches.map(\.batchId)).count == 1 && Set(batches.map(\.reportSha256)).count == 1)
        #expect(batches.allSatisfy { $0.captures == 4 && $0.refunds == 1 && $0.gross == "19.00" }, "\(batches)")
        let (events, assigned, distinct) = try await db.withOwner { client in
            var counts: (Int64, Int64, Int64) = (-1, -1, -1)
            let rows = try await client.query(
                """
                SELECT (SELECT count(*) FROM ledger.events WHERE stream_id LIKE 'settlement-%'),
                       (SELECT count(*) FROM ledger.settlement_assignments),
                       (SELECT count(DISTINCT position) FROM ledger.settlement_assignments)
                """
            )
            for try await row in rows.decode((Int64, Int64, Int64).self) { counts = row }
            return counts
        }
        #expect(Int64(batches.map(\.appendedEvents).reduce(0, +)) == events && events >= 5)
        #expect(assigned == 5 && distinct == 5)
        #expect(try await Self.eventCount(db, type: "SettlementBatchOpened") == 1)
        let batchID = try #require(batches.first?.batchId)
        let (status, text) = try await Self.call(portA, "GET", "/settlements/\(batchID)/reconciliation", headers: operatorKey)
        #expect(status == 200 && JSONValue.parse(text)?["open_breaks"] == .int(0), "\(text)")
        try await a.stop()
        try await b.stop()
        return true
    }
}
