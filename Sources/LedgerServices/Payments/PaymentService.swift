import Crypto
import Foundation
import LedgerCore
import LedgerEngine
import Logging
import Synchronization

/// `POST /payment`: the storefront payment, as appends around one acquirer call.
///
/// 1. Reserve the stock and open the order (pending payment) — one append across the product and
///    order streams, carrying the idempotency key, decided by the writer inside its batch on the product
///    as the batch has left it: many payments for one product are many decisions and one commit, and
///    stock is never oversold (another process's reservation makes the batch decide again).
/// 2. Authorize at the acquirer, outside any transaction, with the order id as our reference (the
///    acquirer is idempotent by it, so a retry never authorizes twice).
/// 3. Record the outcome — hold placed and order authorized, or decline recorded and reservation
///    released, or outcome unknown (91/96, or no answer) left for recovery — and reply.
///
/// Steps 2 and 3, and what a replay continues with, are ``PaymentWorkflow``'s decisions, performed by
/// ``PaymentActions/perform(_:paying:correlation:)`` (below).
///
/// Replies: approved → 200 `{"id": <psp reference>, "status": "succeeded", "order_id", …}`;
/// declined → 402 `{"status": "failed", "decline_code", "message", …}`; unknown outcome → 502
/// with `status` "failed" (the shopper is not charged: recovery reverses or releases). Refusals
/// before anything is appended are 4xx API errors naming the field (409 `out_of_stock`).
///
/// Apple Pay tokens (`gateway: "applepay"`) are verified and decrypted here before step 1, and their
/// transaction id is made single-use by a marker stream in step 1's append (PaymentService+ApplePay.swift).
public struct PaymentService: Sendable {
    package init(
        aggregates: AggregateStore,
        orders: any WaitingOrders,
        catalog: any CatalogNames,
        acquirer: any Acquirer,
        clock: @escaping @Sendable () -> Date,
        taxPolicy: TaxPolicy,
        capturePolicy: CapturePolicy,
        holds: HoldService,
        idempotency: any IdempotencyRecords,
        logger: Logger,
        applePay: ApplePayProcessor? = nil
    ) {
        self.aggregates = aggregates
        self.idempotency = idempotency
        self.orderRows = orders
        self.catalogRows = catalog
        self.acquirer = acquirer
        self.clock = clock
        self.taxPolicy = taxPolicy
        self.capturePolicy = capturePolicy
        self.holds = holds
        self.logger = logger
        self.applePay = applePay
    }

    /// Runs the payment's commands through the writer.
    package let aggregates: AggregateStore
    /// The `orders` read model: the orders recovery looks at (on PostgreSQL, `ProjectionOrderReader`).
    let orderRows: any WaitingOrders
    /// The catalog read models: products and shipping methods by name (on PostgreSQL, `ProjectionStorefrontReader`).
    let catalogRows: any CatalogNames
    let acquirer: any Acquirer
    let clock: @Sendable () -> Date
    let taxPolicy: TaxPolicy
    package let capturePolicy: CapturePolicy
    /// Captures at authorization under the automatic capture policy.
    let holds: HoldService
    /// Where a refused request finds that it repeats an answered one (on PostgreSQL, `IdempotencyStore`).
    let idempotency: any IdempotencyRecords
    let logger: Logger
    /// Verifies and decrypts Apple Pay tokens; nil when the ledger has no Apple Pay keys configured.
    var applePay: ApplePayProcessor? = nil
    /// Product and shipping-method ids by name (names of listed items never change).
    let names = NameIndex()

    public func pay(_ request: PaymentRequest, idempotencyKey: String?) async throws -> PaymentAnswer {
        let productID = try await resolveProduct(request)
        guard let methodKey = try await names.key(CatalogReadModel.shippingMethods, request.shippingMethodName, in: catalogRows),
            let methodID = ShippingMethodID(methodKey)
        else {
            throw Self.unknownShippingMethod(request)
        }
        // Anonymous: the key is bound to the body (its hash is in the stored key), so only the identical request — its
        // card token included — replays the first reply, and another body under the same key is a payment of its own
        // rather than a 409 that would let anyone who guessed a key block it (security review 4, L9).
        let requestHash = Self.hash(request)
        let idempotency = idempotencyKey.map {
            IdempotencyKey.scoped("payment", scope: [Hex.encode(requestHash)], clientKey: $0, requestHash: requestHash)
        }
        let correlation = aggregates.writer.ids.nextString()
        let orderID = OrderID(aggregates.writer.ids.nextString())!
        let contactRef = orderID.contactReference
        let paymentMethod: PaymentMethodData
        let applePayToken: AcceptedApplePayToken?
        switch request.source {
        case .token(let token): (paymentMethod, applePayToken) = (.token(token), nil)
        case .applePayToken(let json):
            let accepted = try await acceptApplePayToken(json: json, request: request, idempotency: idempotency, correlation: correlation)
            (paymentMethod, applePayToken) = (.networkToken(accepted.networkToken), accepted)
        }

        // 1. Reserve and open: decided by the writer inside its batch, on the product as the batch has left it. The
        //    shipping contact is stored by the same append, so it exists exactly when the order does.
        let contact = try ContactRow(ref: contactRef, contact: Self.contact(request))
        let now = clock()
        let placeOrder = PlaceOrder(
            orderID: orderID,
            lines: [RequestedLine(productID: productID, quantity: Int64(request.quantity))],
            shippingMethodID: methodID,
            contactRef: contactRef,
            claimedAmount: ClaimedAmount(minorUnits: request.amount.minorUnits, currencyCode: request.amount.currency.code),
            taxPolicy: taxPolicy
        )
        // The shipping method is read as the writer last saw it, and checked: the order's append is refused (and
        // decided again on the method caught up) if its stream moved since, so a changed price is never missed.
        let open = LedgerCommand(
            reads: AggregateKeys(products: [productID], shippingMethods: [methodID]),
            checked: AggregateKeys(shippingMethods: [methodID]),
            now: now,
            metadata: metadata(correlation, "PlaceOrder", idempotencyKey),
            idempotency: idempotency
        ) { states in
            guard states.products[productID] != nil else { throw Self.unknownProduct(request) }
            guard let method = states.shippingMethods[methodID] else { throw Self.unknownShippingMethod(request) }
            switch PaymentFlow.placeOrder(
                placeOrder,
                order: nil,
                products: states.products,
                shippingMethod: method,
                context: DecisionContext(now: now)
            ) {
            case .failure(let rejection): throw Self.serviceError(rejection, request: request)
            case .success(let plan):
                return CommandPlan(
                    plan: plan,
                    alsoAppending: try applePayToken.map { [try $0.markerAppend(for: plan, orderID: orderID, now: now)] } ?? [],
                    contacts: [contact]
                )
            }
        }
        let opening: PaymentOpening
        do {
            opening = try await self.open(open, orderID: orderID, applePayToken: applePayToken)
        } catch {
            throw await applePayRefusal(error, correlation: correlation)
        }
        if case .opened = opening, applePayToken != nil { applePay?.countAcceptance() }
        do {
            return try await perform(PaymentWorkflow.opened(opening), paying: paymentMethod, correlation: correlation)
        } catch let failure as PaymentFailure {
            switch failure {
            case .idempotencyConflict:
                throw ServiceError.conflict("idempotency_conflict", "this Idempotency-Key was already used for a different payment")
            case .busy: throw ServiceError.unavailable("the product is too busy right now; please retry")
            case .applePayReplayed:
                guard let applePayToken else { throw ServiceError.internalFailure }
                throw await applePayRefusal(Self.replayed(applePayToken.genuine), correlation: correlation)
            case .orderMissing: throw ServiceError.internalFailure
            }
        }
    }

    /// Step 1's append, decided by the writer: how it ended, unless the request was refused (thrown).
    func open(_ command: LedgerCommand, orderID: OrderID, applePayToken: AcceptedApplePayToken?) async throws -> PaymentOpening {
        let ran: CommandOutcome?
        do {
            ran = try await aggregates.run(command) {
                // Another payment took this Apple Pay token's marker: a replay, not a busy product.
                guard let applePayToken else { return false }
                return try await applePayTransactionUsed(applePayToken)
            }
        } catch let error as AppendError where error == .idempotencyConflict {
            return .idempotencyConflict
        } catch is AggregateStore.Contended {
            return .contended
        } catch let refusal as ServiceError {
            // Decided on the product as it is now (sold out since, its price changed), a repeat of an answered request
            // is refused before the writer looks at its key: the key stored (its scope holds this body's hash, so the
            // same body) makes it a replay of that request after all. Probed only here, off the common path: a request
            // refused in the batch that committed the first one's key is answered after that commit.
            guard let key = command.idempotency, let stored = try await idempotency.storedResult(forKey: key.key) else { throw refusal }
            return .replayed(try Self.orderOpened(by: stored))
        }
        guard let outcome = ran else { return .applePayTransactionUsed }
        guard let result = outcome.result, result.replayed else { return .opened(orderID) }
        return .replayed(try Self.orderOpened(by: result))
    }

    /// The order an earlier payment's append opened: the first stream of its append.
    static func orderOpened(by result: AppendResult) throws -> OrderID {
        guard let first = result.streams.first, first.streamID.rawValue.hasPrefix("order-"),
            let earlier = OrderID(String(first.streamID.rawValue.dropFirst("order-".count)))
        else {
            throw ServiceError.internalFailure
        }
        return earlier
    }

    /// Recovery of one order still waiting for payment: asks the acquirer by the order's reference
    /// and records what it says — the hold if it approved, a release if it has nothing, a reversal
    /// and a release if it does not know either. Returns false when the order is too young to judge.
    @discardableResult
    func resolve(_ orderID: OrderID, policy: RecoveryPolicy, correlation: String) async throws -> Bool {
        guard let order = try await aggregates.order(orderID) else { return true }
        guard order.status.awaitsPayment else { return true }
        let query = try await acquirer.query(merchantReference: order.merchantReference)
        let now = clock()
        let reads = AggregateKeys(products: order.lines.map(\.productID), orders: [orderID])
        let metadata = metadata(correlation, "RecoverPayment", nil)
        // The acquirer's answer decides, on the order as the writer's batch has it (another process may have
        // recorded it since): an append, nothing, "too young", or a reversal before the release.
        let recover = Signalled<Recovery>(reads: reads, now: now, metadata: metadata, given: AggregateStates(orders: [orderID: order])) { states in
            guard let order = states.orders[orderID] else { return .nothing(.settled) }
            switch PaymentFlow.recover(order: order, query: query, products: states.products, policy: policy, context: DecisionContext(now: now)) {
            case .failure(let rejection): throw rejection
            case .success(.nothingToDo): return .nothing(.settled)
            case .success(.wait): return .refuse(.waits)
            case .success(.append(let plan)): return .append(CommandPlan(plan: plan), .settled)
            case .success(.reverseThenRelease(let reference)): return .refuse(.reverseFirst(reference: reference))
            }
        }
        do {
            switch try await aggregates.run(recover).signal {
            case .settled: break
            case .waits: return false
            case .reverseFirst(let reference):
                _ = try await acquirer.reverse(
                    ReversalRequest(authorizationReference: reference, modificationReference: "\(reference)-reversal")
                )
                let release = LedgerCommand(reads: reads, now: now, metadata: metadata) { states in
                    guard let order = states.orders[orderID], order.status.awaitsPayment else { return CommandPlan(plan: AppendPlan([])) }
                    return CommandPlan(
                        plan: try PaymentFlow.releasePendingOrder(
                            order: order,
                            products: states.products,
                            reason: .reversedAfterUnknownOutcome,
                            context: DecisionContext(now: now)
                        ).get()
                    )
                }
                _ = try await aggregates.run(release)
            }
        } catch let rejection as PaymentFlowRejection {
            logger.error("recovery refused", metadata: ["order": "\(orderID)", "why": "\(rejection)"])
            return false
        } catch is AggregateStore.Contended {
            return false
        }
        logger.info("pending order resolved", metadata: ["order": "\(orderID)"])
        return true
    }

    /// Recovery's decision, as the recovery command tells it (``Decision``).
    enum Recovery: Sendable {
        /// Recorded, released, or nothing left to do.
        case settled
        /// The order is too young to judge (a refusal: decided again on the order read fresh before it stands).
        case waits
        /// The acquirer does not know either; reverse by this reference, then release (a refusal, like ``waits``).
        case reverseFirst(reference: String)
    }

    /// Orders still waiting for payment, oldest first.
    func waitingOrders(limit: Int = 500) async throws -> [OrderID] {
        try await orderRows.waitingOrders(limit: limit)
    }

    /// Appends what the acquirer answered: a command the writer decides on the order and its products as its
    /// batch has them (other orders move the products). Returns the order and its hold after the append (as they
    /// were when there was nothing to append: recorded already, by another process seen after a conflict).
    package func record(
        _ response: AuthorizationResponse,
        for decidedOn: OrderState,
        correlation: String
    ) async throws -> (order: OrderState, hold: HoldState?) {
        let orderID = decidedOn.id
        let now = clock()
        let command = LedgerCommand(
            reads: AggregateKeys(products: decidedOn.lines.map(\.productID), orders: [orderID]),
            now: now,
            metadata: metadata(correlation, "RecordAuthorization", nil),
            given: AggregateStates(orders: [orderID: decidedOn])
        ) { states in
            guard let order = states.orders[orderID] else { throw ServiceError.internalFailure }
            return CommandPlan(
                plan: try PaymentFlow.recordAuthorization(response, order: order, products: states.products, context: DecisionContext(now: now)).get()
            )
        }
        let outcome: CommandOutcome
        do {
            outcome = try await aggregates.run(command)
        } catch let rejection as PaymentFlowRejection {
            logger.error("acquirer response could not be recorded", metadata: ["order": "\(orderID)", "why": "\(rejection)"])
            throw ServiceError.internalFailure
        } catch is AggregateStore.Contended {
            throw ServiceError.unavailable("the order could not be recorded right now; it will be resolved")
        }
        // Without an idempotency key a command is never a replay, so its states are there.
        guard let after = outcome.states, let order = after.orders[orderID] else { throw ServiceError.internalFailure }
        guard outcome.result == nil else { return (order, after.holds[orderID]) }
        return (order, order.status.awaitsPayment ? nil : try await aggregates.hold(orderID, fresh: false))
    }

    func resolveProduct(_ request: PaymentRequest) async throws -> ProductID {
        if let given = request.productID {
            guard let id = ProductID(given) else {
                throw ServiceError(.invalidInput, code: "unknown_product", message: "no product \(given)", field: "product_id")
            }
            return id
        }
        guard let key = try await names.key(CatalogReadModel.inventory, request.description, in: catalogRows),
            let id = ProductID(key)
        else { throw Self.unknownProduct(request) }
        return id
    }

    static func unknownProduct(_ request: PaymentRequest) -> ServiceError {
        let field = request.productID == nil ? "description" : "product_id"
        return ServiceError(
            .invalidInput,
            code: "unknown_product",
            message: "no product \(request.productID ?? request.description)",
            field: field
        )
    }

    static func unknownShippingMethod(_ request: PaymentRequest) -> ServiceError {
        ServiceError(
            .invalidInput,
            code: "unknown_shipping_method",
            message: "no shipping method named \(request.shippingMethodName)",
            field: "shipping_method_name"
        )
    }

    static func serviceError(_ rejection: PaymentFlowRejection, request: PaymentRequest) -> ServiceError {
        switch rejection {
        case .amountMismatch(.currencyMismatch), .amountMismatch(.unsupportedCurrency):
            return ServiceError(.invalidInput, code: "currency_mismatch", message: rejection.description, field: "currency")
        case .amountMismatch:
            return ServiceError(.invalidInput, code: "amount_mismatch", message: rejection.description, field: "amount")
        case .unknownProduct:
            return unknownProduct(request)
        case .unknownShippingMethod:
            return ServiceError(
                .invalidInput,
                code: "unknown_shipping_method",
                message: rejection.description,
                field: "shipping_method_name"
            )
        case .stock(.insufficientStock):
            return ServiceError(.conflict, code: "out_of_stock", message: rejection.description, field: "quantity")
        case .pricing, .zeroTotal, .stock(.quantityOutOfRange), .stock(.nonPositiveQuantity):
            return ServiceError(.invalidInput, code: "invalid_order", message: rejection.description, field: "quantity")
        default:
            return ServiceError(.conflict, code: "order_refused", message: rejection.description)
        }
    }

    /// The request's content, for the idempotency check: same key + same content → same reply.
    static func hash(_ request: PaymentRequest) -> [UInt8] {
        let source: String
        switch request.source {
        case .token(let token): source = token
        case .applePayToken(let json): source = json
        }
        let fields = [
            request.gateway.rawValue, source, String(request.amount.minorUnits), request.amount.currency.code, request.description,
            request.shippingContact, request.shippingEmail, request.shippingStreet, request.shippingCity, request.shippingState,
            request.shippingZip, request.shippingMethodName, request.productID ?? "", String(request.quantity),
            request.applicationData ?? "",
        ]
        return Array(SHA256.hash(data: Array(fields.joined(separator: "\u{1F}").utf8)))
    }

    func metadata(_ correlation: String, _ command: String, _ idempotencyKey: String?) -> EventMetadata {
        EventMetadata(correlationID: correlation, actor: "storefront", command: command, idempotencyKey: idempotencyKey)
    }

    /// The shipping contact as the request gives it: it goes to its own erasable table, never into the events.
    static func contact(_ request: PaymentRequest) -> ShippingContact {
        ShippingContact(
            name: request.shippingContact,
            email: request.shippingEmail,
            street: request.shippingStreet,
            city: request.shippingCity,
            state: request.shippingState,
            zip: request.shippingZip
        )
    }
}

/// What ``PaymentWorkflow``'s steps need done: reads, the acquirer, the writer. `PaymentService` performs them on the
/// ledger; a test performs them in memory (`LedgerServicesTests`), so the loop below is tested without a database.
package protocol PaymentActions: Sendable {
    var capturePolicy: CapturePolicy { get }
    /// The order as this process last saw it.
    func order(_ id: OrderID) async throws -> OrderState?
    func hold(_ id: OrderID) async throws -> HoldState?
    /// Asks the acquirer to authorize the order's total (an unreachable acquirer is logged, not thrown).
    func authorize(_ order: OrderState, paying method: PaymentMethodData) async -> AuthorizationAttempt
    /// Records the acquirer's answer; returns the order and its hold after it.
    func record(_ response: AuthorizationResponse, for order: OrderState, correlation: String) async throws -> (order: OrderState, hold: HoldState?)
    /// The order as the request that opened it left it: its stream folded through the last event that request
    /// appended (the events carrying its correlation id: the order's opening, the acquirer's answer, the automatic
    /// capture, a recovery on the spot). Nil when there is no such order.
    func firstOrder(_ id: OrderID) async throws -> OrderState?
    /// Captures the whole amount, keyed by the order, as part of the payment `correlation`; false when it failed (logged).
    func captureAtAuthorization(_ order: OrderID, correlation: String) async -> Bool
    /// Asks the acquirer about the order now and records what it says; false when it could not be resolved yet.
    func resolveNow(_ order: OrderID, correlation: String) async -> Bool
}

extension PaymentActions {
    /// The payment from `first` on: performs each step ``PaymentWorkflow`` decides until it replies (or fails, with a
    /// ``PaymentFailure``).
    package func perform(_ first: PaymentStep, paying method: PaymentMethodData, correlation: String) async throws -> PaymentAnswer {
        var step = first
        while true {
            switch step {
            case .loadOrder(let id): step = PaymentWorkflow.loaded(try await order(id))
            case .loadReplayedOrder(let id): step = PaymentWorkflow.loadedForReplay(try await order(id))
            case .authorize(let order): step = PaymentWorkflow.authorized(order, await authorize(order, paying: method))
            case .record(let response, let order):
                let recorded = try await record(response, for: order, correlation: correlation)
                step = PaymentWorkflow.recorded(response, order: recorded.order, hold: recorded.hold, capturePolicy: capturePolicy)
            case .capture(let id): step = PaymentWorkflow.captured(id, succeeded: await captureAtAuthorization(id, correlation: correlation))
            case .recover(let id): step = PaymentWorkflow.recovered(id, resolved: await resolveNow(id, correlation: correlation))
            case .answer(let id):
                guard let order = try await order(id) else { throw PaymentFailure.orderMissing }
                return PaymentWorkflow.answer(order, hold: PaymentWorkflow.answerShowsHold(order) ? try await hold(id) : nil)
            case .answerFirst(let id):
                guard let current = try await order(id), let first = try await firstOrder(id) else { throw PaymentFailure.orderMissing }
                let answered = PaymentWorkflow.replayed(first: first, current: current)
                return PaymentWorkflow.answer(answered, hold: PaymentWorkflow.answerShowsHold(answered) ? try await hold(id) : nil)
            case .reply(let answer): return answer
            case .fail(let failure): throw failure
            }
        }
    }
}

extension PaymentService: PaymentActions {
    package func order(_ id: OrderID) async throws -> OrderState? { try await aggregates.order(id, fresh: false) }

    package func hold(_ id: OrderID) async throws -> HoldState? { try await aggregates.hold(id, fresh: false) }

    package func authorize(_ order: OrderState, paying method: PaymentMethodData) async -> AuthorizationAttempt {
        do {
            return .answered(
                try await acquirer.authorize(
                    AuthorizationRequest(merchantReference: order.merchantReference, amount: order.amounts.total, paymentMethod: method)
                )
            )
        } catch {
            logger.error("acquirer call failed; the order stays pending for recovery", metadata: ["order": "\(order.id)", "error": "\(error)"])
            return .unreachable
        }
    }

    package func firstOrder(_ id: OrderID) async throws -> OrderState? {
        let events = try await aggregates.store.readStream(id.streamID)
        func correlation(_ event: RecordedEvent) -> String? {
            (try? LedgerJSON.decode(EventMetadata.self, from: event.metadata))?.correlationID
        }
        guard let opening = events.first.flatMap(correlation), let last = events.lastIndex(where: { correlation($0) == opening }) else {
            return nil
        }
        return try StateHistory.fold(Array(events[...last])).orders[id]
    }

    package func captureAtAuthorization(_ order: OrderID, correlation: String) async -> Bool {
        do {
            _ = try await holds.perform(
                orderID: order.rawValue,
                HoldOperationRequest(kind: .capture, isFinal: true),
                idempotencyKey: "automatic-capture",
                actor: "capture-policy",
                correlationID: correlation
            )
            return true
        } catch {
            logger.error("automatic capture failed; the order stays authorized", metadata: ["order": "\(order)", "error": "\(error)"])
            return false
        }
    }

    package func resolveNow(_ order: OrderID, correlation: String) async -> Bool {
        // No other authorization for this order is in flight: what the acquirer says now is final.
        (try? await resolve(order, policy: .standard, correlation: correlation)) ?? false
    }
}

/// Ids of listed products and shipping methods by name. A listed item's name never changes (an
/// import does not rename), so a found id stays right; an unknown name is looked up every time.
final class NameIndex: Sendable {
    private let keys = Mutex<[String: String]>([:])

    func key(_ projection: String, _ name: String, in catalog: any CatalogNames) async throws -> String? {
        let cacheKey = projection + "\u{0}" + name
        if let key = keys.withLock({ $0[cacheKey] }) { return key }
        guard let key = try await catalog.key(in: projection, where: "name", equals: name) else { return nil }
        keys.withLock { $0[cacheKey] = key }
        return key
    }
}
