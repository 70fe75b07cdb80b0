/// A hold's money, as decimal strings in its currency (`payment` in hold replies and
/// orders, `figures` in the holds read model): the one decimal form of ``HoldBalance``.
public struct HoldFigures: Codable, Sendable, Hashable {
    public let currency, authorized, incremented, captured, reversed, expired, refunded, open: String

    public init(_ b: HoldBalance) {
        currency = b.authorized.currency.code
        authorized = b.authorized.decimalString
        incremented = b.incremented.decimalString
        captured = b.captured.decimalString
        reversed = b.reversed.decimalString
        expired = b.expired.decimalString
        refunded = b.refunded.decimalString
        open = b.open.decimalString
    }
}
