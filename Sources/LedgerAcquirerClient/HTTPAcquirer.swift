import AsyncHTTPClient
import LedgerAcquirerAPI
import LedgerCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Synchronization

import struct Foundation.Data

/// How the ledger reaches the acquirer service; see ``HTTPAcquirer``.
public struct HTTPAcquirerConfiguration: Sendable {
    /// `http://host:port` of the acquirer service (no trailing slash).
    public var baseURL: String
    /// Sent as `X-API-Key`. **Secret**: read from a file or the environment of the ledger, never logged.
    public var apiKey: String
    /// Most time to open a connection.
    public var connectTimeout: Duration
    /// Most time one attempt may wait for its whole answer.
    public var readTimeout: Duration
    /// The same for a settlement batch submission, which the acquirer prices line by line before it
    /// answers (a million items take it a while).
    public var settlementTimeout: Duration
    /// Attempts per call (the first included), each with the same idempotency key.
    public var attempts: Int
    /// Pause before the second attempt; doubled before each further one.
    public var backoff: Duration
    /// Calls in a row that could not be confirmed before the breaker opens.
    public var breakerThreshold: Int
    /// How long an open breaker refuses calls before it lets one trial through.
    public var breakerOpenFor: Duration
    /// Connections kept to the service at most (calls beyond wait for one).
    public var maximumConnections: Int
    /// Authorization references whose psp reference the adapter remembers at most; past it one is forgotten per new
    /// one (a forgotten one costs a status inquiry when next modified).
    public var rememberedReferences: Int

    public init(
        baseURL: String,
        apiKey: String,
        connectTimeout: Duration = .seconds(1),
        readTimeout: Duration = .seconds(10),
        settlementTimeout: Duration = .seconds(900),
        attempts: Int = 3,
        backoff: Duration = .milliseconds(50),
        breakerThreshold: Int = 5,
        breakerOpenFor: Duration = .seconds(2),
        maximumConnections: Int = 16,
        rememberedReferences: Int = 50_000
    ) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.settlementTimeout = max(readTimeout, settlementTimeout)
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.breakerThreshold = max(1, breakerThreshold)
        self.breakerOpenFor = breakerOpenFor
        self.maximumConnections = max(1, maximumConnections)
        self.rememberedReferences = max(1, rememberedReferences)
    }
}

/// The ledger's adapter for the acquirer service (``AcquirerWire``), on AsyncHTTPClient.
///
/// Each call gets a connect and a read timeout and up to ``HTTPAcquirerConfiguration/attempts``
/// attempts with the **same** idempotency key, so a retry can never apply an operation twice. An
/// answer is accepted only when it is about the request (its references match): an answer meant for
/// another request counts as a failed attempt. A call that could not be confirmed throws
/// `AcquirerError.unavailable` — the outcome is unknown, and the ledger's existing path takes over (a
/// payment stays pending for recovery, which asks the acquirer by reference; a hold operation is
/// retried by its operator with the same key). A circuit breaker stops calling an acquirer that keeps
/// failing, so requests fail fast instead of queueing behind timeouts.
///
/// Metrics: `ledger_acquirer_request_seconds{operation}` (every call, answered or not),
/// `ledger_acquirer_errors_total{operation,kind}` (each failed attempt: `timeout`, `transport`, `5xx`,
/// `mismatch`; and `breaker_open` for calls refused by the breaker), `ledger_acquirer_breaker_state`
/// (0 closed, 1 half-open, 2 open).
public final class HTTPAcquirer: Acquirer {
    private let client: HTTPClient
    private let configuration: HTTPAcquirerConfiguration
    private let base: Mutex<String>
    private let breaker: Mutex<CircuitBreaker>
    /// Our authorization reference → the acquirer's psp reference, learned from answers. Bounded, forgotten one at a
    /// time (issue 57: emptied whole at its limit, every open payment's next modification paid an inquiry at once);
    /// a miss costs one status inquiry.
    private let pspReferences: Mutex<BoundedCache<String, String>>
    private let logger: Logger
    private let factory: any MetricsFactory
    private let breakerGauge: Gauge
    /// The breaker's clock (tests pass one they move by hand, so the cool-down is deterministic).
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(
        configuration: HTTPAcquirerConfiguration,
        logger: Logger,
        metricsFactory: any MetricsFactory,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        var http = HTTPClient.Configuration()
        http.timeout = .init(
            connect: .nanoseconds(Self.nanos(configuration.connectTimeout)),
            // Each attempt's own deadline bounds it (the read timeout, longer for a settlement); the
            // connection's idle-read limit is only the longest of them.
            read: .nanoseconds(Self.nanos(configuration.settlementTimeout))
        )
        http.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.maximumConnections)
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: http)
        self.configuration = configuration
        self.base = Mutex(configuration.baseURL)
        self.pspReferences = Mutex(BoundedCache(limit: configuration.rememberedReferences))
        self.breaker = Mutex(CircuitBreaker(failureThreshold: configuration.breakerThreshold, openFor: configuration.breakerOpenFor))
        self.logger = logger
        self.factory = metricsFactory
        self.breakerGauge = Gauge(label: "ledger_acquirer_breaker_state", factory: metricsFactory)
        self.now = now
        breakerGauge.record(0)
    }

    /// Where the service is now (a supervised child may come back on another port).
    public func setBaseURL(_ url: String) { base.withLock { $0 = url } }

    public var baseURL: String { base.withLock { $0 } }

    /// The remembered psp references' size and counts (`/metrics`: `ledger_cache_*{cache="acquirer_references"}`).
    public var referenceCacheStatistics: CacheStatistics { pspReferences.withLock { $0.statistics } }

    /// Closes the connections; call once, when the ledger stops.
    public func shutdown() async throws { try await client.shutdown() }

    // MARK: Acquirer

    public func authorize(_ request: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse {
        let body = AuthorisationBody(request)
        let response: AuthorizationResponse = try await call(
            "authorize",
            .POST,
            "/payments",
            body: body,
            key: "authorize:" + request.merchantReference
        ) { $0.merchantReference == request.merchantReference }
        if let psp = response.pspReference { remember(request.merchantReference, psp) }
        return response
    }

    public func increment(_ request: IncrementRequest) async throws(AcquirerError) -> ModificationResponse {
        try await modify("increment", "amountUpdates", request, request.authorizationReference, request.modificationReference)
    }

    public func capture(_ request: CaptureRequest) async throws(AcquirerError) -> ModificationResponse {
        try await modify("capture", "captures", request, request.authorizationReference, request.modificationReference)
    }

    public func reverse(_ request: ReversalRequest) async throws(AcquirerError) -> ModificationResponse {
        try await modify("reverse", "cancels", request, request.authorizationReference, request.modificationReference)
    }

    public func refund(_ request: RefundRequest) async throws(AcquirerError) -> ModificationResponse {
        try await modify("refund", "refunds", request, request.authorizationReference, request.modificationReference)
    }

    public func query(merchantReference: String) async throws(AcquirerError) -> PaymentQueryResult {
        let result: PaymentQueryResult = try await call(
            "query",
            .GET,
            "/payments?merchantReference=\(Self.escape(merchantReference))",
            body: NoContent?.none,
            key: nil
        ) { $0.merchantReference == merchantReference }
        remember(result)
        return result
    }

    /// `POST /payments/queries`, ``AcquirerWire/maximumQueryReferences`` references a request; each
    /// answer must name its reference, in order.
    public func query(merchantReferences: [String]) async throws(AcquirerError) -> [PaymentQueryResult] {
        var answers: [PaymentQueryResult] = []
        answers.reserveCapacity(merchantReferences.count)
        for start in stride(from: 0, to: merchantReferences.count, by: AcquirerWire.maximumQueryReferences) {
            let chunk = Array(merchantReferences[start..<min(merchantReferences.count, start + AcquirerWire.maximumQueryReferences)])
            let results: [PaymentQueryResult] = try await call(
                "queries",
                .POST,
                "/payments/queries",
                body: PaymentQueriesBody(merchantReferences: chunk),
                key: nil
            ) { results in
                results.count == chunk.count && zip(results, chunk).allSatisfy { result, reference in result.merchantReference == reference }
            }
            results.forEach(remember)
            answers += results
        }
        return answers
    }

    public func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt {
        let count = try await header.forEachPage(pages) { (page, index) throws(AcquirerError) in
            let reference = "\(Self.escape(header.batchReference))/pages/\(index)"
            let _: NoContent = try await call("batch_page", .PUT, "/settlement/batches/" + reference, body: page, key: nil) { _ in true }
        }
        return try await call(
            "submit_batch",
            .POST,
            "/settlement/batches",
            body: BatchSubmissionBody(header: header, pages: count),
            key: "batch:" + header.batchReference
        ) { $0.batchReference == header.batchReference }
    }

    public func reportLines(batchNumber: Int, from: Int, count: Int) async throws(AcquirerError) -> [SettlementReportLine] {
        try await call(
            "report_lines",
            .GET,
            "/settlement/reports/\(batchNumber)?from=\(from)&count=\(count)",
            body: NoContent?.none,
            key: nil
        ) { lines in lines.count <= count && lines.allSatisfy { $0.batchNumber == batchNumber } }
    }

    public func payout(batchNumber: Int) async throws(AcquirerError) -> PayoutNotice {
        try await call("payout", .GET, "/payouts/\(batchNumber)", body: NoContent?.none, key: nil) { $0.batchNumber == batchNumber }
    }

    public func disputeNotifications(after: Int, limit: Int) async throws(AcquirerError) -> [AcquirerDisputeNotification] {
        try await call(
            "dispute_notifications",
            .GET,
            "/disputes/notifications?after=\(after)&limit=\(limit)",
            body: NoContent?.none,
            key: nil
        ) { page in page.count <= limit && page.enumerated().allSatisfy { $1.sequence == after + $0 + 1 } }
    }

    // MARK: Modifications by psp reference

    private func modify<Body: Encodable & Sendable>(
        _ operation: String,
        _ path: String,
        _ body: Body,
        _ authorizationReference: String,
        _ modificationReference: String
    ) async throws(AcquirerError) -> ModificationResponse {
        let target: String
        if let psp = try await pspReference(of: authorizationReference) {
            target = "/payments/\(Self.escape(psp))/\(path)"
        } else if path == "cancels" {
            target = "/cancels"  // a technical cancel by our reference: the acquirer may not know the payment
        } else {
            throw AcquirerError(.unknownReference, reference: authorizationReference, "the acquirer knows no payment with this reference")
        }
        return try await call(operation, .POST, target, body: body, key: "\(operation):\(modificationReference)") {
            $0.modificationReference == modificationReference && $0.authorizationReference == authorizationReference
        }
    }

    private func pspReference(of merchantReference: String) async throws(AcquirerError) -> String? {
        if let known = pspReferences.withLock({ $0.get(merchantReference) }) { return known }
        if case .found(let details) = try await query(merchantReference: merchantReference), let psp = details.authorization.pspReference {
            remember(merchantReference, psp)
            return psp
        }
        return nil
    }

    private func remember(_ merchantReference: String, _ psp: String) {
        pspReferences.withLock { $0.put(merchantReference, psp) }
    }

    /// The psp reference a status answer names, remembered for its payment's next modification.
    private func remember(_ result: PaymentQueryResult) {
        if case .found(let details) = result, let psp = details.authorization.pspReference { remember(result.merchantReference, psp) }
    }

    // MARK: The call

    private enum Attempt {
        case answered(status: Int, body: Data)
        case failed(kind: String, detail: String)
    }

    /// One call: the breaker, then up to `attempts` attempts; `accept` checks a 2xx answer is about this request.
    private func call<Body: Encodable & Sendable, Answer: Decodable>(
        _ operation: String,
        _ method: HTTPMethod,
        _ path: String,
        body: Body?,
        key: String?,
        accept: (Answer) -> Bool
    ) async throws(AcquirerError) -> Answer {
        let started = ContinuousClock.now
        defer {
            Metrics.Timer(label: "ledger_acquirer_request_seconds", dimensions: [("operation", operation)], factory: factory)
                .recordNanoseconds(Self.nanos(ContinuousClock.now - started))
        }
        let permitted = breaker.withLock { $0.permit(at: now()) }
        updateGauge()
        guard permitted else {
            countError(operation, "breaker_open")
            throw AcquirerError(.unavailable, "the acquirer circuit breaker is open")
        }
        let payload: Data?
        do { payload = try body.map { try LedgerJSON.encode($0) } } catch {
            throw AcquirerError(.invalidRequest, "the request could not be encoded: \(error)")
        }
        var lastFailure = ""
        for attempt in 0..<configuration.attempts {
            if attempt > 0 {
                let pause = configuration.backoff * (1 << (attempt - 1))
                try? await Task.sleep(for: pause)
            }
            let deadline = operation == "submit_batch" ? configuration.settlementTimeout : configuration.readTimeout
            switch await send(method, path, payload, key: key, deadline: deadline) {
            case .failed(let kind, let detail):
                countError(operation, kind)
                lastFailure = "\(kind): \(detail)"
            case .answered(let status, let data) where status >= 500:
                countError(operation, "5xx")
                lastFailure = "HTTP \(status) \(String(decoding: data.prefix(200), as: UTF8.self))"
            case .answered(let status, let data) where (200..<300).contains(status):
                if let none = NoContent() as? Answer {
                    succeed()
                    return none
                }
                guard let answer = try? LedgerJSON.decode(Answer.self, from: data), accept(answer) else {
                    countError(operation, "mismatch")
                    lastFailure = "an answer that is not about this request"
                    continue
                }
                succeed()
                return answer
            case .answered(let status, let data):
                succeed()  // a refusal is an answer: the acquirer is up
                if let refusal = try? LedgerJSON.decode(AcquirerWireError.self, from: data) { throw refusal.acquirerError }
                throw AcquirerError(.invalidRequest, "the acquirer answered HTTP \(status)")
            }
        }
        breaker.withLock { $0.recordFailure(at: now()) }
        updateGauge()
        logger.warning(
            "acquirer call not confirmed",
            metadata: ["operation": "\(operation)", "attempts": "\(configuration.attempts)", "last": "\(lastFailure)"]
        )
        throw AcquirerError(.unavailable, "the acquirer did not confirm \(operation) after \(configuration.attempts) attempts (\(lastFailure))")
    }

    private func send(_ method: HTTPMethod, _ path: String, _ payload: Data?, key: String?, deadline: Duration) async -> Attempt {
        var request = HTTPClientRequest(url: baseURL + "/" + AcquirerWire.version + path)
        request.method = method
        request.headers.add(name: AcquirerWire.apiKeyHeader, value: configuration.apiKey)
        if let key { request.headers.add(name: AcquirerWire.idempotencyKeyHeader, value: key) }
        if let payload {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: payload))
        }
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(Self.nanos(deadline)), logger: logger)
            let buffer = try await response.body.collect(upTo: 256 << 20)
            return .answered(status: Int(response.status.code), body: Data(buffer.readableBytesView))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failed(kind: "timeout", detail: "\(error)")
        } catch {
            return .failed(kind: "transport", detail: "\(error)")
        }
    }

    private func succeed() {
        breaker.withLock { $0.recordSuccess() }
        updateGauge()
    }

    private func updateGauge() {
        breakerGauge.record(breaker.withLock { $0.state.rawValue })
    }

    private func countError(_ operation: String, _ kind: String) {
        Counter(label: "ledger_acquirer_errors_total", dimensions: [("operation", operation), ("kind", kind)], factory: factory).increment()
    }

    static func nanos(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Percent-encodes a path segment or query value (references are ours, but never trust them to be URL-safe).
    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(Character(UnicodeScalar(byte)))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded()
            }
        }
        return out
    }
}

/// The answer of a request whose success carries no body (204).
struct NoContent: Codable, Sendable {}

extension String {
    fileprivate func leftPadded() -> String { count == 1 ? "0" + self : self }
}
