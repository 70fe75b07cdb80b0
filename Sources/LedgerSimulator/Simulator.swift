import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerEngine
import LedgerServices
import Logging

/// The ledger under simulation (issue 56), in the shape of TigerBeetle's VOPR: one seed gives the options
/// (``SimulatorOptions``), and one loop performs random operations on the **real services** — ``PaymentService``,
/// ``HoldService``, ``RecoveryService`` and the catalog import — over the engine's in-memory ports (``InMemoryEventLog``
/// under the real writer and command runner, ``InMemoryHoldIntents``), a clock only the simulation moves, ids from the
/// writer's seeded ``IDSource`` and the seeded acquirer model behind a slow, sometimes unreachable network
/// (``SimulatedAcquirer``). One operation runs at a time, so every batch holds one request and a seed always makes the
/// same log, hash for hash.
///
/// After **every** operation, ``SimulatorChecks`` reads the events it appended and checks (in release builds too: they
/// are code, not `assert`s) the chain, the stock, the holds' money and the ledger's holds against the acquirer's; the
/// operation itself checks that a replay answers what the first request was answered, and that a refused request
/// appended nothing. The first violation ends the run (``Failure``).
package final class Simulator {
    /// A check that did not hold.
    package struct Failure: Error, CustomStringConvertible {
        /// 1-based: the operation after which the check failed (0: the set-up).
        package var operation: Int
        package var check: String
        package var detail: String

        package var description: String { "operation \(operation): \(check): \(detail)" }
    }

    /// What a finished run did.
    package struct Report: Sendable {
        package var operations: Int
        /// The log's last position and hash.
        package var position: Int64
        package var head: [UInt8]
        /// Operations by kind and outcome (`pay succeeded`, `capture exceeds_open_amount`, …).
        package var outcomes: [String: Int]
        /// How many checks ran, all passed.
        package var checks: Int
        /// Acquirer calls the simulated network lost.
        package var unreachableCalls: Int
        /// Answers the simulated network lost after the acquirer applied the call.
        package var lostAnswers: Int
    }

    package let options: SimulatorOptions
    private var random: SeededRandom
    private let clock: ManualClock
    private let log: InMemoryEventLog
    private let writer: LedgerWriter
    private let aggregates: AggregateStore
    private let holds: HoldService
    private let payments: PaymentService
    private let recovery: RecoveryService
    private let acquirer: SimulatedAcquirer
    private let logger: Logger
    private var checks: SimulatorChecks
    private var writerLoop: Task<Void, any Error>?

    private var operation = 0
    /// The hold operations noted and not yet recorded: an answer lost after the acquirer applied the call leaves one
    /// until recovery records it (the books of its order are checked then).
    private let intents: InMemoryHoldIntents
    /// The refusal of the last ``attempt(_:_:)`` that was refused.
    private var lastRefusal: ServiceError?
    private var outcomes: [String: Int] = [:]
    /// Orders whose hold is open or has money to refund, or that still hold stock: what hold operations pick from.
    private var active: [OrderID] = []
    private var activeIndex: [OrderID: Int] = [:]
    /// Recent first requests that got an answer, for replays (the last ``remembered`` of each).
    private var paid: [(request: PaymentRequest, key: String, answer: PaymentAnswer)] = []
    private var operated: [(order: OrderID, request: HoldOperationRequest, key: String, outcome: HoldOperationOutcome)] = []
    private static let remembered = 256

    /// The products' ids, the first ``SimulatorOptions/hotProducts`` the hot ones.
    private let productIDs: [ProductID]
    private static let shippingMethods = ["Standard", "Expedited", "Free"]
    private static let approvingCards = ["tok_visa", "tok_visa_debit", "tok_mastercard", "tok_mastercard_prepaid", "tok_amex", "tok_discover"]
    private static let decliningCards = [
        "tok_chargeDeclined", "tok_chargeDeclinedInsufficientFunds", "tok_chargeDeclinedExpiredCard", "tok_chargeDeclinedLostCard",
        "tok_chargeDeclinedProcessingError",
    ]
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    /// Recovery passes after the last operation, each after up to 10 minutes (a note is recovered once it is older than
    /// the recovery policy's minimum age, 2 minutes).
    static let finalRecoveryPasses = 20

    package init(options: SimulatorOptions) {
        self.options = options
        random = SeededRandom(seed: SeededRandom.mix(options.seed ^ 0x5349_4D5F_5354_4550))  // "SIM_STEP"
        let clock = ManualClock(Self.start)
        self.clock = clock
        let log = InMemoryEventLog()
        self.log = log
        let logger = Logger(label: "ledger.simulator") { _ in SwiftLogNoOpLogHandler() }
        self.logger = logger
        let writer = LedgerWriter(log: log, logger: logger, clock: clock, ids: SeededIDs(seed: SeededRandom.mix(options.seed ^ 0x4944_5300)))
        self.writer = writer
        let aggregates = AggregateStore(writer: writer, store: log)
        self.aggregates = aggregates
        let intents = InMemoryHoldIntents()
        self.intents = intents
        let model = AcquirerModel(
            seed: options.seed,
            configuration: AcquirerModelConfiguration(defaultCreditLimit: Money(minorUnits: Int64.max / 4, currency: .usd)),
            clock: { clock.now() }
        )
        let acquirer = SimulatedAcquirer(
            model: model,
            clock: clock,
            seed: options.seed,
            unavailablePerMille: options.unavailablePerMille,
            latencyMaxMillis: options.latencyMaxMillis,
            answerLostPerMille: options.answerLostPerMille
        )
        self.acquirer = acquirer
        let holds = HoldService(
            aggregates: aggregates,
            idempotency: log,
            intents: intents,
            dueHolds: log,
            acquirer: acquirer,
            clock: { clock.now() },
            logger: logger
        )
        self.holds = holds
        let payments = PaymentService(
            aggregates: aggregates,
            orders: log,
            catalog: log,
            acquirer: acquirer,
            clock: { clock.now() },
            taxPolicy: .storefront,
            capturePolicy: options.automaticCapture ? .automatic : .onShipment,
            holds: holds,
            idempotency: log,
            logger: logger
        )
        self.payments = payments
        recovery = RecoveryService(payments: payments, interval: .seconds(60), policy: .standard, logger: logger)
        productIDs = (1...options.products).map { ProductID("sim-product-\($0)")! }
        checks = SimulatorChecks(log: log, model: model)
    }

    /// Runs `operations` operations (after the set-up: the catalogue listed), checking after each; the report, or the
    /// first ``Failure``.
    package func run(operations: Int) async throws -> Report {
        let writer = self.writer
        writerLoop = Task { try await writer.run() }
        defer {
            writer.stop()
            writerLoop?.cancel()
        }
        try await restock(listing: true)
        try await checks.afterOperation(0, touching: [])
        while operation < operations {
            operation += 1
            let target = try await step()
            try await checks.afterOperation(operation, touching: target.map { [$0] } ?? [], unrecorded: intents.orders)
            for order in checks.touchedOrders { updateActive(order) }
            // A run is CPU-bound and its awaits seldom suspend: it gives its thread of the cooperative pool back now
            // and then, so that tasks beside it (a test's deadlines, a daemon's requests) are not starved while it runs.
            // It changes nothing in the run: one operation at a time, in the order the seed draws.
            if operation % 32 == 0 { await Task.yield() }
        }
        // The night after the last operation: recovery records every call the acquirer applied and the ledger has not
        // (their notes old enough), then every book must balance. Its passes are numbered after the operations.
        let performed = operation
        for _ in 0..<Self.finalRecoveryPasses where intents.count > 0 {
            operation += 1
            try await recover()
            try await checks.afterOperation(operation, touching: [], unrecorded: intents.orders)
        }
        if intents.count > 0 {
            throw Failure(operation: operation, check: "recovery", detail: "\(intents.count) hold operations still unrecorded after the final passes")
        }
        try await checks.everything(operation)
        let head = await log.head()
        return Report(
            operations: performed,
            position: head.position,
            head: head.hash,
            outcomes: outcomes,
            checks: checks.count,
            unreachableCalls: acquirer.unreachableCalls,
            lostAnswers: acquirer.lostAnswers
        )
    }

    // MARK: Operations

    /// One random operation; the order it aimed at, if any (checked against the acquirer even when nothing was appended).
    private func step() async throws -> OrderID? {
        clock.advance(by: TimeInterval(random.int(in: 0...2_000)) / 1_000)
        let roll = Int(random.int(in: 0...999))
        var threshold = options.replayPercent * 10
        if roll < threshold { return try await replay() }
        threshold += options.restockPerMille
        if roll < threshold {
            try await restock(listing: false)
            return nil
        }
        threshold += options.sweepPerMille
        if roll < threshold {
            try await sweep()
            return nil
        }
        threshold += max(1, options.sweepPerMille / 2)
        if roll < threshold {
            try await recover()
            return nil
        }
        // The rest: payments (about two in five) and hold operations on the orders they opened.
        if random.int(in: 0...99) < 40 || active.isEmpty {
            try await pay()
            return nil
        }
        let order = active[Int(random.int(in: 0...Int64(active.count - 1)))]
        try await operate(on: order)
        return order
    }

    private func count(_ kind: String, _ outcome: String) { outcomes["\(kind) \(outcome)", default: 0] += 1 }

    /// A new payment: a product (a hot one with the options' share), 1–3 units, a card that approves or (with the
    /// options' rate) one its issuer declines, the amount the storefront computes; under a key of its own.
    private func pay() async throws {
        let hot = Int(random.int(in: 0...99)) < options.hotPercent
        let index = hot ? random.int(in: 0...Int64(options.hotProducts - 1)) : random.int(in: 0...Int64(productIDs.count - 1))
        let product = productIDs[Int(index)]
        let quantity = random.int(in: 1...3)
        let declines = Int(random.int(in: 0...999)) < options.declinePerMille
        let cards = declines ? Self.decliningCards : Self.approvingCards
        let card = cards[Int(random.int(in: 0...Int64(cards.count - 1)))]
        let method = Self.shippingMethods[Int(random.int(in: 0...Int64(Self.shippingMethods.count - 1)))]
        guard let amount = try checks.price(product: product, quantity: quantity, method: method) else {
            throw Failure(operation: operation, check: "catalogue", detail: "product \(product) or method \(method) is not listed")
        }
        let request = PaymentRequest(
            gateway: .stripe,
            source: .token(card),
            amount: amount,
            description: "simulated order",
            shippingContact: "Ada Lovelace",
            shippingEmail: "ada@example.com",
            shippingStreet: "1 Main Street",
            shippingCity: "Springfield",
            shippingState: "IL",
            shippingZip: "62701",
            shippingMethodName: method,
            productID: product.rawValue,
            quantity: Int(quantity),
            applicationData: nil
        )
        let key = "pay-\(operation)"
        if let answer = try await attempt("pay", { try await self.payments.pay(request, idempotencyKey: key) }) {
            count("pay", answer.result.name)
            remember(&paid, (request, key, answer))
        }
    }

    /// A hold operation on `order`: capture (part or all, final or not), increment, void (part or all), refund or
    /// ship, its amount drawn within what the hold allows — and now and then beyond it, which must be refused.
    private func operate(on order: OrderID) async throws {
        let hold = checks.states.holds[order]
        let open = hold?.balance.open.minorUnits ?? 0
        let refundable = hold?.refundable.minorUnits ?? 0
        let beyond = random.int(in: 0...99) < 3
        func amount(upTo limit: Int64) -> String {
            let units = beyond || limit < 1 ? limit + 1 + random.int(in: 0...500) : random.int(in: 1...limit)
            return Money(minorUnits: units, currency: .usd).decimalString
        }
        let request: HoldOperationRequest
        switch random.int(in: 0...99) {
        case 0..<30:
            let whole = random.int(in: 0...2) == 0
            request = HoldOperationRequest(kind: .capture, amount: whole ? nil : amount(upTo: open), isFinal: random.int(in: 0...1) == 0)
        case 30..<38: request = HoldOperationRequest(kind: .increment, amount: amount(upTo: 5_000))
        case 38..<55: request = HoldOperationRequest(kind: .void, amount: random.int(in: 0...1) == 0 ? nil : amount(upTo: open))
        case 55..<75: request = HoldOperationRequest(kind: .refund, amount: amount(upTo: refundable), reason: "simulated return")
        default: request = HoldOperationRequest(kind: .ship, carrier: "UPS", tracking: "1Z\(operation)")
        }
        let key = request.kind.requiresIdempotencyKey ? "hold-\(operation)" : nil
        let kind = request.kind.rawValue
        if let outcome = try await attempt(
            kind,
            {
                try await self.holds.perform(orderID: order.rawValue, request, idempotencyKey: key, actor: "operator:sim")
            }
        ) {
            count(kind, outcome.result.rawValue)
            if let key, outcome.result == .applied { remember(&operated, (order, request, key, outcome)) }
        }
    }

    /// Repeats an earlier request under its key: a payment (its answer must be the first one's, unless that one left the
    /// payment undecided, when the replay carries it on) or a hold operation the acquirer applied (answered from the
    /// ledger as the first request left it, marked `replayed`).
    private func replay() async throws -> OrderID? {
        if random.int(in: 0...1) == 0, !paid.isEmpty {
            let first = paid[Int(random.int(in: 0...Int64(paid.count - 1)))]
            // The case the simulator found (a repeat refused `out_of_stock`): counted, so a test can show it is reached.
            if !first.answer.orderStatus.awaitsPayment, let product = first.request.productID.flatMap(ProductID.init),
                checks.states.products[product].map({ $0.available < Int64(first.request.quantity) }) ?? false
            {
                count("replay-pay", "after_sell_out")
            }
            guard let again = try await attempt("replay-pay", { try await self.payments.pay(first.request, idempotencyKey: first.key) }) else {
                // Only "busy, retry" may refuse the repeat of a payment that was answered: anything else (a 409
                // out_of_stock once the product sold out) tells the shopper something other than the first answer.
                if !first.answer.orderStatus.awaitsPayment, let refusal = lastRefusal, refusal.kind != .unavailable {
                    throw Failure(
                        operation: operation,
                        check: "replay",
                        detail: "payment \(first.key) refused \(refusal.code), first answered \(first.answer)"
                    )
                }
                return first.answer.orderID
            }
            count("replay-pay", again.result.name)
            if !first.answer.orderStatus.awaitsPayment && again != first.answer {
                throw Failure(operation: operation, check: "replay", detail: "payment \(first.key) answered \(again), first \(first.answer)")
            }
            return first.answer.orderID
        }
        guard !operated.isEmpty else { return nil }
        let first = operated[Int(random.int(in: 0...Int64(operated.count - 1)))]
        guard
            let again = try await attempt(
                "replay-\(first.request.kind.rawValue)",
                {
                    try await self.holds.perform(orderID: first.order.rawValue, first.request, idempotencyKey: first.key, actor: "operator:sim")
                }
            )
        else { return first.order }
        count("replay-\(first.request.kind.rawValue)", again.result.rawValue)
        var expected = first.outcome
        expected.result = .replayed
        if again != expected {
            throw Failure(
                operation: operation,
                check: "replay",
                detail: "\(first.request.kind) \(first.key) answered \(again), first \(first.outcome)"
            )
        }
        return first.order
    }

    /// Lists the catalogue (`listing`) or brings one product's stock up by the initial amount, through the catalog
    /// import as an operator does.
    private func restock(listing: Bool) async throws {
        var products: [String] = []
        for (n, id) in productIDs.enumerated() {
            let onHand = checks.states.products[id]?.onHand ?? 0
            let restocked = listing || random.int(in: 0...Int64(productIDs.count - 1)) == Int64(n)
            let price = Money(minorUnits: 100 + Int64(n) * 137, currency: .usd).decimalString
            products.append(
                #"{"id": "\#(id.rawValue)", "name": "Product \#(n + 1)", "description": "simulated", "price": "\#(price)", "stock": \#(onHand + (restocked ? options.initialStock : 0))}"#
            )
        }
        let methods = Self.shippingMethods.enumerated().map { n, name in
            #"{"name": "\#(name)", "description": "simulated", "transit_days": \#(n + 1), "price": "\#(n == 2 ? "0.00" : "\(5 + n * 10).00")"}"#
        }
        let json = #"{"products": [\#(products.joined(separator: ", "))], "shipping_methods": [\#(methods.joined(separator: ", "))]}"#
        let report = try await CatalogImport.parse(json, format: "json").run(aggregates: aggregates, now: clock.now(), logger: logger)
        count(listing ? "list" : "restock", report.stockReceived.isEmpty && report.listed.isEmpty ? "unchanged" : "received")
    }

    /// Moves the clock up to the options' jump, then runs the expiry sweep (the acquirer's word decides what expired).
    private func sweep() async throws {
        clock.advance(by: TimeInterval(random.int(in: 1...options.maximumJumpSeconds)))
        guard let expired = try await pass("sweep", { try await self.holds.expireDue() }) else { return }
        count("sweep", expired > 0 ? "expired" : "none")
    }

    /// One recovery pass: payments left waiting, and hold operations noted and never recorded.
    private func recover() async throws {
        clock.advance(by: TimeInterval(random.int(in: 0...600)))
        guard let resolved = try await pass("recover", { try await self.recovery.sweep() }) else { return }
        count("recover", resolved > 0 ? "resolved" : "none")
    }

    /// Runs one pass of a background job: its result, or nil when the simulated network lost one of its acquirer calls
    /// (the daemon's job tries again at its next pass; so does the simulation); any other error fails the run.
    private func pass<Result>(_ kind: String, _ body: () async throws -> Result) async throws -> Result? {
        do {
            return try await body()
        } catch let error as AcquirerError where error.code == .unavailable {
            count(kind, "acquirer_unavailable")
            return nil
        } catch {
            throw Failure(operation: operation, check: "no unexpected error", detail: "\(kind): \(error)")
        }
    }

    /// Runs one request: its answer, or nil when it was refused with a ``ServiceError`` (counted by its code). A refusal
    /// of the request itself (bad input, nothing found) must append nothing; any other error fails the run.
    private func attempt<Answer>(_ kind: String, _ body: () async throws -> Answer) async throws -> Answer? {
        let before = await log.head().position
        do {
            return try await body()
        } catch let error as ServiceError {
            count(kind, error.code)
            lastRefusal = error
            if error.kind == .invalidInput || error.kind == .notFound || error.kind == .malformedRequest {
                let after = await log.head().position
                if after != before {
                    throw Failure(
                        operation: operation,
                        check: "refusal appends nothing",
                        detail: "\(kind) \(error.code) appended \(after - before) events"
                    )
                }
            }
            return nil
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(operation: operation, check: "no unexpected error", detail: "\(kind): \(error)")
        }
    }

    private func remember<T>(_ list: inout [T], _ element: T) {
        if list.count >= Self.remembered { list.remove(at: Int(random.int(in: 0...Int64(list.count - 1)))) }
        list.append(element)
    }

    /// Keeps `order` among the ones hold operations pick from while it has anything left to operate on.
    private func updateActive(_ order: OrderID) {
        let states = checks.states
        let live: Bool
        if let hold = states.holds[order] {
            live = !hold.isClosed || !hold.refundable.isZero || states.orders[order]?.holdsStock == true
        } else {
            live = false
        }
        if live, activeIndex[order] == nil {
            activeIndex[order] = active.count
            active.append(order)
        } else if !live, let index = activeIndex.removeValue(forKey: order) {
            let last = active.removeLast()
            if index < active.count {
                active[index] = last
                activeIndex[last] = index
            }
        }
    }
}

extension PaymentAnswer.Result {
    var name: String {
        switch self {
        case .succeeded: "succeeded"
        case .declined: "declined"
        case .acquirerUnreachable: "acquirer_unreachable"
        }
    }
}
