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
        // Strict JSON: no duplicate member (the first won) and no trailing comma (review 3, input strictness).
        try StrictJSON.checked(body)
        let decoded: PaymentBody
        do {
            decoded = try JSONDecoder().decode(PaymentBody.self, from: Data(body.readableBytesView))
        } catch PaymentBody.Refusal.notAnObject {
            throw APIError.badRequest("invalid_json", "the body must be a JSON object")
        } catch {
            throw APIError.badRequest("invalid_json", "the body is not valid JSON")
        }
        let typed = decoded.fields
        // Every member is one the payment takes: a misspelled `quantitty` was silently ignored (one unit sold).
        try RequestFields.refuseUnknown(typed.keys, known: knownFields, subject: "a payment")
        let fields = Fields(typed)

        let gatewayName = try fields.string("gateway")
        guard let gateway = Gateway(rawValue: gatewayName) else {
            throw fields.invalid("gateway", "gateway must be one of \(Gateway.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let source: Source
        switch (gateway, decoded.source) {
        case (.applepay, nil), (.applepay, .null?):
            throw APIError(status: .unprocessableContent, code: "missing_field", message: "source is required", field: "source")
        case (.applepay, .object?):
            guard let json = decoded.source?.canonicalText else { throw malformedApplePayToken("source is not a valid Apple Pay token") }
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
            let token = try fields.string("source")
            guard (1...255).contains(token.utf8.count) else { throw fields.invalid("source", "source must be 1…255 characters") }
            source = .token(token)
        }
        let currencyCode = try fields.string("currency")
        guard let currency = Currency(code: currencyCode), currencyCode == currency.code else {
            throw fields.invalid("currency", "currency must be a supported ISO 4217 code in capitals, e.g. USD")
        }
        let minorUnits = try fields.integer("amount")
        guard minorUnits > 0 else { throw fields.invalid("amount", "amount must be a positive number of minor units") }

        var quantity = 1
        if let given = typed["quantity"], given != .null {
            let value = try fields.integer("quantity")
            guard (1...Int64(maximumQuantity)).contains(value) else {
                throw fields.invalid("quantity", "quantity must be 1…\(maximumQuantity)")
            }
            quantity = Int(value)
        }
        let request = PaymentRequest(
            gateway: gateway,
            source: source,
            amount: Money(minorUnits: minorUnits, currency: currency),
            description: try fields.string("description"),
            shippingContact: try fields.string("shipping_contact"),
            shippingEmail: try fields.string("shipping_email"),
            shippingStreet: try fields.string("shipping_street"),
            shippingCity: try fields.string("shipping_city"),
            shippingState: try fields.string("shipping_state"),
            shippingZip: try fields.string("shipping_zip"),
            shippingMethodName: try fields.string("shipping_method_name"),
            productID: try fields.optionalString("product_id"),
            quantity: quantity,
            applicationData: try fields.optionalString("application_data", maximumLength: maximumApplicationDataLength)
        )
        if let applicationData = request.applicationData, Data(base64Encoded: applicationData) == nil {
            throw fields.invalid("application_data", "application_data must be base64")
        }
        return request
    }

    /// The members a payment body may have.
    static let knownFields: Set<String> = [
        "gateway", "source", "amount", "currency", "quantity", "description", "shipping_contact", "shipping_email",
        "shipping_street", "shipping_city", "shipping_state", "shipping_zip", "shipping_method_name", "product_id",
        "application_data",
    ]

    /// A `source` that cannot be an Apple Pay token: the same code the token checks use for malformed tokens.
    static func malformedApplePayToken(_ message: String) -> APIError {
        APIError(status: .unprocessableContent, code: "applepay_malformed_token", message: message, field: "source")
    }

    /// `POST /payment`'s body, decoded once (one JSONDecoder pass over the bytes): every member as the
    /// whole JSON value it is, so that `source` can be an Apple Pay token object, and as a ``JSONField``
    /// for the strict field checks.
    struct PaymentBody: Decodable {
        /// Why a body that parses is still refused before its fields are looked at.
        enum Refusal: Error {
            /// Valid JSON, but an array: "the body must be a JSON object".
            case notAnObject
            /// A bare scalar, or a number no number type holds: "the body is not valid JSON" (as the
            /// JSONSerialization parse that used to come first answered them).
            case notJSON
        }

        let fields: [String: JSONField]
        /// `source` as sent, nil when absent.
        let source: JSONValue?

        init(from decoder: any Decoder) throws {
            guard let container = try? decoder.container(keyedBy: JSONValue.Key.self) else {
                throw (try? decoder.unkeyedContainer()) == nil ? Refusal.notJSON : Refusal.notAnObject
            }
            var members: [String: JSONValue] = [:]
            for key in container.allKeys { members[key.stringValue] = try container.decode(JSONValue.self, forKey: key) }
            if members.values.contains(where: \.holdsUnrepresentable) { throw Refusal.notJSON }
            fields = members.mapValues(JSONField.init)
            source = members["source"]
        }
    }

    /// A JSON value as far as field checking needs: JSONDecoder is strict, so `true` is never
    /// an integer, `59.5` and numbers beyond Int64 are not integers, and `"5900"` is a string.
    enum JSONField: Decodable, Equatable {
        case null
        case bool(Bool)
        case integer(Int64)
        case string(String)
        case other

        /// The field as checks see it: any number but an Int64, any array or object, is `other`.
        init(_ value: JSONValue) {
            switch value {
            case .null: self = .null
            case .bool(let flag): self = .bool(flag)
            case .integer(let integer): self = .integer(integer)
            case .string(let text): self = .string(text)
            case .unsigned, .double, .unrepresentable, .array, .object: self = .other
            }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let integer = try? container.decode(Int64.self) {
                self = .integer(integer)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else {
                self = .other
            }
        }
    }

    /// Typed access to the JSON object's fields with errors that name the field.
    struct Fields {
        let object: [String: JSONField]
        init(_ object: [String: JSONField]) { self.object = object }

        func invalid(_ field: String, _ message: String) -> APIError { RequestFields.invalid(field, message) }

        /// A text member under ``RequestFields/text(_:field:maximumLength:)``.
        func string(_ field: String, maximumLength: Int = 500) throws(APIError) -> String {
            guard let value = object[field], value != .null else { throw RequestFields.missing(field) }
            guard case .string(let text) = value else { throw invalid(field, "\(field) must be a string") }
            return try RequestFields.text(text, field: field, maximumLength: maximumLength)
        }

        func optionalString(_ field: String, maximumLength: Int = 500) throws(APIError) -> String? {
            guard let value = object[field], value != .null else { return nil }
            return try string(field, maximumLength: maximumLength)
        }

        /// A JSON integer within Int64 (not a boolean, a fraction or a string of digits).
        func integer(_ field: String) throws(APIError) -> Int64 {
            guard let value = object[field], value != .null else { throw RequestFields.missing(field) }
            guard case .integer(let integer) = value else {
                throw invalid(field, "\(field) must be an integer that fits in 64 bits")
            }
            return integer
        }
    }
}
