import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerTestSupport
import NIOCore
import Testing

/// Review 3, input strictness, through the router: a back-office body that is not `application/json` is 415 (a
/// `text/plain` capture was applied), a payment with a misspelled member or a member twice is 400; nothing appended.
@Suite(.machine(.shared)) struct InputStrictnessTests {
    let storefront = StorefrontDriver()

    @Test func nonJSONBackOfficeBodiesAndSloppyPaymentsAreRefusedAndAppendNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let order = try await storefront.placeOrder(client)
            let head = try await services.store.head().position
            func post(_ uri: String, _ body: String, type: String, key: String? = TestApp.operatorKey) async throws -> (Int, String) {
                var headers: HTTPFields = [.contentType: type, HTTPField.Name("Idempotency-Key")!: UUID().uuidString]
                if let key { headers[.authorization] = "Bearer \(key)" }
                return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
                    (Int($0.status.code), String(buffer: $0.body))
                }
            }
            for (uri, body) in [
                ("/orders/\(order)/capture", #"{"amount": "1.00"}"#), ("/orders/\(order)/void", "{}"),
                ("/subscriptions", #"{"name": "erp"}"#), ("/privacy/erasures", #"{"customer": "jane@example.com"}"#),
            ] {
                let (status, text) = try await post(uri, body, type: "text/plain")
                #expect(status == 415 && text.contains("unsupported_media_type"), "\(uri): \(status) \(text)")
            }
            let capture = try await post("/orders/\(order)/capture", #"{"amount": "1.00", "amount": "2.00"}"#, type: "application/json")
            #expect(capture.0 == 400 && capture.1.contains("duplicate_field"), "\(capture)")
            let trailing = try await post("/orders/\(order)/capture", #"{"amount": "1.00",}"#, type: "application/json")
            #expect(trailing.0 == 400 && trailing.1.contains("invalid_json"), "\(trailing)")
            var payment = String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self)
            payment.removeLast()
            for (extra, code) in [(#", "quantitty": 3}"#, "unknown_field"), (#", "currency": "EUR"}"#, "duplicate_field"), (",}", "invalid_json")] {
                let (status, text) = try await post("/payment", payment + extra, type: "application/json", key: nil)
                #expect(status == 400 && text.contains(code), "\(extra): \(status) \(text)")
            }
            #expect(try await services.store.head().position == head)
        }
    }

    /// Issue 55: a shipping e-mail that cannot be one (no `@`, no domain, a space) is refused with its field, before
    /// anything is decided: the order's receipt and the clerk's search by e-mail depend on it.
    @Test func aShippingEmailThatCannotBeOneIsRefusedAndAppendsNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let head = try await services.store.head().position
            for email in ["jane", "jane@", "@example.com", "jane@example", "jane doe@example.com", "jane@exa mple.com", "jane@@example.com"] {
                let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(extra: ["shipping_email": email]))
                #expect(status.code == 422 && text.contains("shipping_email") && text.contains("\"field\""), "\(email): \(status) \(text)")
            }
            #expect(try await services.store.head().position == head)
            let (accepted, text) = try await storefront.pay(
                client,
                StorefrontDriver.paymentBody(extra: ["shipping_email": "jane.o+shop@mail.example.co.uk"])
            )
            #expect(accepted == .ok, "\(text)")
        }
    }
}
