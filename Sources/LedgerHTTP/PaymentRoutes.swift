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

    /// The request's `Idempotency-Key` (nil when absent): one field of 1…200 printable ASCII bytes (0x21…0x7E), else
    /// 400 `invalid_idempotency_key` — the one rule for every route that takes one (the payment, the hold operations).
    /// Judged on the field's bytes: the HTTP/1 decoder hands Hummingbird a lossily decoded text (`\xff`, `\xfe` and
    /// U+FFFD arrive as one U+FFFD), so admitting only ASCII is what keeps two byte strings from being one key; it also
    /// keeps tabs, bidirectional overrides and spaces out of the event metadata the key is stored in.
    static func idempotencyKey(of request: Request) throws(APIError) -> String? {
        let fields = request.headers[fields: idempotencyKeyHeader]
        guard let field = fields.first else { return nil }
        let printable = field.withUnsafeBytesOfValue { bytes in
            (1...200).contains(bytes.count) && bytes.allSatisfy { (0x21...0x7E).contains($0) }
        }
        guard fields.count == 1, printable else {
            throw APIError.badRequest(
                "invalid_idempotency_key",
                "Idempotency-Key must be one header of 1…200 printable ASCII characters (no spaces or control characters)",
                field: "Idempotency-Key"
            )
        }
        return field.value
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
