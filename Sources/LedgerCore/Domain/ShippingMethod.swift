import LedgerMacros

// The shipping method aggregate: one stream per method (`shipping_method-<id>`).

// MARK: - Events

/// A shipping method entered the catalog, as `GET /shipping_methods` shows it.
@MemberwiseInit
public struct ShippingMethodListed: LedgerEventPayload {
    public static let eventType = "ShippingMethodListed"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.shippingMethodListed

    public var shippingMethodID: ShippingMethodID
    public var name: String
    /// E.g. "Delivers in four days".
    public var description: String
    public var transitDays: Int
    @DecimalMoney public var price: Money

    enum CodingKeys: String, CodingKey {
        case shippingMethodID = "shipping_method_id"
        case name, description
        case transitDays = "transit_days"
        case price
    }
}

/// A shipping method's price changed (same currency).
@MemberwiseInit
public struct ShippingMethodPriceChanged: LedgerEventPayload {
    public static let eventType = "ShippingMethodPriceChanged"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.shippingMethodPriceChanged

    public var shippingMethodID: ShippingMethodID
    @DecimalMoney public var previousPrice: Money
    @DecimalMoney public var price: Money

    enum CodingKeys: String, CodingKey {
        case shippingMethodID = "shipping_method_id"
        case previousPrice = "previous_price"
        case price
    }
}

/// Every event of a shipping method stream.
public enum ShippingMethodEvent: Hashable, Sendable {
    case listed(ShippingMethodListed)
    case priceChanged(ShippingMethodPriceChanged)

    public var shippingMethodID: ShippingMethodID {
        switch self {
        case .listed(let e): return e.shippingMethodID
        case .priceChanged(let e): return e.shippingMethodID
        }
    }
}

// MARK: - State

/// A shipping method as its stream says it is now.
public struct ShippingMethodState: Hashable, Sendable {
    public var id: ShippingMethodID
    public var name: String
    public var description: String
    public var transitDays: Int
    public var price: Money
    /// The stream version this state reflects.
    public private(set) var version: Int64

    public static func evolve(_ state: ShippingMethodState?, _ event: ShippingMethodEvent) -> ShippingMethodState? {
        switch (state, event) {
        case (nil, .listed(let e)):
            return ShippingMethodState(
                id: e.shippingMethodID,
                name: e.name,
                description: e.description,
                transitDays: e.transitDays,
                price: e.price,
                version: 1
            )
        case (nil, .priceChanged):
            return nil
        case (var state?, .listed(let e)):
            state.name = e.name
            state.description = e.description
            state.transitDays = e.transitDays
            state.price = e.price
            state.version += 1
            return state
        case (var state?, .priceChanged(let e)):
            state.price = e.price
            state.version += 1
            return state
        }
    }

    public static func fold<S: Sequence>(_ events: S) -> ShippingMethodState? where S.Element == ShippingMethodEvent {
        events.reduce(nil as ShippingMethodState?) { evolve($0, $1) }
    }
}

// MARK: - Commands

/// What can be asked of a shipping method stream.
public enum ShippingMethodCommand: Hashable, Sendable {
    case list(name: String, description: String, transitDays: Int, price: Money)
    case changePrice(Money)
}

/// Why a shipping method command was refused.
public enum ShippingMethodRejection: Error, Hashable, Sendable, CustomStringConvertible {
    case unknownShippingMethod(ShippingMethodID)
    case alreadyListed(ShippingMethodID)
    case invalidListing(String)
    case negativePrice(Money)
    case currencyChange(from: Currency, to: Currency)

    public var description: String {
        switch self {
        case .unknownShippingMethod(let id): return "unknown shipping method \(id)"
        case .alreadyListed(let id): return "shipping method \(id) is already listed"
        case .invalidListing(let why): return "invalid shipping method: \(why)"
        case .negativePrice(let price): return "price \(price) is negative"
        case .currencyChange(let from, let to): return "price currency cannot change from \(from) to \(to)"
        }
    }
}

// MARK: - Decider

/// The pure decider of the shipping method stream.
public enum ShippingMethodDecider {
    public static func decide(
        _ command: ShippingMethodCommand,
        method id: ShippingMethodID,
        state: ShippingMethodState?,
        context: DecisionContext
    ) -> Result<[ShippingMethodEvent], ShippingMethodRejection> {
        precondition(state == nil || state?.id == id, "state of another shipping method")
        switch command {
        case .list(let name, let description, let transitDays, let price):
            guard state == nil else { return .failure(.alreadyListed(id)) }
            guard !name.isEmpty else { return .failure(.invalidListing("empty name")) }
            guard transitDays >= 0 else { return .failure(.invalidListing("negative transit days")) }
            guard !price.isNegative else { return .failure(.negativePrice(price)) }
            return .success([
                .listed(
                    ShippingMethodListed(
                        shippingMethodID: id,
                        name: name,
                        description: description,
                        transitDays: transitDays,
                        price: price
                    )
                )
            ])
        case .changePrice(let price):
            guard let state else { return .failure(.unknownShippingMethod(id)) }
            guard price.currency == state.price.currency else {
                return .failure(.currencyChange(from: state.price.currency, to: price.currency))
            }
            guard !price.isNegative else { return .failure(.negativePrice(price)) }
            guard price != state.price else { return .success([]) }
            return .success([
                .priceChanged(
                    ShippingMethodPriceChanged(
                        shippingMethodID: id,
                        previousPrice: state.price,
                        price: price
                    )
                )
            ])
        }
    }
}
