import Foundation
import Hummingbird
import LedgerCore
import LedgerHTTP
import LedgerServices
import Testing

@Suite struct PaymentRequestTests {
    /// The app's body for a Clock with Standard shipping (50.00 + 5.00 + 4.00 tax).
    static var appBody: [String: Any] {
        [
            "gateway": "stripe", "source": "tok_visa", "amount": 5900, "currency": "USD", "description": "Clock",
            "shipping_contact": "Jane Appleseed", "shipping_email": "jane@example.com", "shipping_street": "1 Infinite Loop",
            "shipping_city": "Cupertino", "shipping_state": "CA", "shipping_zip": "95014", "shipping_method_name": "Standard",
        ]
    }

    func parse(_ body: [String: Any], contentType: String? = "application/json") throws(APIError) -> PaymentRequest {
        let data = try! JSONSerialization.data(withJSONObject: body)
        return try PaymentRequest.parse(body: ByteBuffer(bytes: data), contentType: contentType)
    }

    func rejection(_ body: [String: Any]) -> APIError? {
        do {
            _ = try parse(body)
            return nil
        } catch {
            return error
        }
    }

    @Test func acceptsTheAppsExactBody() throws {
        let request = try parse(Self.appBody, contentType: "application/json; charset=utf-8")
        #expect(request.gateway == .stripe)
        #expect(request.source == .token("tok_visa"))
        #expect(request.amount == Money(minorUnits: 5900, currency: .usd))
        #expect(request.shippingMethodName == "Standard" && request.description == "Clock")
        #expect(request.quantity == 1 && request.productID == nil)
    }

    @Test func acceptsTheExtensionsAndAnApplePayTokenObject() throws {
        var body = Self.appBody
        body["gateway"] = "applepay"
        body["source"] = ["version": "EC_v1", "data": "AAAA", "signature": "BBBB", "header": ["transactionId": "ab"]]
        body["product_id"] = "clock"
        body["quantity"] = 2
        body["application_data"] = Data("order 1".utf8).base64EncodedString()
        let request = try parse(body)
        guard case .applePayToken(let json) = request.source else {
            Issue.record("expected an Apple Pay token")
            return
        }
        #expect(json.contains(#""version":"EC_v1""#))
        #expect(request.productID == "clock" && request.quantity == 2)
    }

    @Test func anApplePayTokenMayComeAsBase64AndAnythingElseIsAMalformedToken() throws {
        var body = Self.appBody
        body["gateway"] = "applepay"
        let token = #"{"version":"EC_v1","data":"AAAA","signature":"BBBB","header":{"transactionId":"ab"}}"#
        let base64 = Data(token.utf8).base64EncodedString()
        body["source"] = String(base64.prefix(20)) + "\n" + String(base64.dropFirst(20))  // line-wrapped base64
        body["application_data"] = Data(repeating: 7, count: 3_000).base64EncodedString()
        let request = try parse(body)
        #expect(request.source == .applePayToken(json: token))
        #expect(request.applicationData?.count == 4_000)
        for bad: Any in ["not base64!", Data("[1]".utf8).base64EncodedString(), 42, [1, 2], true] {
            body["source"] = bad
            let error = rejection(body)
            #expect(error?.code == "applepay_malformed_token" && error?.field == "source", "\(bad)")
        }
        body.removeValue(forKey: "source")
        #expect(rejection(body)?.code == "missing_field")
    }

    /// (field, JSON literal of a bad value)
    @Test(arguments: [
        ("amount", "59.5"), ("amount", "\"5900\""), ("amount", "true"), ("amount", "0"), ("amount", "-5"),
        ("amount", "1e30"), ("amount", "9223372036854775808"), ("currency", "\"usd\""), ("currency", "\"XXX\""),
        ("gateway", "\"paypal\""), ("source", "42"), ("shipping_zip", "\"   \""), ("quantity", "0"), ("quantity", "1.5"),
        ("quantity", "1000000"), ("product_id", "7"), ("application_data", "\"%%%\""), ("shipping_method_name", "null"),
    ])
    func badFieldsAreNamed(field: String, literal: String) throws {
        var body = Self.appBody
        body[field] = try JSONSerialization.jsonObject(with: Data(literal.utf8), options: .fragmentsAllowed)
        let error = rejection(body)
        #expect(error?.field == field, "\(field) = \(literal)")
        #expect(error.map { (400..<500).contains($0.status.code) } == true)
    }

    @Test(arguments: [
        "gateway", "source", "amount", "currency", "description", "shipping_contact", "shipping_email",
        "shipping_street", "shipping_city", "shipping_state", "shipping_zip", "shipping_method_name",
    ])
    func everyRequiredFieldIsRequired(field: String) {
        var body = Self.appBody
        body.removeValue(forKey: field)
        let error = rejection(body)
        #expect(error?.field == field)
        #expect(error?.code == "missing_field")
    }

    @Test func malformedBodiesAndWrongContentTypes() {
        func attempt(_ text: String, _ contentType: String? = "application/json") -> APIError? {
            do {
                _ = try PaymentRequest.parse(body: ByteBuffer(string: text), contentType: contentType)
                return nil
            } catch { return error }
        }
        #expect(attempt("{not json")?.code == "invalid_json")
        #expect(attempt("[1, 2]")?.code == "invalid_json")
        #expect(attempt("")?.code == "invalid_json")
        #expect(attempt("{}", "text/plain")?.status == .unsupportedMediaType)
        #expect(attempt("{}", nil)?.status == .unsupportedMediaType)
        #expect(attempt("{\"a\": \"" + String(repeating: "x", count: 70_000) + "\"}")?.status == .contentTooLarge)
    }
}
