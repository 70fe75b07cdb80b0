import LedgerCore

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
    /// Captures the whole amount, keyed by the order; false when it failed (logged).
    func captureAtAuthorization(_ order: OrderID) async -> Bool
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
            case .authorize(let order): step = PaymentWorkflow.authorized(order, await authorize(order, paying: method))
            case .record(let response, let order):
                let recorded = try await record(response, for: order, correlation: correlation)
                step = PaymentWorkflow.recorded(response, order: recorded.order, hold: recorded.hold, capturePolicy: capturePolicy)
            case .capture(let id): step = PaymentWorkflow.captured(id, succeeded: await captureAtAuthorization(id))
            case .recover(let id): step = PaymentWorkflow.recovered(id, resolved: await resolveNow(id, correlation: correlation))
            case .answer(let id):
                guard let order = try await order(id) else { throw PaymentFailure.orderMissing }
                return PaymentWorkflow.answer(order, hold: PaymentWorkflow.answerShowsHold(order) ? try await hold(id) : nil)
            case .reply(let answer): return answer
            case .fail(let failure): throw failure
            }
        }
    }
}

extension PaymentService: PaymentActions {
    package func order(_ id: OrderID) async throws -> OrderState? { try await loader.order(id, fresh: false) }

    package func hold(_ id: OrderID) async throws -> HoldState? { try await loader.hold(id, fresh: false) }

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

    package func captureAtAuthorization(_ order: OrderID) async -> Bool {
        do {
            _ = try await holds.perform(
                orderID: order.rawValue,
                HoldOperationRequest(kind: .capture, isFinal: true),
                idempotencyKey: "automatic-capture",
                actor: "capture-policy"
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
