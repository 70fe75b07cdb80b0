import Foundation
import HTTPTypes
import Hummingbird

/// Mode `plain`: what ledgerd does today — `router.get/post`, the query and the `Idempotency-Key` header read by
/// hand, the body collected (16 KiB at most, as `HoldRoutes`), its type checked and decoded by Foundation's JSONDecoder, the reply
/// encoded by Foundation's JSONEncoder (sorted keys), refusals in the ledger's shape.
enum PlainRoutes {
    static let idempotencyKeyHeader = HTTPField.Name("Idempotency-Key")!

    static func register(_ ledger: Ledger, on router: Router<BasicRequestContext>) {
        router.get("/disputes") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            var status: Components.Schemas.DisputeStatus?
            if let text = parameters["status"] {
                guard let parsed = Components.Schemas.DisputeStatus(rawValue: String(text)) else {
                    throw LedgerError(status: .badRequest, code: "invalid_parameter", message: "unknown status", field: "status")
                }
                status = parsed
            }
            var dueBefore: Date?
            if let text = parameters["due_before"] {
                guard let parsed = Ledger.date(String(text)) else {
                    throw LedgerError(
                        status: .badRequest,
                        code: "invalid_parameter",
                        message: "due_before must be an RFC 3339 time",
                        field: "due_before"
                    )
                }
                dueBefore = parsed
            }
            return try json(ledger.listDisputes(status: status, dueBefore: dueBefore))
        }
        router.post("/orders/:id/capture") { request, context -> Response in
            let id = try context.parameters.require("id")
            let bytes: ByteBuffer
            do {
                bytes = try await request.body.collect(upTo: 16 * 1024)
            } catch {
                throw LedgerError(status: .contentTooLarge, code: "payload_too_large", message: "the body is over 16 KiB")
            }
            let body: CaptureBody
            if bytes.readableBytes == 0 {
                body = CaptureBody()
            } else {
                try checkContentType(request.headers[.contentType])
                do {
                    body = try JSONCoders.decoder.decode(CaptureBody.self, from: bytes)
                } catch {
                    throw LedgerError(status: .badRequest, code: "bad_json", message: "the body is not a capture")
                }
            }
            guard let key = request.headers[idempotencyKeyHeader] else {
                throw LedgerError(
                    status: .badRequest,
                    code: "missing_idempotency_key",
                    message: "a capture moves money: send an Idempotency-Key header (1…200 bytes, one per operation)",
                    field: "Idempotency-Key"
                )
            }
            return try json(try ledger.capture(orderID: id, idempotencyKey: key, body: body))
        }
    }

    /// 415 unless the body's type is `application/json` (parameters aside): ledgerd's `StrictJSON.checkContentType`.
    static func checkContentType(_ contentType: String?) throws(LedgerError) {
        let mediaType = contentType.map { $0.split(separator: ";", omittingEmptySubsequences: false).first.map(String.init) ?? $0 }
        guard mediaType?.trimmingCharacters(in: .whitespaces).lowercased() == "application/json" else {
            throw LedgerError(status: .unsupportedMediaType, code: "unsupported_media_type", message: "send the body as application/json")
        }
    }

    static func json(_ value: some Encodable) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        let data = try JSONCoders.encoder.encode(value)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
