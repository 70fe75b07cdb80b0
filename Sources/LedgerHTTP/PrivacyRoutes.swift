import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerMacros
import LedgerServices

/// Personal data, operator key only (auditors see the money history, not the shoppers):
/// - `POST /privacy/erasures {"customer": "<e-mail or contact ref>"}` — erase the customer's
///   shipping contacts: each is deleted from `ledger.shipping_contacts` and a `ContactErased`
///   event (no personal data in it) is appended; 200 with what was erased, 404 when nothing matches;
/// - `GET /orders/{id}/contact` — the order's shipping contact: 200 with its fields, or 410
///   `contact_erased` once erased.
@MemberwiseInit
public struct PrivacyRoutes: Sendable {
    let privacy: PrivacyService

    public func register(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/privacy/erasures") { request, context -> Response in
            let customer = try await StrictJSON.decode(ErasureBody.self, of: request).customer
            let actor = context.actor
            let erased = try await privacy.erase(customer: customer, actor: actor)
            guard !erased.isEmpty else {
                throw APIError.notFound("no shipping contact matches that customer (or it was erased already)")
            }
            return try jsonResponse(ErasureReply(erased))
        }
        group.get("/orders/:id/contact") { _, context -> Response in
            let id = try context.parameters.require("id")
            switch try await privacy.contact(orderID: id) {
            case nil:
                throw APIError.notFound("no order \(id)")
            case .present(let ref, let json):
                // Personal data: no cache (a browser's, a proxy's) keeps a copy that an erasure could not reach.
                var response = jsonResponse(.object(["order_id": .string(id), "contact_ref": .string(ref), "contact": RawJSON(stored: json)]))
                response.headers[.cacheControl] = "no-store"
                return response
            case .erased(let ref, let at, let position):
                throw APIError(
                    status: .gone,
                    code: "contact_erased",
                    message: "the shipping contact \(ref) was erased at \(at) (event \(position))"
                )
            case .missing(let ref):
                throw APIError(status: .notFound, code: "contact_missing", message: "no shipping contact \(ref) is stored")
            }
        }
    }
}

/// `POST /privacy/erasures {customer}`: the customer's email as the payment gave it (case aside).
struct ErasureBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable { case customer }
    static let subject = "an erasure"
    let customer: String
    init(from decoder: any Decoder) throws {
        customer = try decoder.container(keyedBy: Member.self).text(.customer, maximumLength: 320)
    }
}
