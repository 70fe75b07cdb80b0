import Foundation
import Hummingbird
import LedgerCore
import LedgerServices
import Testing

@testable import LedgerHTTP

/// The one body reader (``JSONRequestBody``): the same rules for every route's DTO, each failure an ``APIError`` naming the
/// member, each checked here on the routes' own DTOs (no server, no database).
@Suite struct JSONRequestBodyTests {
    /// The error `body` is refused with as `T`, or nil when it decodes.
    func refusal<T: JSONRequestBody>(_ type: T.Type, _ body: String) -> APIError? {
        do {
            _ = try StrictJSON.decode(type, from: ByteBuffer(string: body))
            return nil
        } catch {
            return error
        }
    }

    func decoded<T: JSONRequestBody>(_ type: T.Type, _ body: String) throws -> T {
        try StrictJSON.decode(type, from: ByteBuffer(string: body))
    }

    @Test func aMemberTheBodyDoesNotNameIsRefusedByName() {
        // The first unknown member in name order, whatever the body's order; the message says what the body is.
        let error = refusal(WebhookBody.self, #"{"zeta": 1, "url": "http://x/y", "alpha": 2, "secret": "s"}"#)
        #expect(error?.status == .badRequest && error?.code == "unknown_field" && error?.field == "alpha", "\(String(describing: error))")
        #expect(error?.message == "a webhook does not take alpha")
        // A member's spelling is exact: `evidence_ref` is not `evidence_refs`.
        #expect(refusal(DefenceBody.self, #"{"evidence_ref": ["a"]}"#)?.field == "evidence_ref")
        #expect(refusal(EmptyBody.self, #"{"why": 1}"#)?.code == "unknown_field")
    }

    @Test func aBodyThatIsNotAnObjectIsInvalidJSONAndAnEmptyBodyIsAnEmptyObject() throws {
        for body in ["[]", "[1, 2]", "\"text\"", "12", "true", "null"] {
            let error = refusal(ResolutionBody.self, body)
            #expect(error?.status == .badRequest && error?.code == "invalid_json", "\(body): \(String(describing: error))")
        }
        // White space alone is not JSON (schemathesis sent "\n" to POST /settlements/run, which ran the settlement).
        for body in ["\n", " \n\t\r", " "] {
            #expect(refusal(EmptyBody.self, body)?.code == "invalid_json", "\(body.debugDescription)")
        }
        for body in ["", "{}", " {} \n"] {
            _ = try decoded(EmptyBody.self, body)
            // `{}` for a body with a required member: that member is missing (not "invalid JSON").
            #expect(refusal(ResolutionBody.self, body)?.code == "missing_field", "\(body.debugDescription)")
        }
    }

    @Test func aMissingOrNullMemberIsMissingAndAWrongTypeIsInvalidEachNamed() {
        for body in [#"{}"#, #"{"reason": null}"#] {
            let error = refusal(ResolutionBody.self, body)
            #expect(error?.status == .unprocessableContent && error?.code == "missing_field" && error?.field == "reason", "\(body)")
        }
        let cases: [(String, String)] = [
            (#"{"reason": 5}"#, "reason must be a string"),
            (#"{"reason": ["x"]}"#, "reason must be a string"),
            (#"{"reason": "   "}"#, "reason must not be empty"),
            (#"{"reason": "a\u0000b"}"#, "reason must not contain control characters"),
            (#"{"reason": "\#(String(repeating: "é", count: 501))"}"#, "reason is longer than 500 characters"),
        ]
        for (body, message) in cases {
            let error = refusal(ResolutionBody.self, body)
            #expect(
                error?.status == .unprocessableContent && error?.code == "invalid_field" && error?.field == "reason" && error?.message == message,
                "\(body.prefix(40)): \(String(describing: error))"
            )
        }
        // Integers: not a boolean, a fraction, a string of digits or beyond 64 bits.
        for body in [#"{"position": true}"#, #"{"position": 1.5}"#, #"{"position": "1"}"#, #"{"position": 9223372036854775808}"#] {
            let error = refusal(AcknowledgementBody.self, body)
            #expect(error?.code == "invalid_field" && error?.field == "position", "\(body): \(String(describing: error))")
        }
        #expect(refusal(AcknowledgementBody.self, "{}")?.code == "missing_field")
        // Booleans: not 1, not "true".
        for body in [#"{"final": 1}"#, #"{"final": "true"}"#] {
            #expect(refusal(HoldOperationRequest.CaptureBody.self, body)?.message == "final must be true or false", "\(body)")
        }
    }

    @Test func eachRoutesBodyDecodesWhatItTakes() throws {
        #expect(try decoded(ResolutionBody.self, #"{"reason": "  ticket 42 "}"#).reason == "ticket 42")
        #expect(try decoded(ErasureBody.self, #"{"customer": "jane@example.com"}"#).customer == "jane@example.com")
        #expect(try decoded(SettlementRunBody.self, #"{"business_date": "2026-06-17"}"#).businessDate?.description == "2026-06-17")
        #expect(try decoded(SettlementRunBody.self, "{}").businessDate == nil)  // the daemon's last closed business day
        #expect(try decoded(SettlementRunBody.self, #"{"business_date": null}"#).businessDate == nil)
        #expect(refusal(SettlementRunBody.self, #"{"business_date": "17/06/2026"}"#)?.code == "invalid_date")
        #expect(try decoded(DefenceBody.self, #"{"evidence_refs": ["a", "b"]}"#).evidenceRefs == ["a", "b"])
        #expect(refusal(DefenceBody.self, #"{"evidence_refs": [1]}"#)?.code == "invalid_evidence")
        let many = "[" + Array(repeating: #""x""#, count: 51).joined(separator: ",") + "]"
        #expect(refusal(DefenceBody.self, #"{"evidence_refs": \#(many)}"#)?.code == "invalid_evidence")

        let subscription = try decoded(SubscriptionBody.self, #"{"name": "s", "types": ["OrderOpened"], "stream_prefixes": ["order-"]}"#)
        #expect(subscription.name == "s" && subscription.types == ["OrderOpened"] && subscription.streamPrefixes == ["order-"])
        #expect(try decoded(SubscriptionBody.self, #"{"name": "s", "from": "now"}"#).start == .now)
        #expect(try decoded(SubscriptionBody.self, #"{"name": "s", "from": 7}"#).start == .after(7))
        #expect(try decoded(SubscriptionBody.self, #"{"name": "s", "from": null}"#).start == .after(0))
        for from in ["-1", #""later""#, "true"] {
            #expect(refusal(SubscriptionBody.self, #"{"name": "s", "from": \#(from)}"#)?.field == "from", "\(from)")
        }
        for types in [#""OrderOpened""#, #"[""]"#, "[1]"] {
            #expect(refusal(SubscriptionBody.self, #"{"name": "s", "types": \#(types)}"#)?.field == "types", "\(types)")
        }
        // A secret and a URL are kept as sent, not trimmed (the service checks them).
        let webhook = try decoded(WebhookBody.self, #"{"url": " http://x/y", "secret": " s "}"#)
        #expect(webhook.url == " http://x/y" && webhook.secret == " s " && webhook.types.isEmpty)
        #expect(refusal(WebhookBody.self, #"{"url": "http://x/y"}"#)?.code == "missing_field")
        #expect(try decoded(RedeliveryBody.self, #"{"from": 3}"#).from == 3)
        #expect(try decoded(RotationBody.self, #"{"secret": "s"}"#).grace == WebhookService.defaultGrace)
        #expect(try decoded(RotationBody.self, #"{"secret": "s", "grace_seconds": 60}"#).grace == .seconds(60))
        for grace in ["-1", "2592001", #""60""#] {
            #expect(refusal(RotationBody.self, #"{"secret": "s", "grace_seconds": \#(grace)}"#)?.field == "grace_seconds", "\(grace)")
        }
    }

    /// The printable-ASCII shortcut of the text rule gives what the Unicode rule gives, for every kind of text.
    @Test(arguments: [
        "abc", "  abc  ", " a b ", "", " ", "     ", "a", String(repeating: "x", count: 5), String(repeating: "x", count: 6),
        "  xxxxx  ", " xxxxxx", "~!@#$%^&*()_+{}|:\"<>?`-=[];',./", "a\u{7f}", "\u{7f}", "\tabc", "abc\n", "a\u{0}b",
        "é", " é ", "\u{a0}a\u{a0}", "\u{2028}x", "a\r\nb", "日本", "😀 ", "\u{85}",
    ])
    func printableASCIITextFollowsTheUnicodeRule(raw: String) {
        func outcome(_ rule: (String) throws(APIError) -> String) -> Result<String, APIError> {
            do throws(APIError) { return .success(try rule(raw)) } catch { return .failure(error) }
        }
        let fast = outcome { raw throws(APIError) in try RequestFields.text(raw, field: "name", maximumLength: 5) }
        let reference = outcome { raw throws(APIError) in try RequestFields.anyText(raw, field: "name", maximumLength: 5) }
        #expect(fast == reference)
        let printable = raw.utf8.allSatisfy { (0x20...0x7E).contains($0) }
        #expect((RequestFields.printableASCII(raw) != nil) == printable)
    }

    /// The app's payment body is decoded by the direct decoder, not handed to Foundation (its `source` is tried as a
    /// number before it is read as text: a string is certainly not one).
    @Test func theAppsPaymentBodyIsDecodedDirectly() throws {
        let body = #"""
            {"gateway": "stripe", "source": "tok_visa", "amount": 5900, "currency": "USD", "description": "Clock",
             "shipping_contact": "Jane Appleseed", "shipping_email": "jane@example.com", "shipping_street": "1 Infinite Loop",
             "shipping_city": "Cupertino", "shipping_state": "CA", "shipping_zip": "95014", "shipping_method_name": "Standard"}
            """#
        var text = body
        let decoded = try text.withUTF8 {
            try DirectJSONDecoder.decode(StrictJSON.Members<PaymentRequest.PaymentBody>.self, from: UnsafeRawBufferPointer($0))
        }
        #expect(decoded?.body.request.source == .token("tok_visa"))
    }
}
