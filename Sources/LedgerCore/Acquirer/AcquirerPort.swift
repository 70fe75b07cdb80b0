import LedgerMacros

import struct Foundation.Date

// MARK: - The interface

/// The card-acquiring side of the ledger: acquirer + network + issuer as one service.
///
/// A real acquirer adapter and the deterministic acquirer model (`LedgerAcquirer.AcquirerModel`)
/// both implement it, so the payment and settlement services never know which one they talk to.
///
/// Every operation is keyed by references *we* choose (the merchant reference of an authorization,
/// the modification reference of a capture/refund/…, the batch reference), so that a request can be
/// retried after a crash or timeout without being applied twice: the same reference with the same
/// request returns the original answer; the same reference with a different request is refused.
///
/// Declines are answers, not errors: an authorization the issuer refused returns a response whose
/// ``ResponseCode`` is not approved. Errors (``AcquirerError``) are operations the acquirer refuses
/// to process at all: capturing more than is open, touching an expired hold, an unknown reference, …
public protocol Acquirer: Sendable {
    /// Asks the issuer to approve and hold `request.amount`.
    func authorize(_ request: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse
    /// Incremental authorization: asks the issuer to add to an open hold. May be declined.
    func increment(_ request: IncrementRequest) async throws(AcquirerError) -> ModificationResponse
    /// Captures part or all of an open hold; a final capture releases the remainder.
    func capture(_ request: CaptureRequest) async throws(AcquirerError) -> ModificationResponse
    /// Voids / reverses part or all of the open amount of a hold.
    func reverse(_ request: ReversalRequest) async throws(AcquirerError) -> ModificationResponse
    /// Returns captured money to the cardholder (never more than captured − already refunded).
    func refund(_ request: RefundRequest) async throws(AcquirerError) -> ModificationResponse
    /// What the acquirer knows about an authorization we sent with `merchantReference`: used to resolve
    /// payments left pending by a crash or by an unknown outcome (91/96).
    func query(merchantReference: String) async throws(AcquirerError) -> PaymentQueryResult
    /// ``query(merchantReference:)`` for each of `merchantReferences`, the answers in their order: the
    /// expiry sweep asks about a page of due holds at once (issue 57: one request per hold was, during a
    /// day at the machine's maximum, as much work as the payments themselves). An adapter answers in as
    /// few requests as its acquirer allows; the default asks one at a time.
    func query(merchantReferences: [String]) async throws(AcquirerError) -> [PaymentQueryResult]
    /// Submits a batch of the day's captures and refunds for settlement, its items in pages: the
    /// acquirer asks for page 0, 1, … (each once, in order) until `pages` returns nil — as a settlement file is uploaded in
    /// parts, so that neither side needs a whole batch in memory. Idempotent by the batch reference
    /// (the same items again get the same receipt). The report's lines are then read in pages with
    /// ``reportLines(batchNumber:from:count:)``.
    func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt
    /// Lines `from ..< from + count` of a settled batch's report (the MerchantPayout line is the last);
    /// fewer, or none, past its end.
    func reportLines(batchNumber: Int, from: Int, count: Int) async throws(AcquirerError) -> [SettlementReportLine]
    /// The bank deposit (payout) for a settled batch.
    func payout(batchNumber: Int) async throws(AcquirerError) -> PayoutNotice
    /// The acquirer's dispute notifications after feed position `after` (0: from the start), at most
    /// `limit`, in feed order. The feed only grows: a notification keeps its position for ever, so a
    /// reader that remembers the last position it recorded reads each notification at least once.
    func disputeNotifications(after: Int, limit: Int) async throws(AcquirerError) -> [AcquirerDisputeNotification]
}

extension Acquirer {
    public func query(merchantReferences: [String]) async throws(AcquirerError) -> [PaymentQueryResult] {
        var answers: [PaymentQueryResult] = []
        answers.reserveCapacity(merchantReferences.count)
        for reference in merchantReferences { answers.append(try await query(merchantReference: reference)) }
        return answers
    }
}

// MARK: - Errors

/// An operation the acquirer refused to process (as opposed to a decline, which is an answer).
///
/// A struct with an open set of codes (the ServiceRunnerError pattern), so adapters can add codes
/// without breaking exhaustive switches; the ledger maps codes to its own errors in one place.
public struct AcquirerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of refusal this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case unknownReference, duplicateReference, currencyMismatch, invalidAmount, amountExceedsOpen
            case holdClosed, holdExpired, notAuthorized, refundExceedsCaptured, alreadySettled
            case settlementMismatch, unknownBatch, invalidRequest, unavailable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The code named `name` (its ``description``), as an adapter reads it back off the wire.
        public init?(name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.base = base
        }

        /// No authorization, modification or batch with that reference.
        public static let unknownReference = Code(.unknownReference)
        /// The reference was already used for a different request (idempotency conflict).
        public static let duplicateReference = Code(.duplicateReference)
        /// The amount's currency differs from the hold's or the batch's.
        public static let currencyMismatch = Code(.currencyMismatch)
        /// Zero, negative or otherwise unusable amount.
        public static let invalidAmount = Code(.invalidAmount)
        /// Capture or reversal above the hold's open amount.
        public static let amountExceedsOpen = Code(.amountExceedsOpen)
        /// The hold is fully captured, final-captured or fully reversed.
        public static let holdClosed = Code(.holdClosed)
        /// The hold's lifetime has passed.
        public static let holdExpired = Code(.holdExpired)
        /// The authorization was declined; there is no hold to modify.
        public static let notAuthorized = Code(.notAuthorized)
        /// Refund above captured − already refunded.
        public static let refundExceedsCaptured = Code(.refundExceedsCaptured)
        /// The capture or refund was already settled in an earlier batch.
        public static let alreadySettled = Code(.alreadySettled)
        /// A batch item does not match what the acquirer recorded (kind, amount, hold).
        public static let settlementMismatch = Code(.settlementMismatch)
        /// No settled batch with that number.
        public static let unknownBatch = Code(.unknownBatch)
        /// The request is malformed (e.g. an empty reference).
        public static let invalidRequest = Code(.invalidRequest)
        /// The acquirer could not be reached (adapters only); the outcome is unknown.
        public static let unavailable = Code(.unavailable)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The reference the refusal is about, when there is one.
    public let reference: String?
    /// Human-readable detail for logs; never shown to shoppers verbatim.
    public let message: String

    public init(_ code: Code, reference: String? = nil, _ message: String) {
        self.code = code
        self.reference = reference
        self.message = message
    }

    public var description: String {
        "AcquirerError.\(code)" + (reference.map { " [\($0)]" } ?? "") + ": \(message)"
    }
}
