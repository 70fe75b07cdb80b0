import Foundation
import LedgerCore

/// Money from a literal, for tests only.
public func usd(_ text: String) -> Money { try! Money(decimal: text, currency: .usd) }
public func eur(_ text: String) -> Money { try! Money(decimal: text, currency: .eur) }

public func pid(_ raw: String) -> ProductID { ProductID(raw)! }
public func oid(_ raw: String) -> OrderID { OrderID(raw)! }
public func sid(_ raw: String) -> ShippingMethodID { ShippingMethodID(raw)! }

/// A whole-microsecond instant so that timestamps survive the JSON round trip unchanged.
public let t0 = Date(timeIntervalSince1970: 1_750_000_000)
public let ctx = DecisionContext(now: t0)

/// A test-only event store: applies append plans with the same expected-version rule as the database,
/// and keeps every aggregate's state folded, so tests can run the payment flow end to end.
public struct InMemoryLedger: Sendable {
    public struct VersionConflict: Error, Equatable {
        public var stream: StreamID
        public init(stream: StreamID) { self.stream = stream }
    }

    public private(set) var streams: [StreamID: [DomainEvent]] = [:]
    public private(set) var log: [DomainEvent] = []
    /// Every aggregate's state, folded as the writer folds (``AggregateStates/apply(_:)``).
    package private(set) var states = AggregateStates()
    public var products: [ProductID: ProductState] { states.products }
    public var shippingMethods: [ShippingMethodID: ShippingMethodState] { states.shippingMethods }
    public var orders: [OrderID: OrderState] { states.orders }
    public var holds: [OrderID: HoldState] { states.holds }

    public init() {}

    /// Appends all of a plan or nothing.
    public mutating func commit(_ plan: AppendPlan) throws(VersionConflict) {
        for append in plan.appends where !append.expectedVersion.accepts(current: Int64(streams[append.streamID]?.count ?? 0)) {
            throw VersionConflict(stream: append.streamID)
        }
        for append in plan.appends {
            for event in append.events {
                precondition(event.streamID == append.streamID, "event \(event.type) in the wrong stream")
                streams[append.streamID, default: []].append(event)
                log.append(event)
                states.apply(event)
            }
        }
    }

    public mutating func commit(_ appends: [PlannedAppend]) throws(VersionConflict) { try commit(AppendPlan(appends)) }

    public static func seeded() -> InMemoryLedger {
        var ledger = InMemoryLedger()
        try! ledger.commit(DemoCatalog.seedAppends(context: ctx))
        return ledger
    }

    /// The seeded catalogue with `order` opened for one clock (59.00 with standard shipping), pending payment.
    public static func withOpenOrder(_ order: OrderID) throws -> InMemoryLedger {
        var ledger = seeded()
        let placed = PaymentFlow.placeOrder(
            PlaceOrder(
                orderID: order,
                lines: [RequestedLine(productID: pid("clock"))],
                shippingMethodID: sid("standard"),
                contactRef: "contact-1",
                claimedAmount: ClaimedAmount(minorUnits: 5900, currencyCode: "USD")
            ),
            order: nil,
            products: ledger.products,
            shippingMethod: ledger.shippingMethods[sid("standard")],
            context: ctx
        )
        try ledger.commit(try placed.get())
        return ledger
    }

    /// ``withOpenOrder(_:)`` with the acquirer's approval (``Responses/approved(_:psp:at:)``) recorded: authorized.
    public static func withAuthorizedOrder(_ order: OrderID) throws -> InMemoryLedger {
        var ledger = try withOpenOrder(order)
        let opened = ledger.orders[order]!
        try ledger.commit(
            try PaymentFlow.recordAuthorization(Responses.approved(opened), order: opened, products: ledger.products(for: opened), context: ctx).get()
        )
        return ledger
    }

    public func products(for order: OrderState) -> [ProductID: ProductState] {
        Dictionary(uniqueKeysWithValues: order.lines.compactMap { line in products[line.productID].map { (line.productID, $0) } })
    }
}

public enum Responses {
    public static func approved(_ order: OrderState, psp: String = "PSP0001", at: Date = t0) -> AuthorizationResponse {
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

    public static func declined(_ order: OrderState, code: ResponseCode, psp: String? = "PSPD001") -> AuthorizationResponse {
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

    public static func unknown(_ order: OrderState, code: ResponseCode = .issuerUnavailable) -> AuthorizationResponse {
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

    public static func found(_ response: AuthorizationResponse, status: PaymentStatus) -> PaymentQueryResult {
        .found(PaymentDetails(authorization: response, status: status, balance: nil, modifications: []))
    }
}

extension Result {
    public var failure: Failure? { if case .failure(let f) = self { return f } else { return nil } }
    public var success: Success? { if case .success(let s) = self { return s } else { return nil } }
}
