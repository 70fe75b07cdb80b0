import struct Foundation.Date

/// The characters and length every domain identifier (product, shipping method, order) is held to.
///
/// Ids end up in stream ids (`product-clock`), URLs and psql sessions, so they are restricted to
/// ASCII letters, digits, `-`, `_` and `.`, at most 100 bytes: that keeps every derived stream id
/// well under ``StreamID/maximumByteLength`` and needs no escaping anywhere.
public enum DomainIdentifierRules {
    public static let maximumLength = 100

    public static func isValid(_ raw: String) -> Bool {
        guard !raw.isEmpty, raw.utf8.count <= maximumLength else { return false }
        return raw.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
    }

    /// A stable slug for a display name: lower-case ASCII letters and digits, other runs become one `-`.
    /// "Chocolate Hearts" → `chocolate-hearts`, "T-Ruler" → `t-ruler`, "#2 pencil" → `2-pencil`.
    public static func slug(_ name: String) -> String {
        var out = ""
        var pendingDash = false
        for scalar in name.unicodeScalars {
            let value = scalar.value
            let isDigit = value >= 0x30 && value <= 0x39
            let isUpper = value >= 0x41 && value <= 0x5A
            let isLower = value >= 0x61 && value <= 0x7A
            if isDigit || isUpper || isLower {
                if pendingDash && !out.isEmpty { out.append("-") }
                pendingDash = false
                out.unicodeScalars.append(isUpper ? Unicode.Scalar(value + 0x20)! : scalar)
            } else {
                pendingDash = true
            }
        }
        return out
    }
}

/// Declares the shared shape of a validated string identifier. A conforming type declares its
/// stored `rawValue`, its stream category and the memberwise `init(validated:)`; validation
/// (``DomainIdentifierRules``) and the JSON form (a plain string, re-validated on decode) come from
/// the extension, so every identifier checks and travels the same way.
public protocol DomainIdentifier: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    var rawValue: String { get }
    /// The stream category the identifier names (`product`, `order`, …).
    static var streamCategory: String { get }
    /// Wraps a value already checked by ``DomainIdentifierRules/isValid(_:)``; use `init?(_:)`.
    init(validated rawValue: String)
}

extension DomainIdentifier {
    /// The identifier, or nil when `rawValue` breaks ``DomainIdentifierRules``.
    public init?(_ rawValue: String) {
        guard DomainIdentifierRules.isValid(rawValue) else { return nil }
        self.init(validated: rawValue)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let id = Self(raw) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid \(Self.streamCategory) id \(raw)")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The aggregate's stream, e.g. `product-clock`, `order-42`.
    public var streamID: StreamID { StreamID(category: Self.streamCategory, id: rawValue) }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A product's id, which doubles as its SKU (e.g. `clock`, `chocolate-hearts`). Stream `product-<id>`.
public struct ProductID: DomainIdentifier {
    public let rawValue: String
    public static let streamCategory = "product"
    public init(validated rawValue: String) { self.rawValue = rawValue }
}

/// A shipping method's id (e.g. `standard`). Stream `shipping_method-<id>`.
public struct ShippingMethodID: DomainIdentifier {
    public let rawValue: String
    // An underscore, not a dash: stream ids are split at the first `-` by readers of the log.
    public static let streamCategory = "shipping_method"
    public init(validated rawValue: String) { self.rawValue = rawValue }
}

/// An order's id, chosen by the caller (never generated inside a decider). Stream `order-<id>`.
///
/// The order id is also the merchant reference sent to the acquirer, which makes an authorization
/// retry after a crash idempotent at the acquirer and lets recovery query by it.
public struct OrderID: DomainIdentifier {
    public let rawValue: String
    public static let streamCategory = "order"
    public init(validated rawValue: String) { self.rawValue = rawValue }

    /// The stream of the order's authorization hold, `hold-<order id>`. Keyed by our reference rather
    /// than the acquirer's, because it must be known before the acquirer answers.
    public var holdStreamID: StreamID { StreamID(category: "hold", id: rawValue) }

    /// The reference of the order's shipping contact (`contact-<order id>`), under which the payment stores it outside
    /// the log and `OrderOpened` names it: the one place that says how the two are paired.
    public var contactReference: String { Self.contactPrefix + rawValue }

    /// The order whose shipping contact `reference` is (``contactReference``), or nil for a reference of another form.
    public init?(contactReference reference: String) {
        guard reference.hasPrefix(Self.contactPrefix) else { return nil }
        self.init(String(reference.dropFirst(Self.contactPrefix.count)))
    }

    static let contactPrefix = "contact-"
}

/// The time and nothing else a decider may know about the world: injected, so that the same
/// inputs always give the same events.
public struct DecisionContext: Hashable, Sendable {
    public var now: Date
    public init(now: Date) { self.now = now }
}
