/// The identity of an event stream (one aggregate: an order, a hold, a product, a batch).
///
/// Stream ids are plain strings such as `order-9F3C…` so that an auditor can read them in psql.
/// The database limits them to 200 bytes; the same limit is checked here so a bad id is
/// rejected before it reaches a batch.
public struct StreamID: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public static let maximumByteLength = 200

    /// Fails (returns nil) for an empty id or one longer than ``maximumByteLength`` bytes of UTF-8.
    public init?(_ rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maximumByteLength else { return nil }
        self.rawValue = rawValue
    }

    /// A stream id from a category and an id, e.g. `StreamID(category: "order", id: "42")` → `order-42`.
    public init(category: String, id: String) {
        precondition(!category.isEmpty, "stream category must not be empty")
        let raw = "\(category)-\(id)"
        precondition(raw.utf8.count <= Self.maximumByteLength, "stream id too long")
        self.rawValue = raw
    }

    public var description: String { rawValue }

    public static func < (lhs: StreamID, rhs: StreamID) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let id = StreamID(raw) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid stream id")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
