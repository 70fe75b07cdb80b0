import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIRuntime

// What both modes share: the data and the work behind the two operations, on the generated `Components.Schemas`
// types, so that the modes differ only in the layer between HTTP and those types (routing, parameters, headers,
// body, JSON). Nothing here touches a database: the point is the transport's cost, not the ledger's.

typealias Dispute = Components.Schemas.Dispute
typealias HoldOperationReply = Components.Schemas.HoldOperationReply
typealias DisputeList = Components.Schemas.DisputeList
typealias CaptureBody = Operations.CaptureOrder.Input.Body.JsonPayload

/// The ledger's JSON form (`LedgerJSON.outputFormatting`: sorted keys, unescaped slashes, compact), as both modes
/// write it: plain through `JSONCoders.encoder`, generated through `Configuration(jsonEncodingOptions:)`.
enum JSONCoders {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    static let decoder = JSONDecoder()
    static let openAPIConfiguration = Configuration(jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes])
}

/// The in-memory ledger: a fixed list of disputes, and a capture that answers from its input alone.
struct Ledger: Sendable {
    /// 20 disputes, all `charged_back` and due in 2026, so the benchmark's query (`status=charged_back`,
    /// `due_before=2030-01-01T00:00:00Z`) answers every one of them (about 8 KB of JSON).
    let disputes: [(dispute: Dispute, due: Date)]

    init() {
        let networks = ["visa", "mastercard", "amex", "discover"]
        disputes = (1...20).map { n in
            let due = Date(timeIntervalSince1970: 1_790_000_000 + Double(n) * 86_400)
            let dispute = Dispute(
                disputeId: "dispute-\(n)-4f0c2a91",
                orderId: "order-\(1000 + n)-7b3e9d",
                pspReference: "psp-88\(String(format: "%06d", n * 7919))",
                network: networks[n % networks.count],
                reasonCode: n % 2 == 0 ? "10.4" : "13.1",
                reasonTitle: n % 2 == 0 ? "Other Fraud - Card Absent Environment" : "Merchandise/Services Not Received",
                amount: "\(50 + n).00",
                currency: "USD",
                status: .chargedBack,
                dueAt: Ledger.formatter.withLock { $0.string(from: due) },
                debited: true,
                chargedBack: "\(50 + n).00",
                reversed: "0.00",
                netDebited: "\(50 + n).00",
                evidenceRefs: n % 3 == 0 ? ["evidence/\(n)/receipt.pdf", "evidence/\(n)/tracking.txt"] : [],
                orderStatus: .captured
            )
            return (dispute, due)
        }
    }

    /// `GET /disputes?status=&due_before=`, its work once the parameters are read.
    func listDisputes(status: Components.Schemas.DisputeStatus?, dueBefore: Date?) -> DisputeList {
        DisputeList(
            disputes: disputes.lazy
                .filter { status == nil || $0.dispute.status == status }
                .filter { dueBefore == nil || $0.due < dueBefore! }
                .map(\.dispute)
        )
    }

    /// `POST /orders/{id}/capture`, its work once the key and the body are read: the key's length rule (the ledger's
    /// `PaymentRoutes.idempotencyKey`), then an `applied` capture of the amount asked (all of 59.00 when none).
    func capture(orderID: String, idempotencyKey: String, body: CaptureBody) throws(LedgerError) -> HoldOperationReply {
        guard (1...200).contains(idempotencyKey.utf8.count) else {
            throw LedgerError(
                status: .badRequest,
                code: "invalid_idempotency_key",
                message: "Idempotency-Key must be 1…200 bytes",
                field: "Idempotency-Key"
            )
        }
        let amount = body.amount ?? "59.00"
        let final = body.final ?? false
        // What stays open of the 59.00 hold, in cents (a capture's amount is a two-decimal string here).
        let parts = amount.split(separator: ".", maxSplits: 1)
        let cents = (Int(parts.first ?? "") ?? 0) * 100 + (parts.count == 2 ? Int(parts[1].prefix(2)) ?? 0 : 0)
        let rest = final ? 0 : max(0, 5_900 - cents)
        let open = "\(rest / 100).\(rest % 100 < 10 ? "0" : "")\(rest % 100)"
        let payment = Components.Schemas.HoldFigures(
            currency: "USD",
            authorized: "59.00",
            incremented: "0.00",
            captured: amount,
            reversed: "0.00",
            expired: "0.00",
            refunded: "0.00",
            open: open
        )
        return HoldOperationReply(
            orderId: orderID,
            operation: .capture,
            result: .applied,
            status: amount == "59.00" || final ? .captured : .partiallyCaptured,
            amount: amount,
            pspModificationReference: "mod-\(orderID)-\(idempotencyKey)",
            payment: payment
        )
    }

    /// RFC 3339 times, as the generated server reads `date-time` parameters by default (swift-openapi-runtime's
    /// `ISO8601DateTranscoder`: one ISO8601DateFormatter behind a lock).
    static let formatter = NIOLockedFormatter()

    static func date(_ text: String) -> Date? { formatter.withLock { $0.date(from: text) } }
}

/// One `ISO8601DateFormatter` behind a lock.
final class NIOLockedFormatter: @unchecked Sendable {
    private let lock = NSLock()
    private let formatter = ISO8601DateFormatter()
    func withLock<T>(_ body: (ISO8601DateFormatter) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(formatter)
    }
}

/// The ledger's refusal, `{"error": {"code", "message", "field"?}}` (ledgerd's `APIError`): Hummingbird renders it
/// in plain mode (`HTTPResponseError`), the OpenAPI runtime's `ErrorHandlingMiddleware` in generated mode when a
/// handler throws it (`HTTPResponseConvertible`). The runtime's own refusals (a missing required header, a body it
/// cannot decode) are not this type, and come out in the runtime's form (see docs/performance.md).
struct LedgerError: Error, HTTPResponseError, HTTPResponseConvertible, Sendable {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    var field: String? = nil

    struct Body: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
            let field: String?
        }
        let error: Detail
    }

    var bytes: Data {
        (try? JSONCoders.encoder.encode(Body(error: .init(code: code, message: message, field: field)))) ?? Data()
    }

    // Hummingbird
    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    // OpenAPIRuntime
    var httpStatus: HTTPResponse.Status { status }
    var httpHeaderFields: HTTPFields { [.contentType: "application/json; charset=utf-8"] }
    var httpBody: HTTPBody? { HTTPBody(bytes) }
}
