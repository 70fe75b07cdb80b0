import Crypto
import Foundation
import LedgerCore
import LedgerEngine
import Logging

/// The back office's hold operations (capture, increment, void, refund, ship) and the expiry sweep,
/// as appends around one acquirer call, like the storefront payment:
///
/// 1. a repeated `Idempotency-Key` answers from the ledger (same body) or is refused (other body);
/// 2. the pure decider checks the operation against the order and hold (fresh from the log) —
///    a rejection is a 4xx and nothing is sent or appended;
/// 3. the acquirer is called outside any transaction, keyed by a modification reference derived
///    from the idempotency key, so a retry after a crash is the same modification there;
/// 4. its answer is recorded: hold event + order event (+ stock sale or release), one append that
///    carries the idempotency key; on a version conflict the answer is recorded on fresh state.
///
/// Each step, and what follows it (the call's note kept or dropped, catching up with the acquirer first, the
/// answer), is ``HoldWorkflow``'s decision; ``HoldActions/perform(from:recording:)`` runs them and
/// ``HoldOperationRun`` (below) performs them.
public struct HoldService: Sendable {
    /// The service on its ports: `idempotency` (the keys appends stored), `intents` (the notes of acquirer calls),
    /// `dueHolds` (the holds due to expire); on PostgreSQL, LedgerPostgres' `IdempotencyStore`, `HoldIntentLog` and
    /// `ProjectionHoldReader`, in memory the engine's ``InMemoryEventLog`` and ``InMemoryHoldIntents``.
    package init(
        aggregates: AggregateStore,
        idempotency: any IdempotencyRecords,
        intents: any HoldIntents,
        dueHolds: any DueHolds,
        acquirer: any Acquirer,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        faultCrashAt: FaultPoint? = nil
    ) {
        self.faultCrashAt = faultCrashAt
        self.intents = intents
        self.aggregates = aggregates
        self.idempotency = idempotency
        self.holdRows = dueHolds
        self.acquirer = acquirer
        self.clock = clock
        self.logger = logger
    }

    package let aggregates: AggregateStore
    /// Probes idempotency keys before the acquirer is called.
    let idempotency: any IdempotencyRecords
    /// The `holds` read model: the holds due to expire.
    let holdRows: any DueHolds
    let acquirer: any Acquirer
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Operations noted before the acquirer is called, deleted once recorded (``recoverUnrecorded(minimumAge:limit:)``).
    let intents: any HoldIntents
    /// A crash test's fault point (`LEDGERD_FAULT_CRASH_AT`), nil in normal operation.
    let faultCrashAt: FaultPoint?
    /// Operations on one order take turns in this process (prepare → acquirer → record), so their
    /// answers are recorded in the order the acquirer gave them.
    let orderTurns = KeyedLock()

    /// What a back-office hold operation (capture, increment, void, refund, ship) came to; refusals throw ``ServiceError``.
    public func perform(
        orderID raw: String,
        _ request: HoldOperationRequest,
        idempotencyKey: String?,
        actor: String
    ) async throws -> HoldOperationOutcome {
        try await perform(orderID: raw, request, idempotencyKey: idempotencyKey, actor: actor, correlationID: nil)
    }

    /// ``perform(orderID:_:idempotencyKey:actor:)`` as part of a larger request `correlationID` (the automatic capture,
    /// of its payment: a replay of the payment finds its events by it); nil: a request of its own.
    public func perform(
        orderID raw: String,
        _ request: HoldOperationRequest,
        idempotencyKey: String?,
        actor: String,
        correlationID: String?
    ) async throws -> HoldOperationOutcome {
        // Decided on this process's cached states (as payments are): every write of this process goes
        // through the same aggregate store, and another daemon's change makes the acquirer refuse or the
        // append conflict, after which the answer is recorded on fresh reads.
        guard let orderID = OrderID(raw), let found = try await aggregates.order(orderID, fresh: false) else {
            throw ServiceError.notFound("no order \(raw)")
        }
        let requestHash = Self.hash(request)
        // Scoped by the principal that sent it (its actor), the order and the operation: another operator's equal key is
        // another operation, never this one's replay (security review 4, L9) — in the ledger's key and in the acquirer's
        // modification reference (a short tag of the actor before the client's key), which the acquirer replays by.
        let key = idempotencyKey.map { "\(Self.principalTag(actor))-\($0)" } ?? aggregates.writer.ids.nextString()
        let ledgerKey = IdempotencyKey.scoped(
            "hold",
            scope: [actor, orderID.rawValue, request.kind.rawValue],
            clientKey: idempotencyKey ?? key,
            requestHash: requestHash
        )
        let stored = idempotencyKey == nil ? nil : try await idempotency.requestHash(forKey: ledgerKey.key)
        let run = HoldOperationRun(
            service: self,
            orderID: orderID,
            found: found,
            request: request,
            key: key,
            idempotency: ledgerKey,
            metadata: EventMetadata(
                correlationID: correlationID ?? aggregates.writer.ids.nextString(),
                actor: actor,
                command: request.kind.rawValue.capitalized + "Hold",
                idempotencyKey: idempotencyKey
            )
        )
        let first = HoldWorkflow.start(keyGiven: idempotencyKey != nil, stored: stored, requestHash: requestHash)
        do {
            let done: (answer: HoldAnswer, order: OrderState, hold: HoldState?)
            if first == .prepare {
                // Operations on one order take turns in this process (prepare → acquirer → record), so their answers
                // are recorded in the order the acquirer gave them.
                done = try await orderTurns.withLock(orderID.rawValue) { try await run.perform(from: first) }
            } else {
                done = try await run.perform(from: first)
            }
            if case .replayed = done.answer, let first = try await firstReply(ledgerKey.key, orderID: orderID, kind: request.kind) {
                return first
            }
            return Self.reply(done.answer, order: done.order, hold: done.hold, kind: request.kind)
        } catch let failure as HoldFailure {
            throw Self.serviceError(failure, kind: request.kind)
        }
    }

    /// The reply the first request with `key` got, as a replay: rebuilt from the log, not from the order as it stands
    /// now — the order and hold as that request's append left them (their streams folded through its last position)
    /// and the modification it recorded (its amount and the acquirer's reference). Nil when the key stored nothing.
    func firstReply(_ key: String, orderID: OrderID, kind: HoldOperationRequest.Kind) async throws -> HoldOperationOutcome? {
        guard let appended = try await idempotency.positions(forKey: key) else { return nil }
        let events = try await aggregates.store.readStreams([orderID.streamID, orderID.holdStreamID], through: appended.upperBound)
        let states = try StateHistory.fold(events)
        guard let order = states.orders[orderID] else { return nil }
        var modification: (amount: Money, reference: String)?
        for recorded in events where appended.contains(recorded.position) && recorded.streamID == orderID.holdStreamID {
            guard StateHistory.known.contains(recorded.type), case .hold(let event) = try DomainEvent.decode(recorded) else { continue }
            switch event {
            case .captured(let e): modification = (e.amount, e.pspModificationReference)
            case .incremented(let e): modification = (e.amount, e.pspModificationReference)
            case .reversed(let e): modification = (e.amount, e.pspModificationReference)
            case .refunded(let e): modification = (e.amount, e.pspModificationReference)
            case .placed, .expired: continue
            }
        }
        return HoldOperationOutcome(
            orderID: orderID,
            operation: kind,
            result: .replayed,
            orderStatus: order.status,
            amount: modification?.amount,
            modificationReference: modification?.reference,
            balance: states.holds[orderID]?.balance
        )
    }

    /// Records the acquirer's answer to `operation`: a command the writer decides inside its batch on the
    /// order, hold and products as the batch has them (``AggregateStore/run(_:)`` decides it again
    /// after another process moved them; stock that is out of date is read fresh and decided again there).
    /// `decidedOn`: the order and hold the caller already holds. With `checkingBalance`, an answer that does not
    /// land the hold where the acquirer says it is (``HoldWorkflow/landsWhereTheAcquirerSays(_:hold:response:)``)
    /// is not appended: ``HoldRecording/behindTheAcquirer``.
    func record(
        _ operation: HoldOperation,
        response: ModificationResponse?,
        orderID: OrderID,
        metadata: EventMetadata,
        idempotency: IdempotencyKey?,
        checkingBalance: Bool,
        decidedOn: (order: OrderState, hold: HoldState)?
    ) async throws -> (HoldRecording, after: (order: OrderState, hold: HoldState?)?) {
        var order = decidedOn?.order
        if order == nil { order = try await aggregates.order(orderID, fresh: false) }
        guard let lines = order?.lines else { throw ServiceError.internalFailure }
        let now = clock()
        let command = Signalled<Landing>(
            reads: AggregateKeys(products: lines.map(\.productID), orders: [orderID], holds: [orderID]),
            now: now,
            metadata: metadata,
            idempotency: idempotency,
            given: decidedOn.map { AggregateStates(orders: [orderID: $0.order], holds: [orderID: $0.hold]) } ?? .init()
        ) { states in
            guard let order = states.orders[orderID], let hold = states.holds[orderID] else { throw ServiceError.internalFailure }
            let plan = try HoldLifecycle.record(
                operation,
                response: response,
                order: order,
                hold: hold,
                products: states.products,
                context: DecisionContext(now: now)
            ).get()
            if checkingBalance, let response, !HoldWorkflow.landsWhereTheAcquirerSays(plan, hold: hold, response: response) {
                return .refuse(.behindTheAcquirer)
            }
            return .append(CommandPlan(plan: plan), .lands)
        }
        let outcome: CommandOutcome
        do {
            let ran = try await aggregates.run(command)
            switch ran.signal {
            case .lands: outcome = ran.outcome
            case .behindTheAcquirer: return (.behindTheAcquirer, nil)
            }
        } catch let rejection as HoldRejection {
            logger.error("acquirer answer could not be recorded", metadata: ["order": "\(orderID)", "why": "\(rejection)"])
            return (.refused(rejection), nil)
        } catch is AggregateStore.Contended {
            return (.contended, nil)
        } catch let error as AppendError where error == .idempotencyConflict {
            throw HoldFailure.idempotencyConflict
        }
        guard let after = outcome.states else {
            // A replay: an earlier request with this key was recorded; answer with the states it left.
            guard let current = try await aggregates.order(orderID, fresh: false) else { throw ServiceError.internalFailure }
            return (.recorded(appended: false, replayed: true), (current, try await aggregates.hold(orderID, fresh: false)))
        }
        guard let orderAfter = after.orders[orderID] else { throw ServiceError.internalFailure }  // read, so in `after`
        return (.recorded(appended: outcome.result != nil, replayed: false), (orderAfter, after.holds[orderID]))
    }

    /// Where recording the acquirer's answer leaves the hold, as the recording command tells it (``Decision``).
    enum Landing: Sendable {
        /// Where the acquirer says it is (or not checked): appended.
        case lands
        /// Not where the acquirer says: record its earlier answers first (a refusal, decided again on the streams
        /// read fresh before it stands).
        case behindTheAcquirer
    }

    /// Turns the API's decimal strings into the order's money.
    static func operation(_ request: HoldOperationRequest, currency: Currency) throws -> HoldOperation {
        func money(_ text: String?) throws -> Money? {
            guard let text else { return nil }
            do { return try Money(decimal: text, currency: currency) } catch {
                throw ServiceError(
                    .invalidInput,
                    code: "invalid_amount",
                    message: "amount must be a decimal string in \(currency.code) such as \"12.50\"",
                    field: "amount"
                )
            }
        }
        switch request.kind {
        case .capture: return .capture(amount: try money(request.amount), isFinal: request.isFinal)
        case .increment: return .increment(amount: try money(request.amount)!)
        case .void: return .void(amount: try money(request.amount))
        case .refund: return .refund(amount: try money(request.amount)!, reason: request.reason ?? "")
        case .ship: return .ship(carrier: request.carrier, tracking: request.tracking)
        }
    }

    /// Calls the acquirer: its answer, its refusal (a definite answer: nothing was applied), or no answer.
    func send(_ call: HoldAcquirerCall) async -> ModificationAttempt {
        do {
            switch call {
            case .capture(let r): return .answered(try await acquirer.capture(r))
            case .increment(let r): return .answered(try await acquirer.increment(r))
            case .reverse(let r): return .answered(try await acquirer.reverse(r))
            case .refund(let r): return .answered(try await acquirer.refund(r))
            case .none: return .refused(AcquirerError(.invalidRequest, "nothing to send"))  // HoldWorkflow records, never sends, these
            }
        } catch {
            logger.warning("acquirer refused a hold operation", metadata: ["error": "\(error)"])
            return error.code == .unavailable ? .unreachable : .refused(error)
        }
    }

    /// The client's error for a failed operation.
    static func serviceError(_ failure: HoldFailure, kind: HoldOperationRequest.Kind) -> ServiceError {
        switch failure {
        case .idempotencyConflict:
            return ServiceError.conflict("idempotency_conflict", "this Idempotency-Key was already used for a different \(kind.rawValue)")
        case .rejected(let rejection): return serviceError(rejection)
        case .acquirerUnavailable:
            return ServiceError(
                .dependencyFailed,
                code: "acquirer_unavailable",
                message: "the acquirer could not be reached; retry with the same Idempotency-Key"
            )
        case .acquirerRefused(let error) where error.code == .holdExpired:
            return ServiceError.conflict("hold_expired", "the acquirer reports the hold expired")
        case .acquirerRefused(let error) where error.code == .duplicateReference:
            return ServiceError.conflict("idempotency_conflict", "the acquirer has this reference for a different request")
        case .acquirerRefused(let error):
            return ServiceError.conflict("acquirer_refused", "the acquirer refused the operation: \(error.description)")
        case .busy: return ServiceError.unavailable("the order is too busy right now; retry with the same Idempotency-Key")
        }
    }

    static func serviceError(_ rejection: HoldRejection) -> ServiceError {
        let message = rejection.description
        switch rejection {
        case .unknownOrder: return ServiceError.notFound(message)
        case .notAuthorized: return ServiceError.conflict("not_authorized", message)
        case .holdClosed: return ServiceError.conflict("hold_closed", message)
        case .holdLapsed: return ServiceError.conflict("hold_expired", message)
        case .alreadyShipped: return ServiceError.conflict("already_shipped", message)
        case .chargedBack: return ServiceError.conflict("charged_back", message)
        case .nothingToShip: return ServiceError.conflict("nothing_to_ship", message)
        case .nonPositiveAmount, .amountOutOfRange:
            return ServiceError(.invalidInput, code: "invalid_amount", message: message, field: "amount")
        case .currencyMismatch: return ServiceError(.invalidInput, code: "currency_mismatch", message: message, field: "amount")
        case .exceedsOpen: return ServiceError(.invalidInput, code: "exceeds_open_amount", message: message, field: "amount")
        case .exceedsRefundable: return ServiceError(.invalidInput, code: "exceeds_refundable", message: message, field: "amount")
        case .missingReason: return ServiceError(.invalidInput, code: "missing_field", message: message, field: "reason")
        case .responseMismatch: return ServiceError(.dependencyFailed, code: "acquirer_mismatch", message: message)
        case .stockOutOfDate: return ServiceError.unavailable(message)
        }
    }

    /// 8 hex digits of the actor's SHA-256: who sent a client's key, in the acquirer's modification reference.
    public static func principalTag(_ actor: String) -> String { Hex.encode(Array(SHA256.hash(data: Array(actor.utf8)).prefix(4))) }

    static func hash(_ request: HoldOperationRequest) -> [UInt8] {
        let fields = [
            request.kind.rawValue, request.amount ?? "", request.isFinal ? "final" : "", request.reason ?? "",
            request.carrier ?? "", request.tracking ?? "",
        ]
        return Array(SHA256.hash(data: Array(fields.joined(separator: "\u{1F}").utf8)))
    }

    /// The answer for an operation, from the order and hold it left (or found, for a replay).
    static func reply(_ answer: HoldAnswer, order: OrderState, hold: HoldState?, kind: HoldOperationRequest.Kind) -> HoldOperationOutcome {
        switch answer {
        case .applied(let response), .replayed(let response):
            return HoldOperationOutcome(
                orderID: order.id,
                operation: kind,
                result: answer == .applied(response) ? .applied : .replayed,
                orderStatus: order.status,
                amount: response?.amount,
                modificationReference: response?.modificationPSPReference,
                balance: hold?.balance
            )
        case .declined(let response):
            // An increment the issuer declined: an answer, not an error — nothing changes.
            return HoldOperationOutcome(
                orderID: order.id,
                operation: .increment,
                result: .declined,
                orderStatus: order.status,
                amount: response.amount,
                modificationReference: response.modificationPSPReference,
                balance: hold?.balance,
                declineCode: response.responseCode.rawValue,
                message: response.responseCode.meaning
            )
        }
    }

    // MARK: Expiry

    /// Expires every open hold whose expiry is at or before `now`, `batchSize` holds per append
    /// (hold expired + order status + stock released, decided on states read fresh in one query).
    ///
    /// The acquirer's word decides, not our clock alone: a hold is expired only when the acquirer
    /// reports it expired and every modification it applied is in the ledger. An operation the
    /// acquirer applied that the ledger has not recorded (in flight, or its recorder crashed) is
    /// recorded first from the acquirer's answer — so a void that beat the expiry at the acquirer is
    /// a reversal here too, never an expiry. Several sweepers may race: appends are version-checked,
    /// so each hold expires exactly once. Returns the number of holds this call expired.
    ///
    /// The sweep is a pipeline of two stages: while one page's append commits, the next page is read
    /// (its due rows, its orders' and holds' streams, the acquirer's word on each). The pages hold
    /// different orders, so that read does not depend on the commit; the products are taken at
    /// decision time, after the previous page committed. A page that conflicts or must catch up is
    /// read again, and the page read beside it is dropped.
    @discardableResult
    public func expireDue(now: Date? = nil, batchSize: Int = 500) async throws -> Int {
        var expired = 0
        var rounds = 0
        var cursor: DueHoldCursor?
        var following: ExpiryPage?  // read while the previous page committed
        var refused: Set<OrderID> = []  // refused on states read fresh: skipped, logged
        while rounds <= AggregateStore.maximumAttempts {
            rounds += 1
            let now = now ?? clock()
            let page: ExpiryPage
            if let following {
                page = following
            } else {
                page = try await readExpiryPage(now: now, limit: batchSize, after: cursor)
            }
            following = nil
            let unrecorded = Self.unrecorded(on: page)
            for (orderID, _) in unrecorded { try await catchUp(orderID) }
            let metadata = EventMetadata(correlationID: aggregates.writer.ids.nextString(), actor: "expiry-sweeper", command: "ExpireHolds")
            // The next page is read beside this commit when it is the one that comes next.
            let readsNext = !page.isLast && unrecorded.isEmpty
            async let next: ExpiryPage? = readsNext ? readExpiryPage(now: now, limit: batchSize, after: page.next) : nil
            let outcome: CommandOutcome
            do {
                let ran = try await aggregates.run(expiry(page, now: now, metadata: metadata, skipping: refused))
                switch ran.signal {
                case .expired: outcome = ran.outcome
                case .refused(let order, let rejection):
                    // Refused on states the writer read fresh (it decides a refusal on remembered ones again): the
                    // ledger disagrees with itself about this order. Logged, skipped; the rest of the page is read again.
                    logger.error("expiry refused", metadata: ["order": "\(order)", "why": "\(rejection)"])
                    refused.insert(order)
                    rounds = 0  // one order fewer to decide: progress
                    continue
                }
            } catch is AggregateStore.Contended {
                continue  // other sweepers and operators kept moving this page: read it again
            }
            let count = page.orders.filter { outcome.decidedOn.holds[$0]?.isClosed == false && outcome.states?.holds[$0]?.isClosed == true }.count
            if count == 0 {
                if !unrecorded.isEmpty { continue }  // this page again, now with every modification recorded
                if page.isLast { break }
                cursor = page.next  // nothing the acquirer calls expired on this page: the next one
                following = try await next
                rounds = 0
                continue
            }
            following = try await next
            expired += count
            rounds = 0
            if page.isLast && unrecorded.isEmpty { break }
            // The next page starts after this one, unless some of it must be read again (modifications caught up).
            if unrecorded.isEmpty { cursor = page.next }
        }
        return expired
    }

    /// What the expiry command decided (``Decision``).
    enum Expiry: Sendable {
        /// The page's expiries the acquirer confirms (none, perhaps).
        case expired
        /// The hold lifecycle refused this order's expiry (a refusal: decided again on states read fresh first).
        case refused(order: OrderID, rejection: HoldRejection)
    }

    /// One page of the sweep as read: the due orders, their order and hold streams fresh from the
    /// log, and the acquirer's word on each open hold.
    struct ExpiryPage: Sendable {
        var orders: [OrderID]
        var next: DueHoldCursor?
        /// Fewer rows than asked for: nothing is due after this page.
        var isLast: Bool
        var states: AggregateStates
        var acquirerAnswers: [OrderID: PaymentQueryResult]
    }

    /// Reads one page of due holds after `cursor` (one query for the rows, one for the streams, and
    /// one acquirer request for its open holds).
    func readExpiryPage(now: Date, limit: Int, after cursor: DueHoldCursor?) async throws -> ExpiryPage {
        let (orders, next) = try await holdRows.dueHolds(now: now, limit: limit, after: cursor)
        var states = AggregateStates()
        for recorded in try await aggregates.store.readStreams(orders.flatMap { [$0.streamID, $0.holdStreamID] }) {
            states.apply(try DomainEvent.decode(recorded))
        }
        let open = orders.compactMap { id -> (OrderID, String)? in
            guard states.orders[id] != nil, let hold = states.holds[id], !hold.isClosed else { return nil }
            return (id, hold.merchantReference)
        }
        let answers = try await Self.query(open, at: acquirer)
        return ExpiryPage(orders: orders, next: next, isLast: orders.count < limit, states: states, acquirerAnswers: answers)
    }

    /// The acquirer's word on each hold (order id, merchant reference), asked in one call for the page
    /// (``Acquirer/query(merchantReferences:)``). Issue 57: one request per hold, even 16 at a time, made the
    /// sweep as much work as the payments during a day at the machine's maximum.
    static func query(_ holds: [(OrderID, String)], at acquirer: any Acquirer) async throws -> [OrderID: PaymentQueryResult] {
        guard !holds.isEmpty else { return [:] }
        let answers = try await acquirer.query(merchantReferences: holds.map(\.1))
        guard answers.count == holds.count else {
            throw AcquirerError(.unavailable, "the acquirer answered \(answers.count) queries for \(holds.count) references")
        }
        return Dictionary(zip(holds.map(\.0), answers), uniquingKeysWith: { first, _ in first })
    }

    /// Holds on `page` with modifications the acquirer applied and the ledger has not recorded, oldest first.
    static func unrecorded(on page: ExpiryPage) -> [(OrderID, [ModificationResponse])] {
        page.orders.compactMap { id in
            guard page.states.orders[id] != nil, let hold = page.states.holds[id], !hold.isClosed,
                case .found(let details) = page.acquirerAnswers[id]
            else { return nil }
            let missing = HoldWorkflow.unrecorded(details, hold: hold)
            return missing.isEmpty ? nil : (id, missing)
        }
    }

    /// The command expiring what the acquirer reports expired on `page`, in one append, decided by the writer on
    /// the page's orders and holds (as read, unless it has seen them move since) and their products as its batch
    /// has them; each expiry sees the stock as the previous ones left it (one product stream gets all its releases).
    ///
    /// An expiry the lifecycle refuses refuses the command (``Expiry/refused(order:rejection:)``), never skipped here:
    /// the usual cause is a product state the writer remembered from before another daemon moved it (`stockOutOfDate`),
    /// and a refusal on a remembered state is decided again on states read fresh (``CommandDecisions``). Skipped, it appended nothing, so
    /// nothing ever caught that product up, and this daemon's sweeps passed over its due holds. `skipping`: orders
    /// refused on fresh states, which ``expireDue(now:batchSize:)`` leaves for an operator.
    func expiry(_ page: ExpiryPage, now: Date, metadata: EventMetadata, skipping: Set<OrderID>) -> Signalled<Expiry> {
        var products: [ProductID] = []
        var seen = Set<ProductID>()
        for id in page.orders {
            for line in page.states.orders[id]?.lines ?? [] where seen.insert(line.productID).inserted { products.append(line.productID) }
        }
        let unrecorded = Set(Self.unrecorded(on: page).map(\.0))
        let logger = self.logger
        return Signalled(
            reads: AggregateKeys(products: products, orders: page.orders, holds: page.orders),
            now: now,
            metadata: metadata,
            given: page.states
        ) { states in
            var states = states
            var builder = AppendPlanBuilder()
            let context = DecisionContext(now: now)
            for id in page.orders where !unrecorded.contains(id) && !skipping.contains(id) {
                guard let order = states.orders[id], let hold = states.holds[id], !hold.isClosed, let answer = page.acquirerAnswers[id] else {
                    continue
                }
                guard case .found(let details) = answer else {
                    logger.error("the acquirer does not know an open hold; not expiring it", metadata: ["order": "\(id)"])
                    continue
                }
                guard details.status == .expired else { continue }  // not lapsed at the acquirer (yet)
                switch HoldLifecycle.expire(order: order, hold: hold, products: states.products, context: context) {
                case .failure(let rejection):
                    return .refuse(.refused(order: id, rejection: rejection))
                case .success(let plan):
                    builder.add(plan)
                    for case .product(let e) in plan.events { states.products[e.productID]!.apply(e) }
                }
            }
            return .append(CommandPlan(plan: builder.plan), .expired)
        }
    }

    /// Records modifications the acquirer applied that the ledger lacks, in the acquirer's order and
    /// from its own answers (the same decider as the operations that asked for them; an answer already
    /// recorded records nothing). With `before`, only those the acquirer applied before that one.
    func catchUp(_ orderID: OrderID, before reference: String? = nil) async throws {
        guard let hold = try await aggregates.hold(orderID),
            case .found(let details) = try await acquirer.query(merchantReference: hold.merchantReference)
        else { return }
        let metadata = EventMetadata(correlationID: aggregates.writer.ids.nextString(), actor: "acquirer-sync", command: "RecordFromAcquirer")
        for modification in HoldWorkflow.unrecorded(details, hold: hold, before: reference) {
            logger.notice(
                "recording a modification the acquirer applied before the ledger heard of it",
                metadata: [
                    "order": "\(orderID)", "modification": "\(modification.modificationReference)", "kind": "\(modification.kind)",
                ]
            )
            let run = HoldOperationRun(service: self, orderID: orderID, metadata: metadata)
            _ = try await run.perform(from: .record(modification, checkingBalance: false), recording: HoldWorkflow.operation(of: modification))
        }
    }

    // MARK: Operations applied at the acquirer and not recorded

    /// The note an acquirer call leaves until its answer is recorded; nil when nothing is sent.
    static func intent(
        for call: HoldAcquirerCall,
        orderID: OrderID,
        ledgerKey: IdempotencyKey?,
        idempotencyKey: String?,
        actor: String,
        now: Date
    ) -> HoldIntent? {
        let (kind, reference): (String, String)
        switch call {
        case .capture(let r): (kind, reference) = ("capture", r.modificationReference)
        case .increment(let r): (kind, reference) = ("increment", r.modificationReference)
        case .reverse(let r): (kind, reference) = ("void", r.modificationReference)
        case .refund(let r): (kind, reference) = ("refund", r.modificationReference)
        case .none: return nil
        }
        return HoldIntent(
            modificationReference: reference,
            orderID: orderID.rawValue,
            kind: kind,
            ledgerKey: ledgerKey?.key,
            requestHash: ledgerKey?.requestHash,
            idempotencyKey: idempotencyKey,
            actor: actor,
            notedAt: now
        )
    }

    /// The crash test's point right after the acquirer applied a modification of `kind`.
    static func appliedPoint(_ kind: ModificationKind) -> FaultPoint {
        switch kind {
        case .capture: return .holdCaptureApplied
        case .increment: return .holdIncrementApplied
        case .reversal: return .holdVoidApplied
        case .refund: return .holdRefundApplied
        }
    }

    /// Resolves the hold operations noted at least `minimumAge` ago and never recorded — the ledger
    /// died after calling the acquirer, or never heard its answer: each is looked up at the acquirer
    /// by our payment reference (its status inquiry) and, when the acquirer applied it, recorded from
    /// the acquirer's answer with the original request's idempotency key and actor (earlier
    /// modifications the ledger lacks first). One the acquirer never applied is dropped (the client's
    /// retry with its key applies it). Each note is deleted once resolved; an acquirer that cannot be
    /// reached leaves it for the next pass. Returns how many operations were recorded.
    @discardableResult
    public func recoverUnrecorded(minimumAge: TimeInterval, limit: Int = 500) async throws -> Int {
        let due = try await intents.due(before: clock().addingTimeInterval(-minimumAge), limit: limit)
        var recorded = 0
        for intent in due {
            if let orderID = OrderID(intent.orderID),
                try await orderTurns.withLock(orderID.rawValue, { try await recover(intent, orderID: orderID) })
            {
                recorded += 1
            }
            try await intents.delete(intent.modificationReference)
        }
        return recorded
    }

    /// Records `intent`'s modification if the acquirer applied it and the ledger lacks it.
    private func recover(_ intent: HoldIntent, orderID: OrderID) async throws -> Bool {
        guard let hold = try await aggregates.hold(orderID), !hold.modificationReferences.contains(intent.modificationReference),
            case .found(let details) = try await acquirer.query(merchantReference: hold.merchantReference),
            let modification = details.modifications.first(where: { $0.modificationReference == intent.modificationReference }),
            modification.responseCode.isApproved
        else { return false }
        logger.notice(
            "recording a hold operation the acquirer applied and the ledger had not recorded",
            metadata: ["order": "\(orderID)", "modification": "\(intent.modificationReference)", "kind": "\(intent.kind)"]
        )
        let run = HoldOperationRun(
            service: self,
            orderID: orderID,
            idempotency: intent.ledgerKey.flatMap { key in intent.requestHash.map { IdempotencyKey(key: key, requestHash: $0) } },
            metadata: EventMetadata(
                correlationID: aggregates.writer.ids.nextString(),
                actor: intent.actor,
                command: intent.kind.capitalized + "Hold",
                idempotencyKey: intent.idempotencyKey
            )
        )
        // The acquirer's earlier modifications first, then this one.
        _ = try await run.perform(from: .catchUp(modification), recording: HoldWorkflow.operation(of: modification))
        return true
    }
}

/// One operation on one order as ``HoldService`` performs it: the request's context, and the actions its
/// ``HoldWorkflow`` asks for (``HoldActions/perform(from:recording:)`` runs them). Without a request it records an
/// answer the acquirer gave that the ledger lacks (catching up, recovering a noted call).
struct HoldOperationRun: HoldActions {
    let service: HoldService
    let orderID: OrderID
    /// The order as the request found it: a replay answers with it (nothing moved it that this process knows of).
    var found: OrderState? = nil
    var request: HoldOperationRequest? = nil
    /// The client's idempotency key, or a fresh one: keys the modification at the acquirer.
    var key = ""
    var idempotency: IdempotencyKey? = nil
    let metadata: EventMetadata

    func prepare() async throws -> HoldPreparation {
        guard let request, let order = try await service.aggregates.order(orderID, fresh: false) else {
            throw ServiceError.notFound("no order \(orderID)")
        }
        let operation = try HoldService.operation(request, currency: order.amounts.total.currency)
        return HoldPreparation(
            operation: operation,
            order: order,
            hold: try await service.aggregates.hold(orderID, fresh: false),
            modificationReference: HoldLifecycle.modificationReference(order: order, operation: operation, key: key),
            now: service.clock()
        )
    }

    func current() async throws -> (order: OrderState, hold: HoldState?) {
        var order = found
        if order == nil { order = try await service.aggregates.order(orderID, fresh: false) }
        guard let order else { throw ServiceError.internalFailure }
        return (order, try await service.aggregates.hold(orderID, fresh: false))
    }

    func note(_ call: HoldAcquirerCall) async throws {
        guard let intent = intent(call) else { return }
        try await service.intents.note(intent)
    }

    func dropNote(_ call: HoldAcquirerCall) async {
        guard let intent = intent(call) else { return }
        service.intents.drop(intent.modificationReference)
    }

    /// The call's note. A shipment's capture carries no key: its retry is a new shipment request.
    func intent(_ call: HoldAcquirerCall) -> HoldIntent? {
        HoldService.intent(
            for: call,
            orderID: orderID,
            ledgerKey: request?.kind == .ship ? nil : idempotency,
            idempotencyKey: metadata.idempotencyKey,
            actor: metadata.actor ?? "",
            now: service.clock()
        )
    }

    func send(_ call: HoldAcquirerCall) async -> ModificationAttempt {
        let attempt = await service.send(call)
        if case .answered(let response) = attempt {
            HoldService.appliedPoint(response.kind).crashIfConfigured(service.faultCrashAt, logger: service.logger)
        }
        return attempt
    }

    func record(
        _ operation: HoldOperation,
        _ response: ModificationResponse?,
        checkingBalance: Bool,
        decidedOn: (order: OrderState, hold: HoldState)?
    ) async throws -> (HoldRecording, after: (order: OrderState, hold: HoldState?)?) {
        try await service.record(
            operation,
            response: response,
            orderID: orderID,
            metadata: metadata,
            idempotency: idempotency,
            checkingBalance: checkingBalance,
            decidedOn: decidedOn
        )
    }

    func catchUp(before response: ModificationResponse) async throws {
        try await service.catchUp(orderID, before: response.modificationReference)
    }
}
