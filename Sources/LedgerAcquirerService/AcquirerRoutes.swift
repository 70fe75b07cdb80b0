import Crypto
import HTTPTypes
import Hummingbird
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerClient
import LedgerCore
import Logging
import NIOCore
import Synchronization

import struct Foundation.Data

/// The acquirer service's request context: Hummingbird's storage plus the connection, so that the
/// reset fault can close it without an answer.
public struct AcquirerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}

/// The routes of ``AcquirerWire``: each decodes its request, hands it to the durable model and sends
/// the model's reply bytes (or, under a wire fault, misbehaves as configured).
struct AcquirerRoutes: Sendable {
    let model: DurableAcquirerModel
    let journal: AcquirerJournal
    /// SHA-256 of the API key.
    let apiKeyDigest: Data
    let faults: FaultDecider
    /// Every fault injected, counted.
    let injected: InjectedFaults
    /// The last answer sent to a changing request (for the earlier-answer fault).
    let lastAnswer = LastAnswer()

    func register(on router: Router<AcquirerRequestContext>) {
        router.get("/health") { _, _ in "ok" }
        let api = router.group(RouterPath(AcquirerWire.version))
        api.post("payments") { request, context in
            try await self.change(request, context) { body throws(AcquirerError) in
                let wire = try Self.decode(AuthorisationBody.self, body)
                try AcquirerReferences.check(merchant: wire.merchantReference)
                let command = await model.resolve(wire.request)
                return (.command(.authorize(command), psp: nil), "authorise")
            }
        }
        api.post("payments/:psp/captures") { request, context in
            try await self.modification(request, context, CaptureRequest.self) { .capture($0) }
        }
        api.post("payments/:psp/amountUpdates") { request, context in
            try await self.modification(request, context, IncrementRequest.self) { .increment($0) }
        }
        api.post("payments/:psp/cancels") { request, context in
            try await self.modification(request, context, ReversalRequest.self) { .reverse($0) }
        }
        api.post("payments/:psp/refunds") { request, context in
            try await self.modification(request, context, RefundRequest.self) { .refund($0) }
        }
        api.post("cancels") { request, context in
            try await self.change(request, context) { body throws(AcquirerError) in
                let reversal = try Self.decode(ReversalRequest.self, body)
                try AcquirerReferences.check(reversal)
                return (.command(.reverse(reversal), psp: nil), "cancel")
            }
        }
        api.get("payments") { request, _ in
            try await self.answering(request) {
                guard let reference = request.uri.queryParameters.get("merchantReference").map({ String($0) }) else {
                    throw AcquirerError(.invalidRequest, "merchantReference is required")
                }
                // An inquiry is journaled (it applies the expiries due): a reference PostgreSQL cannot store was a 503.
                try AcquirerReferences.check(merchant: reference)
                let plan = faults.plan()
                try await delay(plan)
                return Self.response(await model.perform(.query(merchantReference: reference), key: nil))
            }
        }
        api.post("payments/queries") { request, _ in
            try await self.answering(request) {
                // A read: no idempotency key (asked again, it answers what is true then).
                guard let body = await Self.body(of: request, limit: 1 << 20) else { return Self.tooLarge(limit: 1 << 20) }
                let references = try Self.decode(PaymentQueriesBody.self, Data(buffer: body)).merchantReferences
                guard references.count <= AcquirerWire.maximumQueryReferences else {
                    throw AcquirerError(.invalidRequest, "at most \(AcquirerWire.maximumQueryReferences) merchant references per request")
                }
                for reference in references { try AcquirerReferences.check(merchant: reference) }
                let plan = faults.plan()
                try await delay(plan)
                return Self.response(await model.perform(.queries(merchantReferences: references), key: nil))
            }
        }
        api.put("settlement/batches/:batch/pages/:page") { request, context in
            try await self.answering(request) {
                // The path is taken as written (not percent-decoded): a batch reference from it is never empty nor has a NUL.
                let batch = try context.parameters.require("batch")
                guard let page = context.parameters.get("page", as: Int.self), (0...AcquirerWire.maximumPage).contains(page) else {
                    throw AcquirerError(.invalidRequest, "a page number is 0…\(AcquirerWire.maximumPage)")
                }
                guard let body = await Self.body(of: request, limit: 64 << 20) else { return Self.tooLarge(limit: 64 << 20) }
                let items = try Self.decode([SettlementItem].self, Data(buffer: body))
                guard items.count <= AcquirerWire.maximumPageItems else {
                    throw AcquirerError(.invalidRequest, "at most \(AcquirerWire.maximumPageItems) items per page")
                }
                // Refused here, where the item arrives, not when the batch it belongs to is settled.
                for item in items { try AcquirerReferences.check(item) }
                guard try await journal.storePage(batchReference: batch, page: page, items: items) else {
                    throw AcquirerError(.duplicateReference, reference: batch, "page \(page) was uploaded with other items")
                }
                return Self.response(.noContent)
            }
        }
        api.post("settlement/batches") { request, context in
            try await self.change(request, context) { body throws(AcquirerError) in
                let submission = try Self.decode(BatchSubmissionBody.self, body)
                try AcquirerReferences.check(batch: submission.header.batchReference)
                guard (0...AcquirerWire.maximumPage + 1).contains(submission.pages) else {
                    throw AcquirerError(.invalidRequest, "pages is 0…\(AcquirerWire.maximumPage + 1)")
                }
                let complete: Bool
                do { complete = try await journal.hasPages(of: submission.header.batchReference, pages: submission.pages) } catch {
                    throw AcquirerError(.unavailable, "the batch pages could not be read")
                }
                // A well-formed submission the uploads do not match: the batch's pages are unknown (404), not a bad request.
                guard complete else {
                    throw AcquirerError(.unknownBatch, reference: submission.header.batchReference, "a page of the batch was not uploaded")
                }
                return (.command(.settle(submission.header, pages: submission.pages), psp: nil), "settle")
            }
        }
        api.get("settlement/reports/:number") { request, context in
            try await self.answering(request) {
                guard let number = context.parameters.get("number", as: Int.self) else {
                    throw AcquirerError(.invalidRequest, "a batch number is an integer")
                }
                let from = try Self.query("from", of: request, default: 0, in: 0...Int.max)
                let count = try Self.query("count", of: request, default: 1_000, in: 1...AcquirerWire.maximumReportLines)
                return Self.response(await model.perform(.reportLines(batchNumber: number, from: from, count: count), key: nil))
            }
        }
        api.get("payouts/:number") { request, context in
            try await self.answering(request) {
                guard let number = context.parameters.get("number", as: Int.self) else {
                    throw AcquirerError(.invalidRequest, "a batch number is an integer")
                }
                return Self.response(await model.perform(.payout(batchNumber: number), key: nil))
            }
        }
        api.get("disputes/notifications") { request, _ in
            try await self.answering(request) {
                let after = try Self.query("after", of: request, default: 0, in: 0...Int.max)
                let limit = try Self.query("limit", of: request, default: 100, in: 1...AcquirerWire.maximumDisputeNotifications)
                return Self.response(await model.perform(.disputeNotifications(after: after, limit: limit), key: nil))
            }
        }
    }

    /// A request that does not go through ``change(_:_:_:)`` (an inquiry, a read, a page's upload): key required; an
    /// ``AcquirerError`` that `answer` throws is answered as the wire's refusal, any other error goes on.
    private func answering(_ request: Request, _ answer: () async throws -> Response) async throws -> Response {
        try authenticate(request)
        do { return try await answer() } catch let error as AcquirerError { return Self.response(.refusal(error)) }
    }

    private func modification<Body: Decodable & Sendable & NamesAModification>(
        _ request: Request,
        _ context: AcquirerRequestContext,
        _ type: Body.Type,
        _ make: @escaping @Sendable (Body) -> JournalCommand
    ) async throws -> Response {
        let psp = context.parameters.get("psp")
        return try await change(request, context) { body throws(AcquirerError) in
            let modification = try Self.decode(Body.self, body)
            try AcquirerReferences.check(modification)
            return (.command(make(modification), psp: psp), "modify")
        }
    }

    /// A request that changes something: key required, faults applied around the durable model.
    private func change(
        _ request: Request,
        _ context: AcquirerRequestContext,
        _ operation: @Sendable (Data) async throws(AcquirerError) -> (DurableAcquirerModel.Operation, String)
    ) async throws -> Response {
        try authenticate(request)
        guard let key = request.headers[HTTPField.Name(AcquirerWire.idempotencyKeyHeader)!], !key.isEmpty, key.utf8.count <= 200 else {
            return Self.response(.refusal(AcquirerError(.invalidRequest, "the Idempotency-Key header (1–200 bytes) is required")))
        }
        guard let collected = await Self.body(of: request, limit: 1 << 20) else { return Self.tooLarge(limit: 1 << 20) }
        let body = Data(buffer: collected)
        let plan = faults.plan()
        try await delay(plan)
        if plan.serverErrorBeforeApplying {
            injected.record("serverErrorBeforeApplying")
            return Response(
                status: .internalServerError,
                body: .init(byteBuffer: ByteBuffer(string: "{\"error\":{\"code\":\"unavailable\",\"message\":\"injected\"}}"))
            )
        }
        let resolved: DurableAcquirerModel.Operation
        do { resolved = try await operation(body).0 } catch { return Self.response(.refusal(error)) }
        var reply = await model.perform(resolved, key: key)
        if plan.applyTwice {
            reply = await model.perform(resolved, key: key)
            injected.record("duplicateAnswer")
        }
        if plan.hangMillisecondsAfterApplying > 0 {
            injected.record("timeoutAfterApplying")
            try await Task.sleep(for: .milliseconds(plan.hangMillisecondsAfterApplying))
        }
        if plan.resetAfterApplying {
            injected.record("resetAfterApplying")
            try? await context.channel.close()
            throw HTTPError(.internalServerError)  // never sent: the connection is gone
        }
        let earlier = lastAnswer.exchange(reply)
        if plan.answerEarlier, let earlier {
            injected.record("earlierAnswer")
            return Self.response(earlier)
        }
        return Self.response(reply)
    }

    /// The latency fault, when the plan has it.
    private func delay(_ plan: FaultPlan) async throws {
        guard plan.delayMilliseconds > 0 else { return }
        injected.record("latency")
        try await Task.sleep(for: .milliseconds(plan.delayMilliseconds))
    }

    /// Checks `X-API-Key` in constant time (digests compared, so the key's length is not revealed either).
    private func authenticate(_ request: Request) throws {
        guard let presented = request.headers[HTTPField.Name(AcquirerWire.apiKeyHeader)!],
            Data(SHA256.hash(data: Data(presented.utf8))) == apiKeyDigest
        else {
            throw HTTPError(.unauthorized, message: "a valid X-API-Key is required")
        }
    }

    /// The integer query parameter `name`: `fallback` when absent; refused (`invalidRequest`) when it is not an integer
    /// in `range` — never silently read as the default or clamped, as the document says.
    static func query(_ name: String, of request: Request, default fallback: Int, in range: ClosedRange<Int>) throws(AcquirerError) -> Int {
        guard let text = request.uri.queryParameters.get(name) else { return fallback }
        guard let value = Int(String(text)), range.contains(value) else {
            throw AcquirerError(.invalidRequest, "\(name) is an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ data: Data) throws(AcquirerError) -> Value {
        do { return try LedgerJSON.decode(Value.self, from: data) } catch {
            throw AcquirerError(.invalidRequest, "the body is not a valid \(Value.self)")
        }
    }

    /// The request's body, or nil when it is larger than `limit` bytes (answered with ``tooLarge(limit:)``: the wire's
    /// error shape, where Hummingbird's own 413 had an empty body).
    static func body(of request: Request, limit: Int) async -> ByteBuffer? {
        // Collecting fails only for the size here (NIO's too-many-bytes error, not an HTTPError), as in StrictJSON.body.
        do { return try await request.body.collect(upTo: limit) } catch { return nil }
    }

    /// 405 in the wire's error shape (``MethodCheckedRouter`` sets the status and `Allow`).
    @Sendable static func methodNotAllowed(message: String, request: Request, context: AcquirerRequestContext) -> Response {
        response(.refusal(AcquirerError(.invalidRequest, message)))
    }

    /// 413 in the wire's error shape, journalling nothing.
    static func tooLarge(limit: Int) -> Response {
        var reply = AcquirerReply.refusal(AcquirerError(.invalidRequest, "the body is larger than \(limit) bytes"))
        reply.status = 413
        return response(reply)
    }

    static func response(_ reply: AcquirerReply) -> Response {
        var headers = HTTPFields()
        if !reply.body.isEmpty { headers[.contentType] = "application/json" }
        return Response(
            status: HTTPResponse.Status(code: reply.status),
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: reply.body))
        )
    }
}

/// The last answer the service sent to a changing request.
final class LastAnswer: Sendable {
    private let value = Mutex<AcquirerReply?>(nil)

    /// Stores `reply`; returns the one before it.
    func exchange(_ reply: AcquirerReply) -> AcquirerReply? {
        value.withLock { last in
            defer { last = reply }
            return last
        }
    }
}
