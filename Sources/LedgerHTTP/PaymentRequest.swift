import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

/// Parsing `POST /payment` strictly: every problem is an ``APIError`` naming the field, before anything
/// is decided or appended. The parsed request is the payment service's input (``PaymentRequest``).
extension PaymentRequest {
    /// Parses a request body; `contentType` is the request's Content-Type header.
    public static func parse(body: ByteBuffer, contentType: String?) throws(APIError) -> PaymentRequest {
        guard let contentType,
            contentType.lowercased().split(separator: ";").first?
                .trimmingCharacters(in: .whitespaces) == "application/json"
        else {
            throw APIError(
                status: .unsupportedMediaType,
                code: "unsupported_media_type",
                message: "send the payment as application/json"
            )
        }
        guard body.readableBytes <= maximumBodySize else {
            throw APIError(
                status: .contentTooLarge,
                code: "payload_too_large",
                message: "the body is larger than \(maximumBodySize) bytes"
            )
        }
        // Strict JSON (no duplicate member, no trailing comma; an empty body is not JSON here), then the one body
        // reader's rules (``JSONRequestBody``): a misspelled `quantitty` was once silently ignored (one unit sold).
        try StrictJSON.checked(body)
        return try StrictJSON.decode(PaymentBody.self, from: body).request
    }

    /// `POST /payment`'s body: every member checked in this order, each refusal naming its member.
    struct PaymentBody: JSONRequestBody {
        enum Member: String, CodingKey, CaseIterable {
            case gateway, source, amount, currency, quantity, description
            case shippingContact = "shipping_contact"
            case shippingEmail = "shipping_email"
            case shippingStreet = "shipping_street"
            case shippingCity = "shipping_city"
            case shippingState = "shipping_state"
            case shippingZip = "shipping_zip"
            case shippingMethodName = "shipping_method_name"
            case productID = "product_id"
            case applicationData = "application_data"
        }
        static let subject = "a payment"
        let request: PaymentRequest

        init(from decoder: any Decoder) throws {
            let body = try decoder.container(keyedBy: Member.self)
            guard let gateway = Gateway(rawValue: try body.text(.gateway)) else {
                throw RequestFields.invalid("gateway", "gateway must be one of \(Gateway.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let source: Source
            switch (gateway, try body.value(.source)) {
            case (.applepay, nil):
                throw RequestFields.missing("source")
            case (.applepay, .object(let members)?):
                guard let json = JSONValue.object(members).canonicalText else {
                    throw malformedApplePayToken("source is not a valid Apple Pay token")
                }
                source = .applePayToken(json: json)
            case (.applepay, .string(let text)?):
                // Base64 of the token's JSON, as apps often forward `paymentData`; whitespace (line wrapping) is ignored.
                // That JSON is a document of its own (not the body): checked for an object here, read by the payment service.
                let compact = text.filter { !$0.isWhitespace }
                guard let data = Data(base64Encoded: compact), (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else {
                    throw malformedApplePayToken("source must be the Apple Pay token (paymentData) as a JSON object or as base64 of its JSON")
                }
                source = .applePayToken(json: String(decoding: data, as: UTF8.self))
            case (.applepay, _):
                throw malformedApplePayToken("source must be the Apple Pay token (paymentData) as a JSON object or as base64 of its JSON")
            case (_, _):
                let token = try body.text(.source)
                guard (1...255).contains(token.utf8.count) else { throw RequestFields.invalid("source", "source must be 1…255 characters") }
                source = .token(token)
            }
            let currencyCode = try body.text(.currency)
            guard let currency = Currency(code: currencyCode), currencyCode == currency.code else {
                throw RequestFields.invalid("currency", "currency must be a supported ISO 4217 code in capitals, e.g. USD")
            }
            let minorUnits = try body.integer(.amount)
            guard minorUnits > 0 else { throw RequestFields.invalid("amount", "amount must be a positive number of minor units") }
            let quantity = try body.optionalInteger(.quantity) ?? 1
            guard (1...Int64(maximumQuantity)).contains(quantity) else {
                throw RequestFields.invalid("quantity", "quantity must be 1…\(maximumQuantity)")
            }
            request = PaymentRequest(
                gateway: gateway,
                source: source,
                amount: Money(minorUnits: minorUnits, currency: currency),
                description: try body.text(.description),
                shippingContact: try body.text(.shippingContact),
                shippingEmail: try body.text(.shippingEmail),
                shippingStreet: try body.text(.shippingStreet),
                shippingCity: try body.text(.shippingCity),
                shippingState: try body.text(.shippingState),
                shippingZip: try body.text(.shippingZip),
                shippingMethodName: try body.text(.shippingMethodName),
                productID: try body.optionalText(.productID),
                quantity: Int(quantity),
                applicationData: try body.optionalText(.applicationData, maximumLength: maximumApplicationDataLength)
            )
            guard PaymentRequest.isEmailAddress(request.shippingEmail) else {
                throw RequestFields.invalid("shipping_email", "shipping_email must be an e-mail address, as name@example.com")
            }
            if let applicationData = request.applicationData, Data(base64Encoded: applicationData) == nil {
                throw RequestFields.invalid("application_data", "application_data must be base64")
            }
        }
    }

    /// An address a receipt can go to, by the document's pattern for `shipping_email`: one `@`, no space, a local part
    /// and a domain with a dot inside it (issue 55: "jane" was accepted, and a clerk's search by e-mail missed it).
    static func isEmailAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(where: \.isWhitespace) else { return false }
        return parts[1].dropFirst().dropLast().contains(".")
    }

    /// A `source` that cannot be an Apple Pay token: the same code the token checks use for malformed tokens.
    static func malformedApplePayToken(_ message: String) -> APIError {
        APIError(status: .unprocessableContent, code: "applepay_malformed_token", message: message, field: "source")
    }
}
