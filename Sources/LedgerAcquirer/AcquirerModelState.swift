import LedgerCore

import struct Foundation.Data
import struct Foundation.Date

/// The whole acquirer model as a pure value: configuration, seed, generator, counters, card accounts,
/// holds, modifications and settled batches.
///
/// Every operation is `mutating`, takes the current time explicitly and either applies completely
/// or throws without changing anything (validation happens before the first write). Lazily, each
/// operation first expires the holds whose lifetime has passed at `now` (``expireHolds(now:)``), so
/// an expiry is applied exactly once whatever the order of calls. Nothing here reads a clock, a
/// system random source or a dictionary's iteration order: the state and every output are a pure
/// function of (seed, configuration, commands, times).
public struct AcquirerModelState: Hashable, Sendable, Codable {
    public let seed: UInt64
    public let configuration: AcquirerModelConfiguration
    var random: SeededRandom
    var counters = Counters()
    /// Issuer-side card accounts, by account key (see `ResolvedCard.accountKey`).
    var accounts: [String: CardAccount] = [:]
    /// Placed holds, by our authorization (merchant) reference (a ``ReferenceTable``, as the two below).
    var holds: ReferenceTable<Hold> = [:]
    /// Declined authorizations, by merchant reference, kept for idempotent retries and queries.
    var declined: ReferenceTable<StoredAuthorization> = [:]
    /// Modifications by our modification reference.
    var modifications: ReferenceTable<StoredModification> = [:]
    /// References of holds whose status is open, in authorization order, with their queue by expiry (``OpenHolds``).
    var openHolds = OpenHolds()
    /// No open hold expires before this (nil: none open). Lets every operation skip the expiry pass
    /// in O(1) instead of scanning all open holds; derived from the holds, so it is deterministic.
    var nextExpiry: Date?
    /// Settled batches, oldest first.
    var batches: [StoredBatch] = []
    /// Lines the move-to-next-batch fault holds back for the next batch.
    var carriedOver: [CarriedLine] = []
    /// Every fault injected so far.
    public internal(set) var injectedFaults: [InjectedFault] = []
    /// The disputes decided at settlement, in feed order (nil until the first: a snapshot without
    /// disputes keeps its bytes).
    var disputeFeed: [ModelDispute]?

    public init(seed: UInt64, configuration: AcquirerModelConfiguration = AcquirerModelConfiguration()) {
        self.seed = seed
        self.configuration = configuration
        // The fault generator is keyed off the seed, independent of the identifier keys.
        self.random = SeededRandom(seed: SeededRandom.mix(seed ^ 0x4641_554C_5453_0000))
    }

    // MARK: Snapshot

    // The snapshot (canonical bytes, restorable) is AcquirerModelState+Snapshot.swift.

    // MARK: Reading

    /// The remaining open-to-buy of a test card (its limit when it was never used).
    public func openToBuy(token: String) -> Money {
        let key = "token:" + token
        if let account = accounts[key] { return account.available }
        return configuration.creditLimit(forAccount: key)
    }

    /// The balance of a placed hold, or `nil` when no hold exists under that reference.
    public func balance(of merchantReference: String) -> HoldBalance? {
        holds[merchantReference]?.balance
    }

    /// Every violated invariant, as text (empty when all hold): per hold the accounting identity,
    /// non-negative parts, refunded ≤ captured and status consistency; per card account
    /// used = Σ (open + captured − refunded) of its holds and 0 ≤ used ≤ limit.
    public func invariantViolations() -> [String] {
        var problems: [String] = []
        var usedByAccount: [String: Int64] = [:]
        for (reference, hold) in holds {
            let b = hold.balance
            if !b.satisfiesIdentity { problems.append("\(reference): identity broken \(b)") }
            if (hold.open > 0) != (hold.status == .open) { problems.append("\(reference): open \(hold.open) with status \(hold.status)") }
            if hold.expired > 0 && hold.status != .expired { problems.append("\(reference): expired amount without expiry") }
            if (hold.status == .open) != openHolds.contains(reference) { problems.append("\(reference): open-hold index out of step") }
            usedByAccount[hold.accountKey, default: 0] += hold.open + hold.captured - hold.refunded
        }
        for (key, account) in accounts {
            let expected = usedByAccount[key] ?? 0
            if account.used != expected { problems.append("\(key): open-to-buy used \(account.used) ≠ holds' \(expected)") }
            if account.used < 0 || account.used > account.limit.minorUnits { problems.append("\(key): used \(account.used) outside 0…limit") }
        }
        for key in usedByAccount.keys where accounts[key] == nil { problems.append("\(key): holds without an account") }
        for reference in openHolds.references where holds[reference] == nil { problems.append("\(reference): open-hold index without its hold") }
        return problems.sorted()
    }

    // MARK: Expiry

    /// True when an operation at `now` would first expire at least one hold (a state change even for a query).
    public func expiryDue(at now: Date) -> Bool {
        guard let next = nextExpiry else { return false }
        return next <= now
    }

    /// The acquirer's reference of the payment authorized under our `merchantReference` (placed or declined).
    public func pspReference(of merchantReference: String) -> String? {
        holds[merchantReference]?.pspReference ?? declined[merchantReference]?.response.pspReference
    }

    /// Releases every open hold whose expiry time is at or before `now`: its open amount moves to
    /// `expired` and back to the card's open-to-buy. Applied once per hold (the hold leaves the
    /// open index), so calling it again, or with an earlier time, changes nothing.
    public mutating func expireHolds(now: Date) {
        guard let next = nextExpiry, next <= now else { return }
        for reference in openHolds.removeDue(at: now) {
            guard var hold = holds[reference] else { continue }
            accounts[hold.accountKey]?.used -= hold.open
            hold.expired += hold.open
            hold.open = 0
            hold.status = .expired
            holds[reference] = hold
        }
        nextExpiry = openHolds.earliestExpiry()
    }

    // MARK: Authorization

    /// Authorizes `request` at `now`. Idempotent by merchant reference: the same request again returns
    /// the first answer and consumes nothing; a different request under a used reference throws
    /// `duplicateReference`. A 91/96 card answers with an unknown outcome and (by default) places nothing.
    public mutating func authorize(_ request: AuthorizationRequest, now: Date) throws(AcquirerError) -> AuthorizationResponse {
        try authorize(command(for: request, now: now), now: now)
    }

    /// The authorization `request` stands for at `now`, its payment method resolved to the card the
    /// issuer side sees (no card number): what a durable acquirer records, so that replaying it at the
    /// same time gives the same answer.
    public func command(for request: AuthorizationRequest, now: Date) -> AuthorizationCommand {
        let today = configuration.cutOff.timeZone.localDayAndSecond(of: now).day
        return AuthorizationCommand(
            merchantReference: request.merchantReference,
            amount: request.amount,
            card: ResolvedCard.resolve(request.paymentMethod, cards: configuration.testCards, today: today),
            captureIntent: request.captureIntent,
            initiator: request.initiator,
            authorizationType: request.authorizationType
        )
    }

    /// Authorizes a resolved ``AuthorizationCommand`` at `now` (see ``authorize(_:now:)``).
    public mutating func authorize(_ request: AuthorizationCommand, now: Date) throws(AcquirerError) -> AuthorizationResponse {
        expireHolds(now: now)
        let reference = request.merchantReference
        try AcquirerReferences.check(merchant: reference)
        guard request.amount.minorUnits > 0 else {
            throw AcquirerError(.invalidAmount, reference: reference, "authorization amount must be positive")
        }
        let card = request.card
        let summary = AuthorizationSummary(request: request, accountKey: card.accountKey)

        if let hold = holds[reference] {
            guard hold.summary == summary else { throw duplicate(reference) }
            return hold.response
        }
        if let stored = declined[reference] {
            guard stored.summary == summary else { throw duplicate(reference) }
            return stored.response
        }
        if request.captureIntent == .immediate, modifications[reference] != nil {
            // The immediate capture is recorded under the merchant reference; it must be free.
            throw duplicate(reference)
        }

        let answerLost = card.issuerResponse.isUnknownOutcome && configuration.unknownOutcome == .placedButAnswerLost
        var code = answerLost ? ResponseCode.approved : card.issuerResponse
        let account = accounts[card.accountKey] ?? CardAccount(limit: configuration.creditLimit(forAccount: card.accountKey))
        if code.isApproved {
            if account.limit.currency != request.amount.currency {
                code = .transactionNotPermitted
            } else if request.amount.minorUnits > account.available.minorUnits {
                code = .insufficientFunds
            }
        }

        if code.isUnknownOutcome {
            // Nothing was placed and nothing is remembered: a query says "not found", and a retry
            // asks the issuer again (which, for this card, answers the same).
            return AuthorizationResponse(
                merchantReference: reference,
                pspReference: nil,
                responseCode: code,
                authCode: nil,
                amount: request.amount,
                holdExpiresAt: nil,
                network: card.network,
                fundingType: card.fundingType,
                lastFour: card.lastFour,
                processedAt: now
            )
        }

        counters.payment += 1
        let pspReference = DerivedIdentifier.pspReference.hex(seed: seed, counter: counters.payment)
        guard code.isApproved else {
            let response = AuthorizationResponse(
                merchantReference: reference,
                pspReference: pspReference,
                responseCode: code,
                authCode: nil,
                amount: request.amount,
                holdExpiresAt: nil,
                network: card.network,
                fundingType: card.fundingType,
                lastFour: card.lastFour,
                processedAt: now
            )
            declined[reference] = StoredAuthorization(summary: summary, response: response)
            return response
        }

        let lifetime = configuration.holdLifetime(network: card.network, initiator: request.initiator, type: request.authorizationType)
        let expiresAt = now.addingTimeInterval(Double(lifetime))
        var response = AuthorizationResponse(
            merchantReference: reference,
            pspReference: pspReference,
            responseCode: .approved,
            authCode: DerivedIdentifier.authCode.authCode(seed: seed, counter: counters.payment),
            amount: request.amount,
            holdExpiresAt: expiresAt,
            network: card.network,
            fundingType: card.fundingType,
            lastFour: card.lastFour,
            processedAt: now
        )
        var newAccount = account
        newAccount.used += request.amount.minorUnits
        accounts[card.accountKey] = newAccount
        holds[reference] = Hold(
            HoldFields(
                summary: summary,
                response: response,
                pspReference: pspReference,
                accountKey: card.accountKey,
                network: card.network ?? .visa,
                fundingType: card.fundingType ?? .credit,
                currency: request.amount.currency,
                authorizedAt: now,
                expiresAt: expiresAt,
                authorized: request.amount.minorUnits,
                open: request.amount.minorUnits
            )
        )
        openHolds.insert(reference, expiresAt: expiresAt)
        nextExpiry = min(nextExpiry ?? expiresAt, expiresAt)

        if request.captureIntent == .immediate {
            // A sale: capture everything at once, under the merchant reference as modification reference.
            let capture = CaptureRequest(
                authorizationReference: reference,
                modificationReference: reference,
                amount: request.amount,
                isFinal: true
            )
            response.immediateCapture = try self.capture(capture, now: now)
        }
        holds[reference]?.response = response

        if answerLost {
            var lost = response
            lost.responseCode = card.issuerResponse
            lost.pspReference = nil
            lost.authCode = nil
            lost.holdExpiresAt = nil
            lost.immediateCapture = nil
            return lost
        }
        return response
    }

    /// What the model knows about `merchantReference` at `now`.
    public mutating func query(merchantReference: String, now: Date) -> PaymentQueryResult {
        expireHolds(now: now)
        if let hold = holds[merchantReference] {
            let history = hold.modificationReferences.compactMap { modifications[$0]?.response }
            return .found(
                PaymentDetails(
                    authorization: hold.response,
                    status: hold.status,
                    balance: hold.balance,
                    modifications: history
                )
            )
        }
        if let stored = declined[merchantReference] {
            return .found(PaymentDetails(authorization: stored.response, status: .declined, balance: nil, modifications: []))
        }
        return .notFound(merchantReference: merchantReference)
    }

    // MARK: Modifications

    /// Incremental authorization: approved when the hold is open and the card's open-to-buy covers
    /// `amount`, else declined with 51 (recorded, nothing changes).
    public mutating func increment(_ request: IncrementRequest, now: Date) throws(AcquirerError) -> ModificationResponse {
        let record = ModificationRecord(
            kind: .increment,
            authorizationReference: request.authorizationReference,
            modificationReference: request.modificationReference,
            amount: request.amount,
            isFinal: false
        )
        return try modify(record, now: now) { hold, account, amount throws(AcquirerError) in
            try Self.requireOpen(hold)
            guard amount <= account.available.minorUnits else { return .insufficientFunds }
            hold.incremented += amount
            hold.open += amount
            account.used += amount
            return .approved
        }
    }

    /// Captures `amount` of the open amount. A final capture releases the remainder (counted as reversed).
    public mutating func capture(_ request: CaptureRequest, now: Date) throws(AcquirerError) -> ModificationResponse {
        let record = ModificationRecord(
            kind: .capture,
            authorizationReference: request.authorizationReference,
            modificationReference: request.modificationReference,
            amount: request.amount,
            isFinal: request.isFinal
        )
        return try modify(record, now: now) { hold, account, amount throws(AcquirerError) in
            try Self.requireOpen(hold)
            guard amount <= hold.open else {
                throw AcquirerError(
                    .amountExceedsOpen,
                    reference: request.authorizationReference,
                    "capture of \(amount) exceeds open \(hold.open) minor units"
                )
            }
            hold.captured += amount
            hold.open -= amount
            if request.isFinal {
                account.used -= hold.open
                hold.reversed += hold.open
                hold.open = 0
            }
            return .approved
        }
    }

    /// Reverses `amount` (or, when `nil`, all) of the open amount and gives it back to the card.
    public mutating func reverse(_ request: ReversalRequest, now: Date) throws(AcquirerError) -> ModificationResponse {
        let record = ModificationRecord(
            kind: .reversal,
            authorizationReference: request.authorizationReference,
            modificationReference: request.modificationReference,
            amount: request.amount,
            isFinal: false
        )
        return try modify(record, now: now) { hold, account, amount throws(AcquirerError) in
            try Self.requireOpen(hold)
            guard amount <= hold.open else {
                throw AcquirerError(
                    .amountExceedsOpen,
                    reference: request.authorizationReference,
                    "reversal of \(amount) exceeds open \(hold.open) minor units"
                )
            }
            hold.reversed += amount
            hold.open -= amount
            account.used -= amount
            return .approved
        }
    }

    /// Refunds `amount` of what was captured and not yet refunded (on any hold status, also after
    /// expiry or closure). The refund restores the card's open-to-buy.
    public mutating func refund(_ request: RefundRequest, now: Date) throws(AcquirerError) -> ModificationResponse {
        let record = ModificationRecord(
            kind: .refund,
            authorizationReference: request.authorizationReference,
            modificationReference: request.modificationReference,
            amount: request.amount,
            isFinal: false
        )
        // A raised chargeback already returned its amount to the cardholder: it is not refundable.
        let chargedBack = chargedBack(request.authorizationReference, at: now)
        return try modify(record, now: now) { hold, account, amount throws(AcquirerError) in
            guard amount <= hold.captured - hold.refunded - chargedBack else {
                throw AcquirerError(
                    .refundExceedsCaptured,
                    reference: request.authorizationReference,
                    "refund of \(amount) exceeds captured − refunded − charged back "
                        + "\(hold.captured - hold.refunded - chargedBack) minor units"
                )
            }
            hold.refunded += amount
            account.used -= amount
            return .approved
        }
    }

    /// The shared frame of every modification: expiry, idempotency, lookups and checks, then `apply`
    /// on copies that are written back only if it returns (so a throw changes nothing).
    /// `apply` gets the amount in minor units (for a full reversal, the open amount) and returns the
    /// response code; a non-approved code leaves hold and account as they were.
    private mutating func modify(
        _ record: ModificationRecord,
        now: Date,
        apply: (inout Hold, inout CardAccount, Int64) throws(AcquirerError) -> ResponseCode
    ) throws(AcquirerError) -> ModificationResponse {
        expireHolds(now: now)
        let reference = record.authorizationReference
        try AcquirerReferences.check(authorization: reference, modification: record.modificationReference)
        if let existing = modifications[record.modificationReference] {
            guard existing.record == record else { throw duplicate(record.modificationReference) }
            return existing.response
        }
        guard let original = holds[reference] else {
            if declined[reference] != nil {
                throw AcquirerError(.notAuthorized, reference: reference, "the authorization was declined; no hold exists")
            }
            throw AcquirerError(.unknownReference, reference: reference, "no authorization with this reference")
        }
        if let amount = record.amount {
            guard amount.currency == original.currency else {
                throw AcquirerError(
                    .currencyMismatch,
                    reference: reference,
                    "\(amount.currency.code) on a \(original.currency.code) hold"
                )
            }
            guard amount.minorUnits > 0 else { throw AcquirerError(.invalidAmount, reference: reference, "amount must be positive") }
        }
        guard var account = accounts[original.accountKey] else {
            throw AcquirerError(.unknownReference, reference: reference, "the hold's card account is missing")
        }
        var hold = original
        let amount = record.amount?.minorUnits ?? original.open
        let code = try apply(&hold, &account, amount)
        if !code.isApproved {
            hold = original
            account = accounts[original.accountKey] ?? account
        }
        if hold.open == 0 && hold.status == .open {
            hold.status = .closed
            openHolds.remove(reference)
        }
        counters.modification += 1
        let response = ModificationResponse(
            kind: record.kind,
            authorizationReference: reference,
            modificationReference: record.modificationReference,
            pspReference: original.pspReference,
            modificationPSPReference: DerivedIdentifier.modificationReference.hex(seed: seed, counter: counters.modification),
            responseCode: code,
            amount: Money(minorUnits: amount, currency: original.currency),
            isFinal: record.isFinal,
            processedAt: now,
            balance: hold.balance,
            released: record.kind == .capture && record.isFinal && code.isApproved
                ? Money(minorUnits: original.open - amount, currency: original.currency) : nil
        )
        hold.modificationReferences.append(record.modificationReference)
        holds[reference] = hold
        accounts[original.accountKey] = account
        modifications[record.modificationReference] = StoredModification(StoredModificationFields(record: record, response: response))
        return response
    }

    private static func requireOpen(_ hold: Hold) throws(AcquirerError) {
        switch hold.status {
        case .open: return
        case .expired:
            throw AcquirerError(.holdExpired, reference: hold.summary.merchantReference, "the hold expired at \(hold.expiresAt)")
        case .closed, .declined:
            throw AcquirerError(.holdClosed, reference: hold.summary.merchantReference, "nothing is open on this hold")
        }
    }

    private func duplicate(_ reference: String) -> AcquirerError {
        AcquirerError(.duplicateReference, reference: reference, "reference already used for a different request")
    }
}

// MARK: - Stored records

/// Counters the identifiers are derived from.
struct Counters: Hashable, Sendable, Codable {
    var payment: UInt64 = 0
    var modification: UInt64 = 0
    var batch: UInt64 = 0
    var payout: UInt64 = 0
}

/// An issuer-side card account: `used` is what holds, captures not yet refunded consume.
struct CardAccount: Hashable, Sendable, Codable {
    var limit: Money
    var used: Int64 = 0

    var available: Money { Money(minorUnits: limit.minorUnits - used, currency: limit.currency) }
}

/// What makes two authorization requests "the same" for idempotency. Carries the account key,
/// never a card number, because it is persisted in snapshots.
struct AuthorizationSummary: Hashable, Sendable, Codable {
    var merchantReference: String
    var amount: Money
    var accountKey: String
    var captureIntent: CaptureIntent
    var initiator: TransactionInitiator
    var authorizationType: AuthorizationType

    init(request: AuthorizationCommand, accountKey: String) {
        merchantReference = request.merchantReference
        amount = request.amount
        self.accountKey = accountKey
        captureIntent = request.captureIntent
        initiator = request.initiator
        authorizationType = request.authorizationType
    }
}

struct StoredAuthorization: Hashable, Sendable, Codable {
    var summary: AuthorizationSummary
    var response: AuthorizationResponse
}

/// A placed hold, its fields behind one reference (see ``CopyOnWrite``).
typealias Hold = CopyOnWrite<HoldFields>

/// A placed hold; amounts in minor units of `currency`. `open` is kept, not derived, so that the
/// accounting identity is a checked invariant rather than a tautology.
struct HoldFields: Hashable, Sendable, Codable {
    var summary: AuthorizationSummary
    var response: AuthorizationResponse
    var pspReference: String
    var accountKey: String
    var network: CardNetwork
    var fundingType: FundingType
    var currency: Currency
    var authorizedAt: Date
    var expiresAt: Date
    var authorized: Int64
    var incremented: Int64 = 0
    var captured: Int64 = 0
    var reversed: Int64 = 0
    var expired: Int64 = 0
    var open: Int64
    var refunded: Int64 = 0
    var status: PaymentStatus = .open
    var modificationReferences: [String] = []

    var balance: HoldBalance {
        func m(_ units: Int64) -> Money { Money(minorUnits: units, currency: currency) }
        return HoldBalance(
            authorized: m(authorized),
            incremented: m(incremented),
            captured: m(captured),
            reversed: m(reversed),
            expired: m(expired),
            open: m(open),
            refunded: m(refunded)
        )
    }
}

/// A modification request as remembered for idempotency (all four kinds in one shape).
struct ModificationRecord: Hashable, Sendable, Codable {
    var kind: ModificationKind
    var authorizationReference: String
    var modificationReference: String
    var amount: Money?
    var isFinal: Bool
}

/// A modification as remembered, its fields behind one reference (see ``CopyOnWrite``).
typealias StoredModification = CopyOnWrite<StoredModificationFields>

struct StoredModificationFields: Hashable, Sendable, Codable {
    var record: ModificationRecord
    var response: ModificationResponse
    /// The batch a capture or refund was settled in (nil while unsettled).
    var settledInBatch: Int?
    /// True while the move-to-next-batch fault holds its line back.
    var carriedOver = false
}

/// A settled batch: its request as a fingerprint (to answer a repeated submission the same way and
/// refuse a different one under the same reference) and its report — with its lines, unless they are
/// kept outside the state (the acquirer service's tables), when `releasedLineCount` says how many.
struct StoredBatch: Hashable, Sendable, Codable {
    var header: SettlementBatchHeader
    var itemCount: Int
    var itemsFingerprint: UInt64
    var report: SettlementReport
    /// nil: `report.lines` is the whole report; else the report's line count, its lines kept elsewhere.
    var releasedLineCount: Int?

    /// The answer to the batch's submission.
    var receipt: SettlementReceipt {
        var receipt = SettlementReceipt(report)
        if let releasedLineCount { receipt.lineCount = releasedLineCount }
        return receipt
    }

    /// The FNV-1a offset basis: the fingerprint of no items.
    static let fingerprintBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// FNV-1a (64-bit) over each item's kind, references, amount and currency, in order; continued
    /// from `hash` (the fingerprint of the items before them), so pages fingerprint as one list does.
    static func fingerprint(_ items: [SettlementItem], from hash: UInt64 = fingerprintBasis) -> UInt64 {
        var hash = hash
        for item in items {
            for byte
                in "\(item.kind.rawValue)|\(item.authorizationReference)|\(item.modificationReference)|\(item.amount.minorUnits)|\(item.amount.currency.code)\n"
                .utf8
            {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }
        return hash
    }
}

/// A line held back by the move-to-next-batch fault.
struct CarriedLine: Hashable, Sendable, Codable {
    var modificationReference: String
    var line: SettlementReportLine
}
