import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerMacros
import LedgerServices

/// `POST /payment`, open like the rest of the storefront API. The body is read up to its size
/// limit and parsed strictly before anything is decided; an `Idempotency-Key` header makes a
/// retry return the first reply and authorize nothing twice.
@MemberwiseInit
public struct PaymentRoutes: Sendable {
    static let idempotencyKeyHeader = HTTPField.Name("Idempotency-Key")!

    /// The request's `Idempotency-Key` (nil when absent): 1…200 bytes, else 400 `invalid_idempotency_key` — the one
    /// rule for every route that takes one (the payment, the hold operations).
    static func idempotencyKey(of request: Request) throws(APIError) -> String? {
        guard let key = request.headers[idempotencyKeyHeader] else { return nil }
        guard (1...200).contains(key.utf8.count) else {
            throw APIError.badRequest("invalid_idempotency_key", "Idempotency-Key must be 1…200 bytes", field: "Idempotency-Key")
        }
        return key
    }
    /// The payment use case itself: no protocol between (nothing stands in for it; tests drive the real one).
    let payments: PaymentService

    public func register(on router: Router<LedgerRequestContext>) {
        router.post("/payment") { request, _ -> Response in
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: PaymentRequest.maximumBodySize)
            } catch {
                throw APIError(
                    status: .contentTooLarge,
                    code: "payload_too_large",
                    message: "the body is larger than \(PaymentRequest.maximumBodySize) bytes"
                )
            }
            let payment = try PaymentRequest.parse(body: body, contentType: request.headers[.contentType])
            let key = try Self.idempotencyKey(of: request)
            let outcome = try await payments.pay(payment, idempotencyKey: key)
            return try jsonResponse(PaymentReply(outcome), status: outcome.result.status)
        }
    }
}
