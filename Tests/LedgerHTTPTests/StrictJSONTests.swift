import Foundation
import Hummingbird
import LedgerHTTP
import LedgerServices
import Testing

/// The one strict body reading (review 3, input strictness): RFC 8259 JSON, no member named twice at any depth, no
/// trailing comma; `POST /payment` refuses members it does not take (a misspelled `quantitty` sold one unit).
@Suite struct StrictJSONTests {
    @Test func acceptsJSONAndRefusesDuplicatesTrailingCommasAndOtherSyntax() {
        for text in [
            #"{}"#, #"[]"#, #" {"a": [1, -2.5e3, true, false, null, "x\u00e9\n"], "b": {"a": 0}} "#, #""\ud83d\ude00""#, "0",
            #"{"a": {"b": 1}, "c": [{"b": 2}, {"b": 3}]}"#,
        ] {
            #expect(StrictJSON.check(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(StrictJSON.check(Array(#"{"amount": 54, "amount": 1}"#.utf8)) == .duplicate(name: "amount"))
        #expect(StrictJSON.check(Array(#"{"a": 1, "\u0061": 2}"#.utf8)) == .duplicate(name: "a"))
        #expect(StrictJSON.check(Array(#"{"s": {"k": 1, "k": 2}}"#.utf8)) == .duplicate(name: "k"))
        for text in [
            #"{"a": 1,}"#, #"[1,]"#, #"{"a" 1}"#, "{'a': 1}", #"{"a": 01}"#, #"{"a": .5}"#, #"{"a": NaN}"#, #"{"a": "\x"}"#,
            "{\"a\": \"\u{01}\"}", #""\ud800""#, #"{"a": 1} x"#, "", #"{"a": tru}"#,
            String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        ] {
            #expect(StrictJSON.check(Array(text.utf8)) != nil, "\(text) was accepted")
        }
        #expect(StrictJSON.check([0x22, 0xC3, 0x28, 0x22]) != nil, "invalid UTF-8 was accepted")
    }

    func parse(_ text: String) -> APIError? {
        do {
            _ = try PaymentRequest.parse(body: ByteBuffer(string: text), contentType: "application/json")
            return nil
        } catch {
            return error
        }
    }

    @Test func aPaymentRefusesUnknownMembersDuplicatesAndTrailingCommas() throws {
        let base = try String(decoding: JSONSerialization.data(withJSONObject: PaymentRequestTests.appBody, options: .sortedKeys), as: UTF8.self)
        #expect(parse(base) == nil)
        let body = base.dropLast()
        let misspelled = parse(body + #", "quantitty": 3}"#)
        #expect(
            misspelled?.code == "unknown_field" && misspelled?.field == "quantitty" && misspelled?.status == .badRequest,
            "\(String(describing: misspelled))"
        )
        let twice = parse(body + #", "amount": 1}"#)
        #expect(twice?.code == "duplicate_field" && twice?.field == "amount", "\(String(describing: twice))")
        #expect(parse(body + ",}")?.code == "invalid_json")
    }
}
