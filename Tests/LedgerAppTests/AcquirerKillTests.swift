import Foundation
import LedgerAPI
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SIGKILL of the ledger, of its acquirer service, or of both, at 21 points of a mixed load (payments,
/// captures, voids, refunds and a settlement), on real processes and the embedded cluster. After a
/// restart, recovery and reconciliation: every order resolved; every hold the same in the ledger and at
/// the acquirer; nothing applied twice (each approved modification at the acquirer has its own reference,
/// the ledger's hold stream records exactly those one to one, and the captured and refunded amounts are
/// exactly the distinct acknowledged ones plus those whose answer was lost); every payment the storefront
/// was told succeeded is a hold on both sides, and every capture, void and refund it was told succeeded is
/// recorded in the ledger and approved at the acquirer.
@Suite(.serialized, .machine(.shared)) struct AcquirerKillTests {
    static let killPoints = 21
    /// The rehearsal day starts ten seconds before the 22:00 UTC cut-off; the restart before the
    /// settlement's kill point moves the clock past the cut-off (if the load has not got there yet), so the
    /// settlement of 2026-06-17 runs part way through the load.
    static let dayStart = TestApp.instant("2026-06-17T21:59:50Z")
    static let cutOff = TestApp.instant("2026-06-17T22:00:00Z")

    final class Run: @unchecked Sendable {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-kill-\(UUID().uuidString.prefix(8))")
        let port = TestPorts.free()
        var log: URL { dataDirectory.deletingLastPathComponent().appendingPathComponent("\(dataDirectory.lastPathComponent).log") }
        let started = Date()
        var daemon: DaemonProcess?
        var orders: Set<String> = []
        var succeeded: Set<String> = []
        var captured: [String] = []
        /// Requests that got no answer or a 5xx: the client retries them with their key (as the API says).
        var unanswered: [(method: String, path: String, body: String, key: String)] = []
        /// Every hold operation the client sent (first or retried), and the 200 replies it got to them.
        var sent: Set<HoldRequest> = []
        var acknowledged: [(request: HoldRequest, reply: HoldOperationReply)] = []

        /// Seconds the rehearsal's clock was moved forward, in all.
        var skipped: TimeInterval = 0
        /// Where the rehearsal's clock is.
        var clock: Date { AcquirerKillTests.dayStart.addingTimeInterval(Date().timeIntervalSince(started) + skipped) }

        /// Starts (or restarts) the daemon with its clock continuing where the rehearsal is, moved forward by
        /// `skip` seconds more (never back).
        func start(skip: TimeInterval = 0, crashAt point: String? = nil) async throws {
            skipped += skip
            let now = clock
            var extra: [String: String] = [:]
            if let point { extra["LEDGERD_FAULT_CRASH_AT"] = point }
            let daemon = try await DaemonProcess.start(
                dataDirectory: dataDirectory,
                port: port,
                logFile: log,
                environment: [
                    "LEDGERD_CLOCK_START": RFC3339.format(now.epochMicroseconds),
                    "LEDGERD_RECOVERY_INTERVAL_SECONDS": "1",
                    "LEDGERD_ACQUIRER_TIMEOUT_MS": "3000",
                    "LEDGERD_ACQUIRER_ATTEMPTS": "2",
                    "LEDGERD_LOG_LEVEL": "warning",
                ].merging(extra) { $1 }
            )
            try #require(daemon.health != nil, "the daemon did not come up:\n\(daemon.output().suffix(3_000))")
            self.daemon = daemon
        }

        /// The acquirer child's pid (its command line names this data directory and `acquirer serve`).
        var acquirerPIDs: [Int32] {
            DaemonProcess.processes(mentioning: dataDirectory.appendingPathComponent("acquirer").path).filter { pid in
                let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? ""
                return line.contains("serve")
            }
        }

        /// `request`, but any answer (a 5xx too) is returned as it came; nil: no answer at all.
        func send(_ method: String, _ path: String, _ body: String? = nil, key: String? = nil) async -> (Int, String)? {
            guard let daemon else { return nil }
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            request.timeoutInterval = 30
            if let key = daemon.operatorKey { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
            if let key { request.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
            if let body {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(body.utf8)
            }
            let operation = HoldRequest(method: method, path: path, key: key)
            if let operation { sent.insert(operation) }
            guard let (data, response) = try? await TestHTTP.data(for: request), let status = (response as? HTTPURLResponse)?.statusCode else {
                return nil
            }
            let text = String(decoding: data, as: UTF8.self)
            if status == 200, let operation {
                do { acknowledged.append((operation, try WireJSON.decode(HoldOperationReply.self, from: text))) } catch {
                    Issue.record("a 200 to \(method) \(path) that is not a hold operation's reply: \(text)")
                }
            }
            return (status, text)
        }

        /// `method path` with the operator's key (and `key` as Idempotency-Key); nil when no answer or a 5xx
        /// came, and then a request with a key is noted for the client's retry.
        func request(_ method: String, _ path: String, _ body: String? = nil, key: String? = nil) async -> (Int, String)? {
            guard let (status, text) = await send(method, path, body, key: key), status < 500 else {
                if let key, let body { unanswered.append((method, path, body, key)) }
                return nil
            }
            return (status, text)
        }

        /// One step of load: two payments, and a capture, a void and a refund on earlier orders.
        func load(step: Int) async {
            for index in 0..<2 {
                let body = String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self)
                guard let (status, text) = await request("POST", "/payment", body, key: "pay-\(step)-\(index)"),
                    let reply = try? WireJSON.decode(PaymentReply.self, from: text)
                else { continue }
                orders.insert(reply.orderId)
                if status == 200 && reply.status == .succeeded { succeeded.insert(reply.orderId) }
            }
            let known = succeeded.sorted()
            guard known.count >= 3 else { return }
            let pick = { (offset: Int) in known[(step * 7 + offset) % known.count] }
            if let (status, _) = await request("POST", "/orders/\(pick(0))/capture", #"{"amount":"10.00"}"#, key: "cap-\(step)"), status == 200 {
                captured.append(pick(0))
            }
            _ = await request("POST", "/orders/\(pick(1))/void", "{}", key: "void-\(step)")
            if let target = captured.last {
                _ = await request("POST", "/orders/\(target)/refund", #"{"amount":"1.00","reason":"damaged"}"#, key: "refund-\(step)")
            }
        }
    }

    @Test(.timeLimit(.minutes(6))) func killsDuringMixedLoadLoseNothing() async throws {
        let run = Run()
        defer {
            try? FileManager.default.removeItem(at: run.dataDirectory)
            try? FileManager.default.removeItem(at: run.log)
        }
        try await run.start()
        var midLoadSettlement: (Int, String)?
        for point in 0..<Self.killPoints {
            // The load runs while the kill lands (after a seeded 0–300 ms).
            var generator = SeededGenerator(seed: UInt64(point) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
            let delay = Int(generator.next() % 300)
            async let step: Void = run.load(step: point)
            if point == 10 {
                // The settlement of the day, its acquirer killed part way (it resumes when run again).
                async let settlement = run.send("POST", "/settlements/run", #"{"business_date":"2026-06-17"}"#)
                try await Task.sleep(for: .milliseconds(delay))
                strike(point: point, run)
                midLoadSettlement = await settlement
            } else {
                try await Task.sleep(for: .milliseconds(delay))
                strike(point: point, run)
            }
            await step
            if point % 3 != 1 {
                // The ledger died (alone or with its acquirer, which follows it when its stdin closes).
                if let daemon = run.daemon { try #require(try await daemon.exited(), "the killed ledger did not exit") }
                // Before the settlement's point, past the cut-off (a second after it at the least).
                try await run.start(skip: point == 9 ? max(0, Self.cutOff.timeIntervalSince(run.clock) + 1) : 0)
            } else {
                try await Task.sleep(for: .milliseconds(500))  // the supervisor restarts the acquirer
            }
        }
        // Recovery: a restart whose clock is past recovery's minimum age of every pending order.
        try await run.daemon?.terminate()
        try await run.start(skip: 900)
        var stuck: [String] = []
        for _ in 0..<60 {
            stuck = []
            for status in ["pending_payment", "payment_unknown"] {
                if let (_, text) = await run.request("GET", "/orders?status=\(status)&limit=500") { stuck += Self.ids(text) }
            }
            if stuck.isEmpty { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(stuck.isEmpty, "orders stuck: \(stuck)")
        // The client's retries of what it never got an answer to, each with its own key (a few rounds:
        // a retry may meet a busy order). A payment answered 5xx is an answer (not a success).
        for _ in 0..<3 where !run.unanswered.isEmpty {
            let retries = run.unanswered
            run.unanswered = []
            for retry in retries {
                if let (status, text) = await run.request(retry.method, retry.path, retry.body, key: retry.key), retry.path == "/payment",
                    let reply = try? WireJSON.decode(PaymentReply.self, from: text)
                {
                    run.orders.insert(reply.orderId)
                    if status == 200 && reply.status == .succeeded { run.succeeded.insert(reply.orderId) }
                }
            }
            if !run.unanswered.isEmpty { try await Task.sleep(for: .seconds(1)) }
        }
        let holdOperations = run.unanswered.filter { $0.path != "/payment" }
        #expect(holdOperations.isEmpty, "hold operations still unanswered: \(holdOperations.map(\.key))")
        // The mid-load settlement was answered (only the acquirer died at that point, so the ledger must
        // answer): a summary, or the error shape (never a 500) when the acquirer died under it — not a
        // refusal to start (it ran: the day was past its cut-off).
        #expect(Self.target(9) == 0 && Self.target(10) == 1)
        let (midStatus, midText) = try #require(midLoadSettlement, "the live ledger did not answer the mid-load settlement")
        var midBatches: [Components.Schemas.SettlementRunBatch] = []
        if midStatus == 200 {
            midBatches = try WireJSON.decode(SettlementRunReply.self, from: midText).batches
        } else {
            #expect(midStatus >= 400 && midStatus != 500, "mid-load settlement: \(midStatus) \(midText)")
            let error = (try? JSONSerialization.jsonObject(with: Data(midText.utf8)) as? [String: Any])?["error"] as? [String: Any]
            #expect(error?["code"] is String && error?["message"] is String, "mid-load settlement: \(midStatus) \(midText)")
            #expect(error?["code"] as? String != "cut_off_not_reached", "the mid-load settlement did not run: \(midText)")
        }
        // The settlement completes (run again after its kill) and reconciles without a break.
        let (status, text) = try #require(await run.request("POST", "/settlements/run", #"{"business_date":"2026-06-17"}"#))
        #expect(status == 200, "\(text)")
        let summary = try WireJSON.decode(SettlementRunReply.self, from: text)
        for batch in summary.batches {
            #expect(batch.stage == .payoutScheduled, "\(batch)")
            let (reconciliationStatus, reconciliation) = try #require(
                await run.request("GET", "/settlements/\(batch.batchId)/reconciliation"),
                "no answer for the reconciliation of \(batch.batchId)"
            )
            #expect(reconciliationStatus == 200, "\(reconciliation)")
            let parsed = try WireJSON.decode(ReconciliationReply.self, from: reconciliation)
            #expect(parsed.openBreaks == 0, "\(reconciliation)")
        }
        // What the mid-load run answered stands: the same batches, the same money.
        for batch in midBatches {
            let again = summary.batches.first { $0.batchId == batch.batchId }
            #expect(
                again?.gross == batch.gross && again?.captures == batch.captures && again?.refunds == batch.refunds,
                "mid-load \(batch) ≠ final \(String(describing: again))"
            )
        }

        // Every order the ledger has, against the acquirer.
        let secrets =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: run.dataDirectory.appendingPathComponent("acquirer/secrets.json"))
            ) as? [String: Any]
        let apiKey = try #require(secrets?["apiKey"] as? String)
        let endpoint = try String(contentsOf: run.dataDirectory.appendingPathComponent("acquirer/endpoint"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var all = Set(run.orders)
        if let (_, text) = await run.request("GET", "/orders?limit=500") { all.formUnion(Self.ids(text)) }
        #expect(all.count >= 10, "too few orders to judge: \(all.count)")
        #expect(Set(run.acknowledged.map(\.request.order)).isSubset(of: all), "a hold operation was acknowledged on an unknown order")
        var acknowledgedCount = 0
        for id in all.sorted() {
            let (orderStatus, orderText) = try #require(await run.request("GET", "/orders/\(id)"))
            try #require(orderStatus == 200, "GET /orders/\(id): \(orderStatus) \(orderText)")
            let order = try WireJSON.decode(OrderBody.self, from: orderText).order
            var inquiry = URLRequest(url: URL(string: "\(endpoint)/v1/payments?merchantReference=\(id)")!)
            inquiry.setValue(apiKey, forHTTPHeaderField: "X-API-Key")
            let (data, _) = try await TestHTTP.data(for: inquiry)
            let result = try LedgerJSON.decode(PaymentQueryResult.self, from: data)
            let succeeded = run.succeeded.contains(id)
            // What the client asked of this order's hold, and what it was told succeeded.
            let asked = Set(run.sent.filter { $0.order == id }.map(\.modificationReference))
            let acknowledged = run.acknowledged.filter { $0.request.order == id }
            acknowledgedCount += acknowledged.count
            switch result {
            case .found(let details):
                let approved = details.modifications.filter { $0.responseCode.isApproved }
                // Nothing applied twice at the acquirer: each approved modification has its own reference.
                #expect(
                    Set(approved.map(\.modificationReference)).count == approved.count
                        && Set(approved.map(\.modificationPSPReference)).count == approved.count,
                    "\(id): a modification applied twice at the acquirer: \(approved.map(\.modificationReference))"
                )
                // Captures and refunds come only from the client's requests (reversals may be recovery's).
                for modification in approved where modification.kind == .capture || modification.kind == .refund {
                    #expect(asked.contains(modification.modificationReference), "\(id): \(modification.kind) nobody asked for: \(modification)")
                }
                guard let balance = details.balance, balance.authorized.minorUnits > 0, details.status != .declined else {
                    #expect(
                        !succeeded,
                        "\(id): the storefront saw success, the acquirer \(details.status) with \(String(describing: details.balance))"
                    )
                    #expect(order.payment == nil, "\(id): a hold in the ledger, declined at the acquirer")
                    #expect(acknowledged.isEmpty, "\(id): hold operations acknowledged on a declined payment")
                    continue
                }
                // The acquirer's figures are the sum of its approved modifications, each counted once.
                func sum(_ kind: ModificationKind) -> Int64 { approved.filter { $0.kind == kind }.reduce(0) { $0 + $1.amount.minorUnits } }
                let released = approved.reduce(Int64(0)) { $0 + ($1.released?.minorUnits ?? 0) }
                #expect(balance.captured.minorUnits == sum(.capture), "\(id): captured \(balance.captured) ≠ its captures \(approved)")
                #expect(balance.refunded.minorUnits == sum(.refund), "\(id): refunded \(balance.refunded) ≠ its refunds \(approved)")
                #expect(balance.incremented.minorUnits == sum(.increment), "\(id): incremented \(balance.incremented) ≠ \(approved)")
                #expect(balance.reversed.minorUnits == sum(.reversal) + released, "\(id): reversed \(balance.reversed) ≠ \(approved)")
                #expect(balance.captured.minorUnits <= balance.authorized.minorUnits + balance.incremented.minorUnits, "\(id): over-captured")
                guard let payment = order.payment else {
                    #expect(!succeeded, "\(id): the storefront saw success, the ledger has no hold")
                    #expect(balance.open.minorUnits == 0 && balance.captured.minorUnits == 0, "\(id): held at the acquirer only: \(balance)")
                    #expect(acknowledged.isEmpty, "\(id): hold operations acknowledged on an order without a hold")
                    continue
                }
                #expect(payment == HoldFigures(balance), "\(id): ledger \(payment) ≠ acquirer \(HoldFigures(balance))")
                // The ledger's hold stream records exactly the acquirer's approved modifications, one to one by
                // reference (same kind, same psp reference, same amount), none twice.
                let recorded = try await Self.recordedModifications(run, id)
                #expect(
                    Set(recorded.map(\.reference)).count == recorded.count,
                    "\(id): a modification recorded twice in the ledger: \(recorded.map(\.reference))"
                )
                let ledgerSide = Dictionary(recorded.map { ($0.reference, $0) }) { first, _ in first }
                let acquirerSide = Dictionary(
                    approved.map {
                        (
                            $0.modificationReference,
                            RecordedModification(
                                kind: $0.kind,
                                reference: $0.modificationReference,
                                psp: $0.modificationPSPReference,
                                amount: $0.amount.decimalString
                            )
                        )
                    }
                ) { first, _ in first }
                #expect(ledgerSide == acquirerSide, "\(id): the ledger recorded \(recorded), the acquirer approved \(approved)")
                // Every capture, void and refund the storefront was told succeeded is one of them, and the
                // captured amount is exactly those distinct captures plus the ones whose answer was lost.
                for (request, reply) in acknowledged {
                    let reference = request.modificationReference
                    #expect(reply.orderId == id && reply.operation.rawValue == request.kind, "\(id): \(request) answered with \(reply)")
                    #expect(reply.result == .applied || reply.result == .replayed, "\(id): \(request) answered \(reply)")
                    let inLedger = ledgerSide[reference]
                    let atAcquirer = acquirerSide[reference]
                    #expect(inLedger?.kind == request.acquirerKind, "\(id): \(request) acknowledged, not in the ledger's hold stream: \(recorded)")
                    #expect(atAcquirer?.kind == request.acquirerKind, "\(id): \(request) acknowledged, not approved at the acquirer: \(approved)")
                    if let psp = reply.pspModificationReference {
                        #expect(inLedger?.psp == psp && atAcquirer?.psp == psp, "\(id): \(request) acknowledged as \(psp)")
                    }
                    if let amount = reply.amount, reply.result == .applied {
                        #expect(inLedger?.amount == amount && atAcquirer?.amount == amount, "\(id): \(request) acknowledged \(amount)")
                    }
                }
                let unacknowledged = asked.subtracting(acknowledged.map(\.request.modificationReference))
                for kind in [ModificationKind.capture, .refund] {
                    let confirmed = Set(acknowledged.filter { $0.request.acquirerKind == kind }.map(\.request.modificationReference))
                    let applied = Set(approved.filter { $0.kind == kind }.map(\.modificationReference))
                    let lost = applied.subtracting(confirmed)
                    #expect(lost.isSubset(of: unacknowledged), "\(id): \(kind)s applied that were neither confirmed nor left unanswered: \(lost)")
                    let total = confirmed.union(lost).reduce(Int64(0)) { total, reference in
                        total
                            + (acquirerSide[reference].flatMap { try? Money(decimal: $0.amount, currency: balance.captured.currency).minorUnits } ?? 0)
                    }
                    let figure = kind == .capture ? (payment.captured, balance.captured) : (payment.refunded, balance.refunded)
                    #expect(
                        (try Money(decimal: figure.0, currency: balance.captured.currency)).minorUnits == total && figure.1.minorUnits == total,
                        "\(id): \(kind)d ledger \(figure.0), acquirer \(figure.1), but \(confirmed.count) confirmed + \(lost.count) lost come to \(total)"
                    )
                }
            case .notFound:
                #expect(order.payment == nil, "\(id): a hold the acquirer does not know")
                #expect(!succeeded, "\(id): the storefront saw success, the acquirer knows no payment")
                #expect(acknowledged.isEmpty, "\(id): hold operations acknowledged on a payment the acquirer does not know")
            }
        }
        #expect(acknowledgedCount == run.acknowledged.count)
        #expect(acknowledgedCount >= 5, "too few acknowledged hold operations to judge: \(acknowledgedCount)")
        for id in run.succeeded {
            let (_, orderText) = try #require(await run.request("GET", "/orders/\(id)"))
            let order = try WireJSON.decode(OrderBody.self, from: orderText).order
            #expect(order.payment != nil, "\(id): the storefront saw success, the ledger has no hold")
        }
        try await run.daemon?.stop()
    }

    /// The ledger killed right after the acquirer applied a capture, an increment, a void and a refund and answered
    /// (`LEDGERD_FAULT_CRASH_AT=hold.<kind>.applied`), before anything of them was recorded: on a
    /// restart, recovery finds each noted operation, asks the acquirer and records what it applied,
    /// with no operator action. Both sides then agree, and the client's retry with its key is a replay
    /// that changes nothing at the acquirer.
    @Test(.timeLimit(.minutes(4))) func operationsAppliedButUnrecordedAreRecoveredOnRestart() async throws {
        let run = Run()
        defer {
            try? FileManager.default.removeItem(at: run.dataDirectory)
            try? FileManager.default.removeItem(at: run.log)
        }
        try await run.start()
        var paid: [String] = []
        for index in 0..<4 {
            let body = String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self)
            let (status, text) = try #require(await run.request("POST", "/payment", body, key: "pay-\(index)"))
            let reply = try WireJSON.decode(PaymentReply.self, from: text)
            try #require(status == 200 && reply.status == .succeeded, "\(text)")
            paid.append(reply.orderId)
        }
        let (captureOrder, voidOrder, refundOrder, incrementOrder) = (paid[0], paid[1], paid[2], paid[3])
        let (captured, _) = try #require(await run.request("POST", "/orders/\(refundOrder)/capture", #"{"amount":"10.00"}"#, key: "cap-r"))
        try #require(captured == 200)
        let operations: [(point: String, path: String, body: String, key: String)] = [
            ("hold.capture.applied", "/orders/\(captureOrder)/capture", #"{"amount":"10.00"}"#, "cap-1"),
            ("hold.increment.applied", "/orders/\(incrementOrder)/increment", #"{"amount":"15.00"}"#, "inc-1"),
            ("hold.void.applied", "/orders/\(voidOrder)/void", "{}", "void-1"),
            ("hold.refund.applied", "/orders/\(refundOrder)/refund", #"{"amount":"1.00","reason":"damaged"}"#, "refund-1"),
        ]
        var before: [String: HoldFigures] = [:]
        for id in paid { before[id] = try await Self.ledgerFigures(run, id) }
        for operation in operations {
            try await run.daemon?.terminate()
            try await run.start(crashAt: operation.point)
            let answer = await run.request("POST", operation.path, operation.body, key: operation.key)
            #expect(answer == nil, "\(operation.point): the ledger answered instead of dying: \(String(describing: answer))")
            let died = try await run.daemon?.exited() ?? false
            try #require(
                died && run.daemon?.process.terminationReason == .uncaughtSignal,
                "\(operation.point): the daemon did not die by its fault point"
            )
        }
        // A restart past recovery's minimum age of the noted operations; nobody retries anything.
        try await run.start(skip: 900)
        let expected: [String: (HoldFigures) -> Bool] = [
            captureOrder: { $0.captured == "10.00" },
            voidOrder: { $0.open == "0.00" && $0.reversed != "0.00" },
            refundOrder: { $0.refunded == "1.00" },
            incrementOrder: { $0.incremented == "15.00" },
        ]
        var recovered: [String: HoldFigures] = [:]
        for _ in 0..<60 {
            for id in paid { recovered[id] = try await Self.ledgerFigures(run, id) }
            if expected.allSatisfy({ id, check in recovered[id].map(check) ?? false }) { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        for (id, check) in expected {
            let figures = try #require(recovered[id])
            #expect(check(figures), "\(id): not recovered: before \(String(describing: before[id])), now \(figures)")
            #expect(figures == (try await Self.acquirerFigures(run, id)), "\(id): the ledger and the acquirer differ")
        }
        // The client's retries with their keys are replays: nothing changes on either side.
        for operation in operations {
            let (status, text) = try #require(await run.request("POST", operation.path, operation.body, key: operation.key))
            #expect(status == 200 && text.contains("\"replayed\""), "\(operation.key): \(status) \(text)")
        }
        for id in paid {
            #expect(try await Self.ledgerFigures(run, id) == recovered[id], "\(id) changed in the ledger on a retry")
            #expect(try await Self.acquirerFigures(run, id) == recovered[id], "\(id) changed at the acquirer on a retry")
        }
        try await run.daemon?.stop()
    }

    /// The order's hold figures as the ledger reports them.
    static func ledgerFigures(_ run: Run, _ id: String) async throws -> HoldFigures? {
        let (status, text) = try #require(await run.request("GET", "/orders/\(id)"))
        try #require(status == 200, "GET /orders/\(id): \(status) \(text)")
        return try WireJSON.decode(OrderBody.self, from: text).order.payment
    }

    /// The payment's hold figures as the acquirer service reports them (its status inquiry).
    static func acquirerFigures(_ run: Run, _ id: String) async throws -> HoldFigures? {
        let secrets =
            try JSONSerialization.jsonObject(with: Data(contentsOf: run.dataDirectory.appendingPathComponent("acquirer/secrets.json")))
            as? [String: Any]
        let apiKey = try #require(secrets?["apiKey"] as? String)
        let endpoint = try String(contentsOf: run.dataDirectory.appendingPathComponent("acquirer/endpoint"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var inquiry = URLRequest(url: URL(string: "\(endpoint)/v1/payments?merchantReference=\(id)")!)
        inquiry.setValue(apiKey, forHTTPHeaderField: "X-API-Key")
        let (data, _) = try await TestHTTP.data(for: inquiry)
        guard case .found(let details) = try LedgerJSON.decode(PaymentQueryResult.self, from: data) else { return nil }
        return details.balance.map(HoldFigures.init)
    }

    /// A hold modification the ledger's hold stream records (its `Hold…` event), in the acquirer's terms.
    struct RecordedModification: Hashable, CustomStringConvertible {
        let kind: ModificationKind
        let reference, psp, amount: String
        var description: String { "\(kind) \(reference) \(psp) \(amount)" }
    }

    /// The modifications recorded in the order's hold stream (`GET /streams/hold-{id}/events`), in order.
    static func recordedModifications(_ run: Run, _ id: String) async throws -> [RecordedModification] {
        let kinds: [String: ModificationKind] = [
            "HoldCaptured": .capture, "HoldReversed": .reversal, "HoldRefunded": .refund, "HoldIncremented": .increment,
        ]
        let (status, text) = try #require(await run.request("GET", "/streams/hold-\(id)/events?limit=1000"))
        try #require(status == 200, "GET /streams/hold-\(id)/events: \(status) \(text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["next_after_version"] is NSNull, "hold-\(id) has more than one page of events")
        let events = try #require(object["events"] as? [[String: Any]])
        return try events.compactMap { event in
            guard let type = event["type"] as? String, let kind = kinds[type] else { return nil }
            let data = try #require(event["data"] as? [String: Any], "\(event)")
            return RecordedModification(
                kind: kind,
                reference: try #require(data["modification_reference"] as? String, "\(event)"),
                psp: try #require(data["psp_modification_reference"] as? String, "\(event)"),
                amount: try #require((data["amount"] as? [String: Any])?["amount"] as? String, "\(event)")
            )
        }
    }

    /// Kill point `point`: the ledger (0), the acquirer (1), both (2), in turn.
    static func target(_ point: Int) -> Int { point % 3 }

    private func strike(point: Int, _ run: Run) {
        let acquirers = run.acquirerPIDs
        // A kill point that found nothing to kill tests nothing: the supervised acquirer is one process, the ledger one.
        if Self.target(point) != 0 {
            #expect(acquirers.count == 1, "kill point \(point): acquirer processes \(acquirers) (its command line names the data directory)")
        }
        if Self.target(point) != 1 { #expect(run.daemon?.process.isRunning == true, "kill point \(point): no ledger process to kill") }
        switch Self.target(point) {
        case 0: if let pid = run.daemon?.process.processIdentifier { _ = kill(pid, SIGKILL) }
        case 1: for pid in acquirers { _ = kill(pid, SIGKILL) }
        default:
            for pid in acquirers { _ = kill(pid, SIGKILL) }
            if let pid = run.daemon?.process.processIdentifier { _ = kill(pid, SIGKILL) }
        }
    }

    static func ids(_ text: String) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let orders = object["orders"] as? [[String: Any]]
        else { return [] }
        return orders.compactMap { ($0["id"] ?? $0["order_id"]) as? String }
    }
}

/// A hold operation the client sent: `POST /orders/{order}/{kind}` with Idempotency-Key `key`.
struct HoldRequest: Hashable, CustomStringConvertible {
    let order, kind, key: String

    init?(method: String, path: String, key: String?) {
        let parts = path.split(separator: "/").map(String.init)
        guard method == "POST", let key, parts.count == 3, parts[0] == "orders", ["capture", "void", "refund"].contains(parts[2]) else {
            return nil
        }
        (order, kind, self.key) = (parts[1], parts[2], key)
    }

    /// The reference the ledger gives the modification (its order's merchant reference is the order id).
    /// The acquirer's reference for it, by the ledger's own rule (``HoldLifecycle/modificationReference(order:operation:key:)``
    /// over the key scoped by its sender, ``HoldService/principalTag(_:)``; review 4, L9): the daemon's first generated
    /// operator key is `op-1` (APIKeys), so its actor is `operator:op-1`.
    var modificationReference: String { "\(order)-\(kind)-\(HoldService.principalTag("operator:op-1"))-\(key)" }

    var acquirerKind: ModificationKind { kind == "void" ? .reversal : kind == "capture" ? .capture : .refund }

    var description: String { "\(kind) \(order) (\(key))" }
}

/// `GET /orders/{id}`'s body.
struct OrderBody: Decodable {
    let order: BackOfficeDriver.Order
}

/// SplitMix64 for the kill delays (seeded, so a failing run can be replayed).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
