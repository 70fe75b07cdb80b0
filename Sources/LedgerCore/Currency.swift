/// An ISO 4217 currency: its alphabetic code, numeric code and number of minor-unit digits.
///
/// Only currencies in ``known`` are accepted, because the number of minor-unit digits decides how
/// a decimal amount maps to integer minor units, and guessing it wrong is a money bug.
public struct Currency: Hashable, Sendable, Codable, CustomStringConvertible {
    public let code: String
    public let numericCode: String
    public let minorUnitDigits: Int

    private init(_ code: String, _ numeric: String, _ digits: Int) {
        self.code = code
        self.numericCode = numeric
        self.minorUnitDigits = digits
    }

    /// Looks a currency up by its alphabetic code (case-insensitive), e.g. `"USD"`.
    public init?(code: String) {
        guard let currency = Self.byCode[code.uppercased()] else { return nil }
        self = currency
    }

    /// Looks a currency up by its numeric code, e.g. `"840"` (as Apple Pay tokens carry it).
    public init?(numericCode: String) {
        guard let currency = Self.byNumeric[numericCode] else { return nil }
        self = currency
    }

    public var description: String { code }

    /// 10^minorUnitDigits: minor units per major unit.
    public var minorUnitsPerMajor: Int64 {
        var value: Int64 = 1
        for _ in 0..<minorUnitDigits { value *= 10 }
        return value
    }

    public static let usd = Currency("USD", "840", 2)
    public static let eur = Currency("EUR", "978", 2)
    public static let gbp = Currency("GBP", "826", 2)
    public static let jpy = Currency("JPY", "392", 0)

    /// The currencies the ledger accepts.
    public static let known: [Currency] = [
        usd, eur, gbp, jpy,
        Currency("AUD", "036", 2), Currency("CAD", "124", 2), Currency("CHF", "756", 2),
        Currency("CNY", "156", 2), Currency("CZK", "203", 2), Currency("DKK", "208", 2),
        Currency("HKD", "344", 2), Currency("HUF", "348", 2), Currency("ISK", "352", 0),
        Currency("INR", "356", 2), Currency("KRW", "410", 0), Currency("MXN", "484", 2),
        Currency("NOK", "578", 2), Currency("NZD", "554", 2), Currency("PLN", "985", 2),
        Currency("SEK", "752", 2), Currency("SGD", "702", 2), Currency("BRL", "986", 2),
        Currency("ZAR", "710", 2), Currency("CLP", "152", 0), Currency("BHD", "048", 3),
        Currency("KWD", "414", 3), Currency("JOD", "400", 3), Currency("OMR", "512", 3),
        Currency("TND", "788", 3),
    ]

    private static let byCode = Dictionary(uniqueKeysWithValues: known.map { ($0.code, $0) })
    private static let byNumeric = Dictionary(uniqueKeysWithValues: known.map { ($0.numericCode, $0) })

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let code = try container.decode(String.self)
        guard let currency = Currency(code: code) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown currency \(code)")
        }
        self = currency
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }
}
