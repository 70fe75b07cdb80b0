import LedgerMacros

import struct Foundation.Date
import struct Foundation.TimeInterval

// The dispute lifecycle: one stream per dispute (`dispute-<id>`), decided by
// ``DisputeDecider`` from the dispute's state, a command and an injected clock. A dispute is raised
// by the card network through the acquirer (an inquiry / retrieval request, or a chargeback), the
// merchant defends with references to evidence kept elsewhere (never documents in the log), the
// acquirer re-presents, the issuer may go to pre-arbitration and charge back a second time, and it
// ends accepted, won or lost. Each network's deadlines are in ``DisputeDeadlines`` (docs/disputes.md).
//
// Money: the dispute's amount leaves the merchant at the chargeback and at a second chargeback, and
// comes back at a reversal (and when a dispute whose funds are debited is won). ``DisputeState``
// keeps `debited`, so the amount is never debited twice without a credit between, nor credited
// without a debit: a dispute's net effect is 0 or −amount, whatever its path.

// MARK: - Reason codes and deadlines

/// A network's reason code for a dispute, e.g. Visa `10.4`, Mastercard `4837`.
@MemberwiseInit
public struct DisputeReason: Hashable, Sendable, Codable {
    public var network: CardNetwork
    public var code: String

    /// Whether the network lists the code (``DisputeReason/known``).
    public var isKnown: Bool { Self.known[self] != nil }

    /// The network's description of the code, when known.
    public var title: String? { Self.known[self]?.title }

    /// Whether the code is a fraud dispute (the cardholder denies the transaction).
    public var isFraud: Bool { Self.known[self]?.fraud ?? false }

    /// The reason codes the ledger knows, with their titles (Visa Claims Resolution; Mastercard chargeback guide).
    public static let known: [DisputeReason: (title: String, fraud: Bool)] = [
        DisputeReason(network: .visa, code: "10.4"): ("Other Fraud – Card-Absent Environment", true),
        DisputeReason(network: .visa, code: "13.1"): ("Merchandise / Services Not Received", false),
        DisputeReason(network: .visa, code: "13.3"): ("Not as Described or Defective Merchandise / Services", false),
        DisputeReason(network: .mastercard, code: "4837"): ("No Cardholder Authorization", true),
        DisputeReason(network: .mastercard, code: "4853"): ("Cardholder Dispute", false),
        DisputeReason(network: .mastercard, code: "4863"): ("Cardholder Does Not Recognize – Potential Fraud", true),
    ]

    public static let visaFraudCardAbsent = DisputeReason(network: .visa, code: "10.4")
    public static let visaNotReceived = DisputeReason(network: .visa, code: "13.1")
    public static let mastercardNoAuthorization = DisputeReason(network: .mastercard, code: "4837")
    public static let mastercardCardholderDispute = DisputeReason(network: .mastercard, code: "4853")
}

/// How long the merchant has to answer each stage, per network, in calendar days from the stage's
/// raising (docs/disputes.md gives the sources). The ledger refuses an answer after its deadline.
@MemberwiseInit
public struct DisputeDeadlines: Hashable, Sendable {
    /// To answer an inquiry / retrieval request.
    public var inquiryDays: Int
    /// To defend a chargeback (the evidence for the second presentment).
    public var defenseDays: Int
    /// To answer a pre-arbitration (or a second chargeback).
    public var preArbitrationDays: Int

    /// The network's deadlines. Amex and Discover are given Visa's (the ledger's acquirer does not
    /// raise disputes on them).
    public static func of(_ network: CardNetwork) -> DisputeDeadlines {
        switch network {
        case .mastercard: DisputeDeadlines(inquiryDays: 30, defenseDays: 45, preArbitrationDays: 30)
        case .visa, .amex, .discover: DisputeDeadlines(inquiryDays: 30, defenseDays: 30, preArbitrationDays: 30)
        }
    }

    /// `days` calendar days after `date`.
    static func adding(_ days: Int, to date: Date) -> Date { date.addingTimeInterval(TimeInterval(days) * 86_400) }
}

// MARK: - Events

/// The network raised an inquiry (Visa: request for copy; Mastercard: retrieval request): no money moves yet.
@MemberwiseInit
public struct DisputeInquiryRaised: LedgerEventPayload {
    public static let eventType = "DisputeInquiryRaised"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.disputeInquiryRaised

    public var disputeID: String
    public var orderID: OrderID
    /// The acquirer's reference of the disputed payment (the capture's).
    public var pspReference: String
    public var reason: DisputeReason
    @DecimalMoney public var amount: Money
    @LedgerTimestamp public var raisedAt: Date
    @LedgerTimestamp public var dueAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case orderID = "order_id"
        case pspReference = "psp_reference"
        case reason, amount
        case raisedAt = "raised_at"
        case dueAt = "due_at"
    }
}

/// The issuer charged the payment back: the amount is debited from the merchant.
@MemberwiseInit
public struct ChargebackReceived: LedgerEventPayload {
    public static let eventType = "ChargebackReceived"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.chargebackReceived

    public var disputeID: String
    public var orderID: OrderID
    public var pspReference: String
    public var reason: DisputeReason
    @DecimalMoney public var amount: Money
    @LedgerTimestamp public var raisedAt: Date
    /// The last instant to defend it.
    @LedgerTimestamp public var dueAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case orderID = "order_id"
        case pspReference = "psp_reference"
        case reason, amount
        case raisedAt = "raised_at"
        case dueAt = "due_at"
    }
}

/// The merchant defended: references to its evidence (kept outside the log), never the documents.
@MemberwiseInit
public struct DisputeDefenseSubmitted: LedgerEventPayload {
    public static let eventType = "DisputeDefenseSubmitted"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.disputeDefenseSubmitted

    public var disputeID: String
    public var evidenceRefs: [String]
    public var submittedBy: String
    @LedgerTimestamp public var submittedAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case evidenceRefs = "evidence_refs"
        case submittedBy = "submitted_by"
        case submittedAt = "submitted_at"
    }
}

/// The acquirer re-presented the payment to the issuer with the merchant's defense.
@MemberwiseInit
public struct DisputeSecondPresentment: LedgerEventPayload {
    public static let eventType = "DisputeSecondPresentment"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.disputeSecondPresentment

    public var disputeID: String
    @LedgerTimestamp public var presentedAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case presentedAt = "presented_at"
    }
}

/// The chargeback was reversed: the amount comes back to the merchant.
@MemberwiseInit
public struct ChargebackReversed: LedgerEventPayload {
    public static let eventType = "ChargebackReversed"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.chargebackReversed

    public var disputeID: String
    @DecimalMoney public var amount: Money
    @LedgerTimestamp public var reversedAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case amount
        case reversedAt = "reversed_at"
    }
}

/// The issuer disagreed with the defense and opened pre-arbitration.
@MemberwiseInit
public struct DisputePreArbitrationOpened: LedgerEventPayload {
    public static let eventType = "DisputePreArbitrationOpened"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.disputePreArbitrationOpened

    public var disputeID: String
    @LedgerTimestamp public var openedAt: Date
    @LedgerTimestamp public var dueAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case openedAt = "opened_at"
        case dueAt = "due_at"
    }
}

/// The issuer charged the payment back a second time after a reversal: debited again.
@MemberwiseInit
public struct SecondChargebackReceived: LedgerEventPayload {
    public static let eventType = "SecondChargebackReceived"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.secondChargebackReceived

    public var disputeID: String
    @DecimalMoney public var amount: Money
    @LedgerTimestamp public var raisedAt: Date
    @LedgerTimestamp public var dueAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case amount
        case raisedAt = "raised_at"
        case dueAt = "due_at"
    }
}

/// How a dispute ended.
public enum DisputeOutcome: String, Hashable, Sendable, Codable, CaseIterable {
    /// The merchant accepted liability: the amount stays with the cardholder.
    case accepted
    /// The merchant won: the amount is (or comes back) with the merchant.
    case won
    /// The merchant lost: the amount stays (or goes again) to the cardholder.
    case lost
}

/// The dispute ended. `credited` / `debited`: the money the close itself moved (a won dispute whose
/// funds were still debited is credited; a lost one whose funds had come back is debited again).
@MemberwiseInit
public struct DisputeClosed: LedgerEventPayload {
    public static let eventType = "DisputeClosed"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.disputeClosed

    public var disputeID: String
    public var outcome: DisputeOutcome
    @DecimalMoney public var credited: Money
    @DecimalMoney public var debited: Money
    public var closedBy: String
    @LedgerTimestamp public var closedAt: Date

    enum CodingKeys: String, CodingKey {
        case disputeID = "dispute_id"
        case outcome, credited, debited
        case closedBy = "closed_by"
        case closedAt = "closed_at"
    }
}

/// A dispute stream's events.
public enum DisputeEvent: Hashable, Sendable {
    case inquiryRaised(DisputeInquiryRaised)
    case chargeback(ChargebackReceived)
    case defenseSubmitted(DisputeDefenseSubmitted)
    case secondPresentment(DisputeSecondPresentment)
    case reversed(ChargebackReversed)
    case preArbitration(DisputePreArbitrationOpened)
    case secondChargeback(SecondChargebackReceived)
    case closed(DisputeClosed)

    public var payload: any LedgerEventPayload {
        switch self {
        case .inquiryRaised(let e): e
        case .chargeback(let e): e
        case .defenseSubmitted(let e): e
        case .secondPresentment(let e): e
        case .reversed(let e): e
        case .preArbitration(let e): e
        case .secondChargeback(let e): e
        case .closed(let e): e
        }
    }

    public var disputeID: String {
        switch self {
        case .inquiryRaised(let e): e.disputeID
        case .chargeback(let e): e.disputeID
        case .defenseSubmitted(let e): e.disputeID
        case .secondPresentment(let e): e.disputeID
        case .reversed(let e): e.disputeID
        case .preArbitration(let e): e.disputeID
        case .secondChargeback(let e): e.disputeID
        case .closed(let e): e.disputeID
        }
    }

    public var streamID: StreamID { Dispute.streamID(disputeID: disputeID) }

    /// Whether the event records a stage the network reported through the acquirer (every event but
    /// the merchant's defense and acceptance).
    public var isAcquirerStage: Bool {
        switch self {
        case .defenseSubmitted: false
        case .closed(let e): e.outcome != .accepted
        default: true
        }
    }

    /// How many of `events` (one dispute's stream) record the acquirer's stages: an acquirer
    /// notification whose stage number is at most this one is already recorded.
    public static func acquirerStages(_ events: [DisputeEvent]) -> Int { events.reduce(0) { $0 + ($1.isAcquirerStage ? 1 : 0) } }

    /// The event as a ``LedgerEvent``.
    public var ledgerEvent: LedgerEvent { .dispute(self) }

    /// Decodes a dispute stream's row; any other type is an error.
    public static func decode(_ recorded: RecordedEvent) throws(EventCodingError) -> DisputeEvent {
        guard case .dispute(let e) = try LedgerEvent.decode(recorded) else {
            throw EventCodingError(.unknownType, type: recorded.type, "not a dispute event")
        }
        return e
    }
}

public enum Dispute {
    /// `dispute-<id>`.
    public static func streamID(disputeID: String) -> StreamID { StreamID(category: "dispute", id: disputeID) }
}

// MARK: - State

/// Where a dispute stands.
public enum DisputeStatus: String, Hashable, Sendable, Codable, CaseIterable {
    /// An inquiry awaits the merchant's answer; no money moved.
    case inquiry
    /// Charged back (funds debited); the merchant may defend until the deadline.
    case chargedBack = "charged_back"
    /// The merchant's defense is submitted; the acquirer will re-present.
    case defended
    /// Re-presented to the issuer.
    case represented
    /// The chargeback was reversed (funds back); the issuer may still go to pre-arbitration.
    case reversed
    /// The issuer opened pre-arbitration; the merchant answers (accepts) or the network decides.
    case preArbitration = "pre_arbitration"
    /// Charged back a second time (funds debited again).
    case secondChargeback = "second_chargeback"
    case accepted, won, lost

    /// Whether the dispute ended.
    public var isClosed: Bool { self == .accepted || self == .won || self == .lost }
}

/// A dispute folded from its stream.
@MemberwiseInit
public struct DisputeState: Hashable, Sendable {
    public var disputeID: String
    public var orderID: OrderID
    public var pspReference: String
    public var reason: DisputeReason
    public var amount: Money
    public var status: DisputeStatus
    /// The deadline of the stage awaiting the merchant (nil when nothing awaits the merchant).
    public var dueAt: Date?
    /// Whether the amount is debited from the merchant now.
    public var debited: Bool
    /// Σ debits (chargebacks, second chargebacks, a lost close) and Σ credits (reversals, a won close).
    public var chargedBack: Money
    public var reversed: Money
    public var evidenceRefs: [String]
    /// Events folded (the stream's version).
    public var version: Int64

    /// The money the dispute took from the merchant, net: `chargedBack − reversed` (0 or the amount).
    public var netDebited: Money { Money(minorUnits: chargedBack.minorUnits - reversed.minorUnits, currency: amount.currency) }

    public static func evolve(_ state: DisputeState?, _ event: DisputeEvent) -> DisputeState? {
        guard var s = state else {
            switch event {
            case .inquiryRaised(let e):
                let zero = Money(minorUnits: 0, currency: e.amount.currency)
                return DisputeState(
                    disputeID: e.disputeID,
                    orderID: e.orderID,
                    pspReference: e.pspReference,
                    reason: e.reason,
                    amount: e.amount,
                    status: .inquiry,
                    dueAt: e.dueAt,
                    debited: false,
                    chargedBack: zero,
                    reversed: zero,
                    evidenceRefs: [],
                    version: 1
                )
            case .chargeback(let e):
                return DisputeState(
                    disputeID: e.disputeID,
                    orderID: e.orderID,
                    pspReference: e.pspReference,
                    reason: e.reason,
                    amount: e.amount,
                    status: .chargedBack,
                    dueAt: e.dueAt,
                    debited: true,
                    chargedBack: e.amount,
                    reversed: Money(minorUnits: 0, currency: e.amount.currency),
                    evidenceRefs: [],
                    version: 1
                )
            default: return nil
            }
        }
        s.version += 1
        func add(_ a: Money, _ b: Money) -> Money { Money(minorUnits: a.minorUnits + b.minorUnits, currency: a.currency) }
        switch event {
        case .inquiryRaised: return nil
        case .chargeback(let e):
            s.status = .chargedBack
            s.dueAt = e.dueAt
            s.reason = e.reason
            s.debited = true
            s.chargedBack = add(s.chargedBack, e.amount)
        case .defenseSubmitted(let e):
            s.status = .defended
            s.dueAt = nil
            s.evidenceRefs += e.evidenceRefs
        case .secondPresentment:
            s.status = .represented
        case .reversed(let e):
            s.status = .reversed
            s.debited = false
            s.reversed = add(s.reversed, e.amount)
        case .preArbitration(let e):
            s.status = .preArbitration
            s.dueAt = e.dueAt
        case .secondChargeback(let e):
            s.status = .secondChargeback
            s.dueAt = e.dueAt
            s.debited = true
            s.chargedBack = add(s.chargedBack, e.amount)
        case .closed(let e):
            s.status = DisputeStatus(rawValue: e.outcome.rawValue)!
            s.dueAt = nil
            s.chargedBack = add(s.chargedBack, e.debited)
            s.reversed = add(s.reversed, e.credited)
            s.debited = s.status != .won && (s.debited || !e.debited.isZero)
        }
        return s
    }

    public static func fold(_ events: [DisputeEvent]) -> DisputeState? {
        events.reduce(nil as DisputeState?) { evolve($0, $1) }
    }
}

// MARK: - Commands and the decider

/// What happens to a dispute. The network's stages come from the acquirer; `defend` and `accept`
/// from an operator; `close` (won / lost) from the network's decision, through the acquirer.
public enum DisputeCommand: Hashable, Sendable {
    case raiseInquiry(disputeID: String, orderID: OrderID, pspReference: String, reason: DisputeReason, amount: Money)
    case chargeback(disputeID: String, orderID: OrderID, pspReference: String, reason: DisputeReason, amount: Money)
    case defend(evidenceRefs: [String], by: String)
    case secondPresentment
    case reverse
    case preArbitration
    case secondChargeback
    case accept(by: String)
    /// The network decided: `won` or `lost`.
    case decide(DisputeOutcome, by: String)

    /// The command's name in refusals (`defend`, `accept`, …).
    public var name: String {
        switch self {
        case .raiseInquiry: "inquiry"
        case .chargeback: "chargeback"
        case .defend: "defend"
        case .secondPresentment: "second_presentment"
        case .reverse: "reverse"
        case .preArbitration: "pre_arbitration"
        case .secondChargeback: "second_chargeback"
        case .accept: "accept"
        case .decide(let outcome, _): outcome.rawValue
        }
    }
}

/// Why a dispute command is refused (a 4xx, nothing appended).
public enum DisputeRejection: Error, Hashable, Sendable, CustomStringConvertible {
    case unknownDispute(String)
    case alreadyExists(String)
    /// The command does not apply in the dispute's status.
    case illegalTransition(command: String, status: DisputeStatus)
    /// The stage's deadline passed.
    case deadlinePassed(command: String, dueAt: Date)
    case unknownReason(DisputeReason)
    case nonPositiveAmount(Money)
    /// The dispute is larger than what the order captured and has not refunded or disputed.
    case exceedsDisputable(requested: Money, disputable: Money)
    case missingEvidence
    case invalidEvidenceReference(String)

    public var description: String {
        switch self {
        case .unknownDispute(let id): "no dispute \(id)"
        case .alreadyExists(let id): "dispute \(id) already exists"
        case .illegalTransition(let command, let status): "a dispute that is \(status.rawValue) cannot take \(command)"
        case .deadlinePassed(let command, let due): "the deadline for \(command) passed at \(EventJSON.timestamp(due.epochMicroseconds))"
        case .unknownReason(let r): "\(r.network.rawValue) reason code \(r.code) is not known"
        case .nonPositiveAmount(let m): "amount \(m.decimalString) must be positive"
        case .exceedsDisputable(let requested, let disputable):
            "amount \(requested.decimalString) exceeds the \(disputable.decimalString) the order can dispute"
        case .missingEvidence: "a defense needs at least one evidence reference"
        case .invalidEvidenceReference(let r): "evidence reference \(r) is not a reference (1–200 printable characters, no spaces)"
        }
    }
}

/// The pure decider: the dispute's state (nil: none yet), a command, the time → the events to append.
public enum DisputeDecider {
    /// - Parameter disputable: for a new dispute, what the order captured and no other dispute claims
    ///   (the caller reads it from the order's hold and disputes).
    public static func decide(
        _ command: DisputeCommand,
        state: DisputeState?,
        disputable: Money? = nil,
        now: Date
    ) -> Result<[DisputeEvent], DisputeRejection> {
        switch command {
        case .raiseInquiry(let id, let order, let psp, let reason, let amount),
            .chargeback(let id, let order, let psp, let reason, let amount):
            let isChargeback: Bool = if case .chargeback = command { true } else { false }
            if let state {
                // An inquiry may turn into a chargeback; nothing else starts again.
                guard isChargeback, state.status == .inquiry else {
                    return state.status == .inquiry || !isChargeback
                        ? .failure(.alreadyExists(id)) : .failure(.illegalTransition(command: command.name, status: state.status))
                }
                let deadlines = DisputeDeadlines.of(state.reason.network)
                return .success([
                    .chargeback(
                        ChargebackReceived(
                            disputeID: id,
                            orderID: state.orderID,
                            pspReference: state.pspReference,
                            reason: reason,
                            amount: state.amount,
                            raisedAt: now,
                            dueAt: DisputeDeadlines.adding(deadlines.defenseDays, to: now)
                        )
                    )
                ])
            }
            guard reason.isKnown else { return .failure(.unknownReason(reason)) }
            guard amount.minorUnits > 0 else { return .failure(.nonPositiveAmount(amount)) }
            if let disputable, amount.currency != disputable.currency || amount.minorUnits > disputable.minorUnits {
                return .failure(.exceedsDisputable(requested: amount, disputable: disputable))
            }
            let deadlines = DisputeDeadlines.of(reason.network)
            if isChargeback {
                return .success([
                    .chargeback(
                        ChargebackReceived(
                            disputeID: id,
                            orderID: order,
                            pspReference: psp,
                            reason: reason,
                            amount: amount,
                            raisedAt: now,
                            dueAt: DisputeDeadlines.adding(deadlines.defenseDays, to: now)
                        )
                    )
                ])
            }
            return .success([
                .inquiryRaised(
                    DisputeInquiryRaised(
                        disputeID: id,
                        orderID: order,
                        pspReference: psp,
                        reason: reason,
                        amount: amount,
                        raisedAt: now,
                        dueAt: DisputeDeadlines.adding(deadlines.inquiryDays, to: now)
                    )
                )
            ])
        default:
            break
        }
        guard let s = state else { return .failure(.unknownDispute("")) }
        let id = s.disputeID
        let zero = Money(minorUnits: 0, currency: s.amount.currency)
        func illegal() -> Result<[DisputeEvent], DisputeRejection> { .failure(.illegalTransition(command: command.name, status: s.status)) }
        func onTime() -> DisputeRejection? {
            guard let due = s.dueAt, now > due else { return nil }
            return .deadlinePassed(command: command.name, dueAt: due)
        }
        switch command {
        case .raiseInquiry, .chargeback: return illegal()  // handled above
        case .defend(let refs, let by):
            guard s.status == .inquiry || s.status == .chargedBack || s.status == .secondChargeback else { return illegal() }
            if let late = onTime() { return .failure(late) }
            guard !refs.isEmpty else { return .failure(.missingEvidence) }
            if let bad = refs.first(where: { !Self.isReference($0) }) { return .failure(.invalidEvidenceReference(bad)) }
            return .success([.defenseSubmitted(DisputeDefenseSubmitted(disputeID: id, evidenceRefs: refs, submittedBy: by, submittedAt: now))])
        case .secondPresentment:
            guard s.status == .defended, s.debited else { return illegal() }
            return .success([.secondPresentment(DisputeSecondPresentment(disputeID: id, presentedAt: now))])
        case .reverse:
            guard s.status == .represented || s.status == .defended, s.debited else { return illegal() }
            return .success([.reversed(ChargebackReversed(disputeID: id, amount: s.amount, reversedAt: now))])
        case .preArbitration:
            guard s.status == .reversed || s.status == .represented else { return illegal() }
            let days = DisputeDeadlines.of(s.reason.network).preArbitrationDays
            return .success([
                .preArbitration(DisputePreArbitrationOpened(disputeID: id, openedAt: now, dueAt: DisputeDeadlines.adding(days, to: now)))
            ])
        case .secondChargeback:
            guard s.status == .preArbitration || s.status == .reversed, !s.debited else { return illegal() }
            let days = DisputeDeadlines.of(s.reason.network).preArbitrationDays
            return .success([
                .secondChargeback(
                    SecondChargebackReceived(disputeID: id, amount: s.amount, raisedAt: now, dueAt: DisputeDeadlines.adding(days, to: now))
                )
            ])
        case .accept(let by):
            guard [.chargedBack, .preArbitration, .secondChargeback].contains(s.status) else { return illegal() }
            if let late = onTime() { return .failure(late) }
            return .success([
                .closed(
                    DisputeClosed(
                        disputeID: id,
                        outcome: .accepted,
                        credited: zero,
                        debited: s.debited ? zero : s.amount,
                        closedBy: by,
                        closedAt: now
                    )
                )
            ])
        case .decide(let outcome, let by):
            guard outcome != .accepted, !s.status.isClosed, s.status != .inquiry else { return illegal() }
            let credit = outcome == .won && s.debited ? s.amount : zero
            let debit = outcome == .lost && !s.debited ? s.amount : zero
            return .success([
                .closed(DisputeClosed(disputeID: id, outcome: outcome, credited: credit, debited: debit, closedBy: by, closedAt: now))
            ])
        }
    }

    /// An evidence reference: 1–200 printable ASCII characters without spaces (a document's id or
    /// URL in the evidence store, never the document).
    public static func isReference(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 200 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
