import struct Foundation.Date

/// Codes a ``Money`` inside event JSON as `{"amount": "50.00", "currency": "USD"}`.
///
/// The amount is a decimal string, never a JSON number: jsonb and most JSON readers turn numbers into
/// binary floating point, and an auditor must read exactly what was recorded. Decoding re-parses with
/// ``Money/init(decimal:currency:)``, so a payload with more fraction digits than the currency has is refused.
@propertyWrapper
public struct DecimalMoney: Hashable, Sendable, Codable {
    public var wrappedValue: Money

    public init(wrappedValue: Money) { self.wrappedValue = wrappedValue }

    private enum CodingKeys: String, CodingKey { case amount, currency }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let code = try container.decode(String.self, forKey: .currency)
        guard let currency = Currency(code: code), currency.code == code else {
            throw DecodingError.dataCorruptedError(forKey: .currency, in: container, debugDescription: "unknown currency \(code)")
        }
        let text = try container.decode(String.self, forKey: .amount)
        do {
            wrappedValue = try Money(decimal: text, currency: currency)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .amount, in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(wrappedValue.decimalString, forKey: .amount)
        try container.encode(wrappedValue.currency.code, forKey: .currency)
    }
}

/// Codes a ``Rate`` as a decimal string (`"0.08"`) so a tax rate reads in an event as it was configured.
/// A rate whose denominator is not a power of ten (never produced by ``Rate/init(decimal:)``) is written
/// as the exact fraction `"2/25"`.
@propertyWrapper
public struct DecimalRate: Hashable, Sendable, Codable {
    public var wrappedValue: Rate

    public init(wrappedValue: Rate) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        if let slash = text.firstIndex(of: "/") {
            guard let numerator = Int64(text[..<slash]), let denominator = Int64(text[text.index(after: slash)...]),
                numerator >= 0, denominator > 0
            else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid rate \(text)")
            }
            wrappedValue = Rate(numerator: numerator, denominator: denominator)
        } else {
            do { wrappedValue = try Rate(decimal: text) } catch {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid rate \(text)")
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Self.format(wrappedValue))
    }

    /// `8/100` → `"0.08"`, `825/10000` → `"0.0825"`, `2/25` → `"2/25"`.
    static func format(_ rate: Rate) -> String {
        var digits = 0
        var power: Int64 = 1
        while power < rate.denominator && digits < 18 {
            power *= 10
            digits += 1
        }
        guard power == rate.denominator else { return "\(rate.numerator)/\(rate.denominator)" }
        guard digits > 0 else { return String(rate.numerator) }
        let whole = rate.numerator / power
        let fraction = String(rate.numerator % power)
        return "\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}

/// Codes a time as an RFC 3339 UTC string with exactly six fraction digits,
/// `2025-03-01T12:00:00.000000Z`: the ledger's resolution (microseconds, as `timestamptz`).
///
/// The value is normalised to whole microseconds when it is set, so an event equals itself after an
/// encode → decode round trip and two encodings of it are byte-identical. Formatting and parsing are
/// ``RFC3339``'s (integer arithmetic on days since the epoch, independent of the machine's time zone,
/// locale and calendar); decoding accepts only the exact form (``RFC3339/exactMicros(_:)``).
@propertyWrapper
public struct LedgerTimestamp: Hashable, Sendable, Codable {
    public var wrappedValue: Date {
        get { storage }
        set { storage = Date(epochMicroseconds: newValue.epochMicroseconds) }
    }
    private var storage: Date

    public init(wrappedValue: Date) { storage = Date(epochMicroseconds: wrappedValue.epochMicroseconds) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let micros = RFC3339.exactMicros(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid timestamp \(text)")
        }
        storage = Date(epochMicroseconds: micros)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(RFC3339.format(storage.epochMicroseconds))
    }
}
