import LedgerCore
import LedgerMacros

/// The body of `POST /payment` exactly as the merchant's app sends it (domain.md §1), plus the
/// optional extensions `product_id`, `quantity` and `application_data`, as the payment service takes
/// it (LedgerHTTP parses and checks the body into this shape).
@MemberwiseInit
public struct PaymentRequest: Sendable, Hashable {
    /// Where `source` came from. `stripe` and `acquirer` both go to the configured acquirer;
    /// `applepay` carries an Apple Pay payment token to verify and decrypt.
    public enum Gateway: String, Sendable, Hashable, CaseIterable {
        case stripe, acquirer, applepay
    }

    /// The charge token (a test token such as `tok_visa`), or an Apple Pay token as JSON text (sent as a
    /// JSON object, or as base64 of its JSON; either way the token's JSON is kept here and checked by the
    /// payment service, which reports a malformed token as `applepay_malformed_token`).
    public enum Source: Sendable, Hashable {
        case token(String)
        case applePayToken(json: String)
    }

    public var gateway: Gateway
    public var source: Source
    /// The total the app computed, in minor units of `amount.currency` (the server recomputes it).
    public var amount: Money
    public var description: String
    public var shippingContact: String
    public var shippingEmail: String
    public var shippingStreet: String
    public var shippingCity: String
    public var shippingState: String
    public var shippingZip: String
    public var shippingMethodName: String
    public var productID: String?
    public var quantity: Int = 1
    /// Base64 of the app's applicationData (Apple Pay), whose SHA-256 the token must carry.
    public var applicationData: String?

    /// Bodies larger than this are refused with 413 before parsing.
    public static let maximumBodySize = 64 * 1024
    public static let maximumQuantity = 1_000
    /// The longest `application_data` (base64 characters) accepted; the body limit bounds it anyway.
    public static let maximumApplicationDataLength = 16 * 1024
}
