import Foundation
import Hummingbird
import LedgerHTTP
import LedgerServices
import Testing

/// `POST /orders/{id}/capture|increment|void|refund|ship` bodies, parsed strictly into the hold service's input.
@Suite struct HoldOperationRequestTests {
    func parse(_ kind: HoldOperationRequest.Kind, _ body: String) throws -> HoldOperationRequest {
        try HoldOperationRequest.parse(kind: kind, body: ByteBuffer(string: body))
    }

    /// The refusal of `body`, or nil when it parses.
    func refusal(_ kind: HoldOperationRequest.Kind, _ body: String) -> APIError? {
        do {
            _ = try parse(kind, body)
            return nil
        } catch let error as APIError {
            return error
        } catch {
            Issue.record("not an APIError: \(error)")
            return nil
        }
    }

    @Test(arguments: HoldOperationRequest.Kind.allCases.filter { $0 != .increment && $0 != .refund })
    func anEmptyBodyIsAnEmptyObject(kind: HoldOperationRequest.Kind) throws {
        for body in ["", "{}"] {
            #expect(try parse(kind, body) == HoldOperationRequest(kind: kind), "\(kind) \(body.debugDescription)")
        }
        // White space alone is not JSON (the published contract; schemathesis).
        #expect(throws: APIError.self) { try parse(kind, "  \n\t\r ") }
    }

    @Test func eachOperationTakesItsFieldsTrimmed() throws {
        #expect(
            try parse(.capture, #"{"amount": " 20.00 ", "final": true}"#)
                == HoldOperationRequest(kind: .capture, amount: "20.00", isFinal: true)
        )
        #expect(try parse(.capture, #"{"amount": null, "final": null}"#) == HoldOperationRequest(kind: .capture))
        #expect(try parse(.increment, #"{"amount": "5.00"}"#) == HoldOperationRequest(kind: .increment, amount: "5.00"))
        #expect(try parse(.void, #"{"amount": "1.00"}"#) == HoldOperationRequest(kind: .void, amount: "1.00"))
        #expect(
            try parse(.refund, #"{"amount": "10.00", "reason": "scratched"}"#)
                == HoldOperationRequest(kind: .refund, amount: "10.00", reason: "scratched")
        )
        #expect(
            try parse(.ship, #"{"carrier": "UPS", "tracking": "1Z999"}"#)
                == HoldOperationRequest(kind: .ship, carrier: "UPS", tracking: "1Z999")
        )
    }

    /// (operation, body, status, code, field)
    @Test(arguments: [
        (HoldOperationRequest.Kind.capture, #"{"reason": "x"}"#, 400, "unknown_field", "reason"),
        (.void, #"{"final": true}"#, 400, "unknown_field", "final"),
        (.ship, #"{"amount": "1.00"}"#, 400, "unknown_field", "amount"),
        (.increment, "{}", 422, "missing_field", "amount"),
        (.refund, #"{"amount": "1.00"}"#, 422, "missing_field", "reason"),
        (.refund, #"{"reason": "late"}"#, 422, "missing_field", "amount"),
        (.capture, #"{"amount": 20}"#, 422, "invalid_field", "amount"),
        (.capture, #"{"final": "yes"}"#, 422, "invalid_field", "final"),
        (.increment, #"{"amount": "   "}"#, 422, "invalid_field", "amount"),
        (.refund, #"{"amount": "1.00", "reason": "\#(String(repeating: "r", count: 201))"}"#, 422, "invalid_field", "reason"),
        (.ship, #"{"carrier": "\#(String(repeating: "c", count: 201))"}"#, 422, "invalid_field", "carrier"),
        (.ship, #"{"tracking": "\#(String(repeating: "t", count: 201))"}"#, 422, "invalid_field", "tracking"),
    ])
    func refusalsNameTheirField(kind: HoldOperationRequest.Kind, body: String, status: Int, code: String, field: String) {
        let error = refusal(kind, body)
        #expect(error?.status.code == status, "\(kind) \(body)")
        #expect(error?.code == code, "\(kind) \(body)")
        #expect(error?.field == field, "\(kind) \(body)")
    }

    @Test(arguments: ["{not json", "[1, 2]", "\"amount\"", "42", "null"])
    func aBodyThatIsNotAJSONObjectIsInvalidJSON(body: String) {
        let error = refusal(.capture, body)
        #expect(error?.status == .badRequest && error?.code == "invalid_json", "\(body)")
    }

    @Test func unknownFieldsAreNamedInOrder() {
        #expect(refusal(.capture, #"{"zeta": 1, "alpha": 2, "amount": "1.00"}"#)?.field == "alpha")
    }
}
