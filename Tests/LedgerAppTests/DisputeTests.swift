import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerCoreTestSupport
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// Disputes through the real router and database (issue 17): the acquirer's notifications recorded
/// on each dispute's stream, the operator's defense and acceptance, the order's status, deadlines on
/// the injected clock, and refusals that append nothing.
@Suite(.machine(.shared)) struct DisputeTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()
    static let start = TestApp.instant("2026-06-17T10:00:00Z")

    struct Detail: Decodable {
        struct Entry: Decodable {
            let position: Int64
            let type, recorded_at: String
            let actor: String?
        }
        let dispute: DisputeReply
        let history: [Entry]
    }

    struct ErrorBody: Decodable {
        struct Body: Decodable {
            let code, message: String
            let field: String?
        }
        let error: Body
    }

    func post(
        _ client: any TestClientProtocol,
        _ uri: String,
        _ body: String,
        key: String? = TestApp.operatorKey
    ) async throws -> (
        HTTPResponse.Status, String
    ) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let key { headers[.authorization] = "Bearer \(key)" }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
            ($0.status, String(buffer: $0.body))
        }
    }

    func head(_ services: ServiceContainer) async throws -> Int64 { try await services.store.head().position }

    /// A captured, shipped order of 59.00 USD and its psp reference.
    func shippedOrder(_ client: any TestClientProtocol, source: String = "tok_visa") async throws -> String {
        let id = try await storefront.placeOrder(client, source: source)
        let (status, text) = try await backOffice.ship(client, id, "{}")
        #expect(status == .ok, "\(text)")
        return id
    }

    func chargeback(_ id: String, order: String, amount: Int64 = 5900, reason: DisputeReason = .visaFraudCardAbsent) -> DisputeNotification {
        DisputeNotification(
            disputeID: id,
            stage: .chargeback,
            orderID: order,
            pspReference: "PSP-\(order)",
            reason: reason,
            amount: Money(minorUnits: amount, currency: .usd)
        )
    }

    @Test func aChargebackDefendedReversedAndWonWalksTheOrderThroughItsStatuses() async throws {
        let clock = SimulatedClock(Self.start)
        try await TestApp.withApp(seed: true, clock: clock.reading) { client, services in
            let order = try await shippedOrder(client)
            let view = try await services.disputes.receive(chargeback("dp-1", order: order))
            #expect(view.state.status == .chargedBack && view.orderStatus == .chargedBack)
            #expect(try await backOffice.order(client, order).status == "charged_back")
            // The operator surface: the list by status and deadline, one dispute with its history.
            var (status, text) = try await backOffice.get(client, "/disputes?status=charged_back")
            #expect(status == .ok, "\(text)")
            var list = try WireJSON.decode(DisputeListReply.self, from: text)
            #expect(list.disputes.map(\.disputeId) == ["dp-1"])
            #expect(list.disputes.first?.dueAt == "2026-07-17T10:00:00.000000Z" && list.disputes.first?.netDebited == "59.00")
            (status, text) = try await backOffice.get(client, "/disputes?due_before=2026-07-01T00:00:00Z")
            #expect(try WireJSON.decode(DisputeListReply.self, from: text).disputes.isEmpty, "\(text)")
            (status, text) = try await backOffice.get(client, "/disputes?status=defended")
            #expect(try WireJSON.decode(DisputeListReply.self, from: text).disputes.isEmpty)
            clock.advance(by: 3 * 86_400)
            (status, text) = try await post(
                client,
                "/disputes/dp-1/defend",
                #"{"evidence_refs": ["evidence://dp-1/receipt", "evidence://dp-1/tracking"]}"#
            )
            #expect(status == .ok, "\(text)")
            var detail = try WireJSON.decode(Detail.self, from: text)
            #expect(detail.dispute.status == .defended && detail.dispute.evidenceRefs.count == 2 && detail.dispute.dueAt == nil)
            #expect(detail.history.map(\.type) == ["ChargebackReceived", "DisputeDefenseSubmitted"])
            #expect(detail.history.last?.actor?.hasPrefix("operator") == true)
            // The network's stages come from the acquirer.
            try await services.disputes.receive(DisputeNotification(disputeID: "dp-1", stage: .secondPresentment))
            let reversed = try await services.disputes.receive(DisputeNotification(disputeID: "dp-1", stage: .chargebackReversed))
            #expect(reversed.state.netDebited.isZero && reversed.orderStatus == .disputed)
            let won = try await services.disputes.receive(DisputeNotification(disputeID: "dp-1", stage: .won))
            #expect(won.state.status == .won && won.orderStatus == .shipped && won.state.netDebited.isZero)
            #expect(try await backOffice.order(client, order).status == "shipped")
            (status, text) = try await backOffice.get(client, "/disputes/dp-1")
            detail = try WireJSON.decode(Detail.self, from: text)
            #expect(
                detail.history.map(\.type) == [
                    "ChargebackReceived", "DisputeDefenseSubmitted", "DisputeSecondPresentment", "ChargebackReversed", "DisputeClosed",
                ]
            )
            #expect(detail.dispute.orderStatus == .shipped)
            list = try WireJSON.decode(DisputeListReply.self, from: try await backOffice.get(client, "/disputes").1)
            #expect(list.disputes.map(\.status) == [.won])
            // Stock is not touched by a dispute: one sold at shipment, none returned.
            let clockRow = try await storefront.clockRow(client)
            #expect(clockRow.quantity_on_hand == 9 && clockRow.reserved == 0)
            #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
        }
    }

    @Test func illegalAnswersAndBadBodiesAreRefusedWithTheErrorShapeAndAppendNothing() async throws {
        let clock = SimulatedClock(Self.start)
        try await TestApp.withApp(seed: true, clock: clock.reading) { client, services in
            let order = try await shippedOrder(client)
            try await services.disputes.receive(chargeback("dp-2", order: order))
            let cases: [(String, String, HTTPResponse.Status, String, String?)] = [
                ("/disputes/dp-2/defend", #"{"evidence_refs": []}"#, .unprocessableContent, "invalid_evidence", "evidence_refs"),
                ("/disputes/dp-2/defend", #"{"evidence_refs": ["has space"]}"#, .unprocessableContent, "invalid_evidence", "evidence_refs"),
                ("/disputes/dp-2/defend", #"{"evidence_refs": "x"}"#, .unprocessableContent, "invalid_evidence", "evidence_refs"),
                ("/disputes/dp-2/defend", #"{}"#, .unprocessableContent, "missing_field", "evidence_refs"),
                ("/disputes/dp-2/defend", #"{"evidence_refs": ["a"], "documents": "x"}"#, .badRequest, "unknown_field", "documents"),
                ("/disputes/dp-2/defend", #"not json"#, .badRequest, "invalid_json", nil),
                ("/disputes/dp-2/accept", #"{"why": 1}"#, .badRequest, "unknown_field", "why"),
                ("/disputes/nope/accept", "", .notFound, "not_found", nil),
                ("/disputes/nope/defend", #"{"evidence_refs": ["a"]}"#, .notFound, "not_found", nil),
            ]
            for (uri, body, expected, code, field) in cases {
                let before = try await head(services)
                let (status, text) = try await post(client, uri, body)
                #expect(status == expected, "\(uri) \(body): \(text)")
                let error = try? WireJSON.decode(ErrorBody.self, from: text).error
                #expect(error?.code == code && error?.field == field, "\(uri) \(body): \(text)")
                #expect(try await head(services) == before, "\(uri) \(body) appended")
            }
            // An auditor reads but does not answer.
            var (status, _) = try await post(client, "/disputes/dp-2/accept", "", key: TestApp.auditorKey)
            #expect(status == .forbidden)
            (status, _) = try await backOffice.get(client, "/disputes?status=lost_in_space")
            #expect(status == .badRequest)
            (status, _) = try await backOffice.get(client, "/disputes?due_before=tomorrow")
            #expect(status == .badRequest)
            // Accepted: the dispute is closed, and every further answer is an illegal transition.
            var text: String
            (status, text) = try await post(client, "/disputes/dp-2/accept", "")
            #expect(status == .ok, "\(text)")
            #expect(try WireJSON.decode(Detail.self, from: text).dispute.status == .accepted)
            #expect(try await backOffice.order(client, order).status == "charged_back")
            for (uri, body) in [("/disputes/dp-2/accept", ""), ("/disputes/dp-2/defend", #"{"evidence_refs": ["a"]}"#)] {
                let before = try await head(services)
                (status, text) = try await post(client, uri, body)
                #expect(status == .conflict && (try? WireJSON.decode(ErrorBody.self, from: text).error.code) == "illegal_transition", "\(text)")
                #expect(try await head(services) == before)
            }
            let before = try await head(services)
            await #expect(throws: ServiceError.conflict("illegal_transition", "")) {
                try await services.disputes.receive(DisputeNotification(disputeID: "dp-2", stage: .chargebackReversed))
            }
            // A second dispute may not claim more than the order has left to dispute.
            await #expect(throws: ServiceError.invalid("exceeds_disputable", "")) {
                try await services.disputes.receive(chargeback("dp-3", order: order, amount: 100))
            }
            await #expect(throws: ServiceError.invalid("unknown_reason", "")) {
                try await services.disputes.receive(chargeback("dp-4", order: order, reason: DisputeReason(network: .visa, code: "99.9")))
            }
            #expect(try await head(services) == before)
        }
    }

    @Test func deadlinesAreKeptOnTheInjectedClock() async throws {
        let clock = SimulatedClock(Self.start)
        try await TestApp.withApp(seed: true, clock: clock.reading) { client, services in
            let visa = try await shippedOrder(client)
            let mastercard = try await shippedOrder(client, source: "tok_mastercard")
            try await services.disputes.receive(chargeback("dp-v", order: visa))
            try await services.disputes.receive(chargeback("dp-m", order: mastercard, reason: .mastercardNoAuthorization))
            // Visa's 30 days, Mastercard's 45: due_before between them finds only Visa's.
            var (status, text) = try await backOffice.get(client, "/disputes?due_before=2026-08-01T00:00:00Z")
            #expect(try WireJSON.decode(DisputeListReply.self, from: text).disputes.map(\.disputeId) == ["dp-v"], "\(text)")
            (status, text) = try await backOffice.get(client, "/disputes")
            #expect(try WireJSON.decode(DisputeListReply.self, from: text).disputes.map(\.disputeId) == ["dp-v", "dp-m"])
            // Exactly at the deadline is on time; one second after is refused, and nothing is appended.
            clock.set(Self.start.addingTimeInterval(30 * 86_400 + 1))
            let before = try await head(services)
            (status, text) = try await post(client, "/disputes/dp-v/defend", #"{"evidence_refs": ["evidence://late"]}"#)
            #expect(status == .conflict && (try? WireJSON.decode(ErrorBody.self, from: text).error.code) == "deadline_passed", "\(text)")
            (status, text) = try await post(client, "/disputes/dp-v/accept", "")
            #expect(status == .conflict && (try? WireJSON.decode(ErrorBody.self, from: text).error.code) == "deadline_passed", "\(text)")
            #expect(try await head(services) == before)
            clock.set(Self.start.addingTimeInterval(45 * 86_400))
            (status, text) = try await post(client, "/disputes/dp-m/defend", #"{"evidence_refs": ["evidence://on-time"]}"#)
            #expect(status == .ok, "\(text)")
        }
    }

    @Test func holdOperationsKeepTheDisputeStatus() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let order = try await shippedOrder(client)
            try await services.disputes.receive(
                DisputeNotification(
                    disputeID: "dp-i",
                    stage: .inquiry,
                    orderID: order,
                    pspReference: "PSP",
                    reason: .visaNotReceived,
                    amount: Money(minorUnits: 2000, currency: .usd)
                )
            )
            #expect(try await backOffice.order(client, order).status == "disputed")
            // A refund recomputes the order's status from its money: the dispute's status stays.
            var (status, text) = try await backOffice.refund(client, order, #"{"amount": "10.00", "reason": "goodwill"}"#)
            #expect(status == .ok && (try? JSONDecoder().decode(HoldOperationReply.self, from: Data(text.utf8)))?.status == .disputed, "\(text)")
            // The inquiry turns into a chargeback: charged back. The bank already returned the funds, so
            // a refund would pay the cardholder twice: refused, nothing appended, nothing sent.
            try await services.disputes.receive(chargeback("dp-i", order: order, amount: 2000, reason: .visaNotReceived))
            let before = try await head(services)
            (status, text) = try await backOffice.refund(client, order, #"{"amount": "5.00", "reason": "goodwill"}"#)
            #expect(status == .conflict && (try? WireJSON.decode(ErrorBody.self, from: text).error.code) == "charged_back", "\(text)")
            #expect(try await head(services) == before)
            #expect(try await backOffice.order(client, order).status == "charged_back")
            // Won with the funds back: the status its money gives, and refunds are possible again.
            try await services.disputes.receive(DisputeNotification(disputeID: "dp-i", stage: .won))
            #expect(try await backOffice.order(client, order).status == "partially_refunded")
            (status, text) = try await backOffice.refund(client, order, #"{"amount": "5.00", "reason": "goodwill"}"#)
            #expect(
                status == .ok && (try? JSONDecoder().decode(HoldOperationReply.self, from: Data(text.utf8)))?.status == .partiallyRefunded,
                "\(text)"
            )
            // What is left to dispute: all 59.00 captured (the won dispute claims nothing; a refund does
            // not stop the cardholder's bank from charging back, see DisputeWorkflow.disputable).
            await #expect(throws: ServiceError.invalid("exceeds_disputable", "")) {
                try await services.disputes.receive(chargeback("dp-j", order: order, amount: 5901))
            }
            try await services.disputes.receive(chargeback("dp-j", order: order, amount: 5900))
            #expect(try await backOffice.order(client, order).status == "charged_back")
        }
    }

    /// Random lifecycles (seeded) over real orders: every step is accepted or refused (with the code) as
    /// ``DisputeModel`` — the networks' rules written apart from `DisputeDecider` — says, moves the money and sets
    /// the status and deadline it says; for every order, captured − refunded − charged back + reversed equals the
    /// model's tally; refusals append nothing; the order's status is the one the model's dispute gives.
    @Test(.seeded()) func randomLifecyclesKeepTheMoneyIdentity() async throws {
        let seed = PropertySeed.current
        let clock = SimulatedClock(Self.start)
        try await TestApp.withApp(seed: true, clock: clock.reading) { client, services in
            var random = SeededRandom(seed: seed)
            var orders: [String] = []
            for _ in 0..<6 { orders.append(try await shippedOrder(client)) }
            var refunded: [String: Int64] = [:]
            var kept: [String: Int64] = [:]  // the model's tally: what each order's merchant keeps
            var disputeOf: [String: String] = [:]
            var model: [String: DisputeModel] = [:]
            for (index, order) in orders.enumerated() {
                kept[order] = 5900
                if random.chance(numerator: 1, denominator: 2) {
                    let amount = 100 * random.int(in: 1...20)
                    let (status, text) = try await backOffice.refund(client, order, #"{"amount": "\#(amount / 100).00", "reason": "r"}"#)
                    #expect(status == .ok, "\(text)")
                    refunded[order] = amount
                    kept[order]! -= amount
                }
                let id = "dp-r\(index)"
                disputeOf[order] = id
                let amount = 5900 - (refunded[order] ?? 0) - random.int(in: 0...1000)
                let stage: DisputeNotification.Stage = random.chance(numerator: 1, denominator: 3) ? .inquiry : .chargeback
                let mastercard = random.chance(numerator: 1, denominator: 2)
                var n = chargeback(id, order: order, amount: amount, reason: mastercard ? .mastercardCardholderDispute : .visaNotReceived)
                n.stage = stage
                try await services.disputes.receive(n)
                model[order] = DisputeModel(opening: stage == .chargeback, amount: amount, defenseDays: mastercard ? 45 : 30, now: clock.now)
                if stage == .chargeback { kept[order]! -= amount }
            }
            var applied: [DisputeModel.Step: Int] = [:]
            var refusals = 0
            for _ in 0..<120 {
                let order = orders[Int(random.next(below: UInt64(orders.count)))]
                let id = disputeOf[order]!
                // Two steps in three are ones the model allows (a random step mostly hits a closed dispute), and of those
                // mostly the ones that keep the dispute open, so lifecycles go past their first stage.
                let allowed = model[order]!.allowed(now: clock.now)
                let staying = allowed.filter { ![.won, .lost, .accept].contains($0) }
                let choices =
                    random.chance(numerator: 2, denominator: 3) && !allowed.isEmpty
                    ? (random.chance(numerator: 4, denominator: 5) && !staying.isEmpty ? staying : allowed) : DisputeModel.Step.allCases
                let step = choices[Int(random.next(below: UInt64(choices.count)))]
                let position = try await head(services)
                let result: Result<DisputeView, any Error>
                do {
                    switch step {
                    case .wait:
                        clock.advance(by: random.int(in: 0...(20 * 86_400)))
                        continue
                    case .chargeback:
                        result = .success(try await services.disputes.receive(chargeback(id, order: order, amount: model[order]!.amount)))
                    case .defend: result = .success(try await services.disputes.defend(id: id, evidenceRefs: ["ev-1"], actor: "op"))
                    case .accept: result = .success(try await services.disputes.accept(id: id, actor: "op"))
                    case .represent: result = .success(try await services.disputes.receive(.init(disputeID: id, stage: .secondPresentment)))
                    case .reverse: result = .success(try await services.disputes.receive(.init(disputeID: id, stage: .chargebackReversed)))
                    case .preArbitration: result = .success(try await services.disputes.receive(.init(disputeID: id, stage: .preArbitration)))
                    case .secondChargeback: result = .success(try await services.disputes.receive(.init(disputeID: id, stage: .secondChargeback)))
                    case .won: result = .success(try await services.disputes.receive(.init(disputeID: id, stage: .won)))
                    case .lost: result = .success(try await services.disputes.receive(.init(disputeID: id, stage: .lost)))
                    }
                } catch {
                    result = .failure(error)
                }
                let was = model[order]!.status
                let expected = model[order]!.apply(step, now: clock.now)
                switch (result, expected) {
                case (.failure(let error), .refused(let code)):
                    #expect((error as? ServiceError)?.code == code, "\(step) on \(was): \(error), the model refuses with \(code)")
                    #expect(try await head(services) == position, "a refused \(step) appended")
                    refusals += 1
                case (.failure(let error), .applied):
                    Issue.record("\(step) on \(was) refused (\(error)); the model applies it")
                    return
                case (.success(let view), .refused(let code)):
                    Issue.record("\(step) on \(was) applied (now \(view.state.status)); the model refuses it with \(code)")
                    return
                case (.success(let view), .applied(let delta)):
                    let m = model[order]!
                    #expect(
                        view.state.netDebited.minorUnits == m.netDebited,
                        "\(step) on \(was): debited \(view.state.netDebited), the model \(m.netDebited)"
                    )
                    #expect(view.state.status.rawValue == m.status.rawValue && view.state.debited == m.debited, "\(step) on \(was)")
                    #expect(view.state.dueAt?.timeIntervalSince1970 == m.due?.timeIntervalSince1970, "\(step) on \(was): deadline")
                    #expect(view.orderStatus?.rawValue == m.orderStatus(refunded: refunded[order] != nil), "\(step) on \(was)")
                    kept[order]! -= delta
                    applied[step, default: 0] += 1
                }
            }
            for order in orders {
                let id = disputeOf[order]!
                guard let hold = try await services.holds.aggregates.hold(OrderID(order)!, fresh: true),
                    let dispute = try await services.disputes.dispute(id: id)
                else {
                    Issue.record("order \(order) lost")
                    continue
                }
                let b = hold.balance
                #expect(b.captured.minorUnits == 5900 && b.refunded.minorUnits == (refunded[order] ?? 0))
                let net = b.captured.minorUnits - b.refunded.minorUnits - dispute.state.chargedBack.minorUnits + dispute.state.reversed.minorUnits
                #expect(net == kept[order], "order \(order): \(net) ≠ \(kept[order] ?? -1)")
                #expect(DisputeWorkflow.netKept(hold: hold, disputes: [dispute.state]).minorUnits == net)
                #expect(dispute.orderStatus?.rawValue == model[order]!.orderStatus(refunded: refunded[order] != nil), "order \(order)")
            }
            // Did the seed test anything: steps applied and refused.
            print(
                "dispute lifecycles: \(applied.values.reduce(0, +)) steps applied (\(applied.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))), \(refusals) refused"
            )
            #expect(refusals > 0 && applied.values.reduce(0, +) >= 12, "applied \(applied), refused \(refusals)")
            #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
        }
    }
}

/// A dispute as the networks' rules say it moves, written apart from `DisputeDecider` (the oracle of
/// `randomLifecyclesKeepTheMoneyIdentity`): which step each status allows, the money each moves (debited from the
/// merchant: positive), the deadline it sets, and the order status a dispute gives.
struct DisputeModel {
    enum Status: String {
        case inquiry
        case chargedBack = "charged_back"
        case defended, represented, reversed
        case preArbitration = "pre_arbitration"
        case secondChargeback = "second_chargeback"
        case accepted, won, lost
    }
    enum Step: CaseIterable { case chargeback, defend, accept, represent, reverse, preArbitration, secondChargeback, won, lost, wait }
    enum Expected: Equatable {
        case refused(String)
        /// Applied, moving this much from the merchant (negative: back to the merchant).
        case applied(Int64)
    }

    let amount: Int64
    let defenseDays: Int
    var status: Status
    var debited: Bool
    var due: Date?
    /// What the dispute holds from the merchant now.
    var netDebited: Int64

    init(opening chargeback: Bool, amount: Int64, defenseDays: Int, now: Date) {
        self.amount = amount
        self.defenseDays = defenseDays
        status = chargeback ? .chargedBack : .inquiry
        debited = chargeback
        due = now.addingTimeInterval(Double((chargeback ? defenseDays : 30) * 86_400))
        netDebited = chargeback ? amount : 0
    }

    /// The steps the rules allow at `now` (waiting aside).
    func allowed(now: Date) -> [Step] {
        Step.allCases.filter { step in
            var copy = self
            guard step != .wait, case .applied = copy.apply(step, now: now) else { return false }
            return true
        }
    }

    /// Applies `step` at `now` when the rules allow it; says what happened.
    mutating func apply(_ step: Step, now: Date) -> Expected {
        let open: Set<Status> = [.inquiry, .chargedBack, .defended, .represented, .reversed, .preArbitration, .secondChargeback]
        let days = { (n: Int) in now.addingTimeInterval(Double(n * 86_400)) }
        let late = due.map { now > $0 } ?? false
        var delta: Int64 = 0
        switch step {
        case .wait: return .applied(0)
        case .chargeback:  // an inquiry may become a chargeback, with the network's defence period
            guard status == .inquiry else { return .refused("illegal_transition") }
            (status, debited, due, delta) = (.chargedBack, true, days(defenseDays), amount)
        case .defend:
            guard [.inquiry, .chargedBack, .secondChargeback].contains(status) else { return .refused("illegal_transition") }
            guard !late else { return .refused("deadline_passed") }
            (status, due) = (.defended, nil)
        case .represent:  // only a defended chargeback is re-presented
            guard status == .defended, debited else { return .refused("illegal_transition") }
            status = .represented
        case .reverse:
            guard status == .defended || status == .represented, debited else { return .refused("illegal_transition") }
            (status, debited, delta) = (.reversed, false, -amount)
        case .preArbitration:
            guard status == .reversed || status == .represented else { return .refused("illegal_transition") }
            (status, due) = (.preArbitration, days(30))
        case .secondChargeback:
            guard status == .reversed || status == .preArbitration, !debited else { return .refused("illegal_transition") }
            (status, debited, due, delta) = (.secondChargeback, true, days(30), amount)
        case .accept:  // the merchant gives the money up: debited if it is not already
            guard [.chargedBack, .preArbitration, .secondChargeback].contains(status) else { return .refused("illegal_transition") }
            guard !late else { return .refused("deadline_passed") }
            (status, due, delta, debited) = (.accepted, nil, debited ? 0 : amount, true)
        case .won:  // the network decides for the merchant: the money comes back
            guard open.contains(status), status != .inquiry else { return .refused("illegal_transition") }
            (status, due, delta, debited) = (.won, nil, debited ? -amount : 0, false)
        case .lost:
            guard open.contains(status), status != .inquiry else { return .refused("illegal_transition") }
            (status, due, delta, debited) = (.lost, nil, debited ? 0 : amount, true)
        }
        netDebited += delta
        return .applied(delta)
    }

    /// The order's status with this dispute on a shipped order of one capture: a won dispute leaves the money's
    /// status; a debited or closed one is a chargeback; an open one with the money at the merchant's, disputed.
    func orderStatus(refunded: Bool) -> String {
        if status == .won { return refunded ? "partially_refunded" : "shipped" }
        return debited || status == .accepted || status == .lost ? "charged_back" : "disputed"
    }
}
