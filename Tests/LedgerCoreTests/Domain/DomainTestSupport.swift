import Foundation

@testable import LedgerCore

/// Money from a literal, for tests only.
func usd(_ text: String) -> Money { try! Money(decimal: text, currency: .usd) }
func eur(_ text: String) -> Money { try! Money(decimal: text, currency: .eur) }

func pid(_ raw: String) -> ProductID { ProductID(raw)! }
func oid(_ raw: String) -> OrderID { OrderID(raw)! }
func sid(_ raw: String) -> ShippingMethodID { ShippingMethodID(raw)! }

/// A whole-microsecond instant so that timestamps survive the JSON round trip unchanged.
let t0 = Date(timeIntervalSince1970: 1_750_000_000)
let ctx = DecisionContext(now: t0)

/// A test-only event store: applies append plans with the same expected-version rule as the database,
/// and keeps every aggregate's state folded, so tests can run the payment flow end to end.
struct InMemoryLedger {
    struct VersionConflict: Error, Equatable { var stream: StreamID }

    private(set) var streams: [StreamID: [DomainEvent]] = [:]
    private(set) var log: [DomainEvent] = []
    private(set) var products: [ProductID: ProductState] = [:]
    private(set) var shippingMethods: [ShippingMethodID: ShippingMethodState] = [:]
    private(set) var orders: [OrderID: OrderState] = [:]
    private(set) var holds: [OrderID: HoldState] = [:]

    /// Appends all of a plan or nothing.
    mutating func commit(_ plan: AppendPlan) throws(VersionConflict) {
        for append in plan.appends where !append.expectedVersion.accepts(current: Int64(streams[append.streamID]?.count ?? 0)) {
            throw VersionConflict(stream: append.streamID)
        }
        for append in plan.appends {
            for event in append.events {
                precondition(event.streamID == append.streamID, "event \(event.type) in the wrong stream")
                streams[append.streamID, default: []].append(event)
                log.append(event)
                apply(event)
            }
        }
    }

    mutating func commit(_ appends: [PlannedAppend]) throws(VersionConflict) { try commit(AppendPlan(appends)) }

    private mutating func apply(_ event: DomainEvent) {
        switch event {
        case .product(let e): products[e.productID] = ProductState.evolve(products[e.productID], e)
        case .shippingMethod(let e): shippingMethods[e.shippingMethodID] = ShippingMethodState.evolve(shippingMethods[e.shippingMethodID], e)
        case .order(let e): orders[e.orderID] = OrderState.evolve(orders[e.orderID], e)
        case .hold(let e): holds[e.orderID] = HoldState.evolve(holds[e.orderID], e)
        }
    }

    static func seeded() -> InMemoryLedger {
        var ledger = InMemoryLedger()
        try! ledger.commit(DemoCatalog.seedAppends(context: ctx))
        return ledger
    }

    func products(for order: OrderState) -> [ProductID: ProductState] {
        Dictionary(uniqueKeysWithValues: order.lines.compactMap { line in products[line.productID].map { (line.productID, $0) } })
    }
}

enum Responses {
    static func approved(_ order: OrderState, psp: String = "PSP0001", at: Date = t0) -> AuthorizationResponse {
        AuthorizationResponse(
            merchantReference: order.merchantReference,
            pspReference: psp,
            responseCode: .approved,
            authCode: "A1B2C3",
            amount: order.amounts.total,
            holdExpiresAt: at.addingTimeInterval(7 * 86_400),
            network: .visa,
            fundingType: .credit,
            lastFour: "4242",
            processedAt: at
        )
    }

    static func declined(_ order: OrderState, code: ResponseCode, psp: String? = "PSPD001") -> AuthorizationResponse {
        AuthorizationResponse(
            merchantReference: order.merchantReference,
            pspReference: psp,
            responseCode: code,
            authCode: nil,
            amount: order.amounts.total,
            holdExpiresAt: nil,
            network: .visa,
            fundingType: .credit,
            lastFour: "0002",
            processedAt: t0
        )
    }

    static func unknown(_ order: OrderState, code: ResponseCode = .issuerUnavailable) -> AuthorizationResponse {
        AuthorizationResponse(
            merchantReference: order.merchantReference,
            pspReference: nil,
            responseCode: code,
            authCode: nil,
            amount: order.amounts.total,
            holdExpiresAt: nil,
            network: nil,
            fundingType: nil,
            lastFour: nil,
            processedAt: t0
        )
    }

    static func found(_ response: AuthorizationResponse, status: PaymentStatus) -> PaymentQueryResult {
        .found(PaymentDetails(authorization: response, status: status, balance: nil, modifications: []))
    }
}

extension Result {
    var failure: Failure? { if case .failure(let f) = self { return f } else { return nil } }
    var success: Success? { if case .success(let s) = self { return s } else { return nil } }
}
