import Foundation
import LedgerCore

/// An event as a clerk reads it: "captured 20.00 USD by operator:op-1", not its JSON (issue 55). One phrase per event
/// type of the catalogue (``phrase(_:)`` switches over every ``EventKind``: a new type does not build without one),
/// then the event's amount and the details a clerk asks about, read from its payload, then who did it. The console's
/// timelines show these; the raw JSON stays one click away for auditors.
public enum EventSentences {
    /// What happened, for each event type.
    public static func phrase(_ kind: EventKind) -> String {
        switch kind {
        case .productListed: "product listed"
        case .productPriceChanged: "product price changed"
        case .stockReceived: "stock received"
        case .stockReserved: "stock reserved"
        case .reservationReleased: "stock reservation released"
        case .stockSold: "stock sold"
        case .shippingMethodListed: "shipping method listed"
        case .shippingMethodPriceChanged: "shipping method price changed"
        case .orderOpened: "order opened"
        case .orderAuthorized: "payment authorized"
        case .paymentDeclined: "payment declined"
        case .paymentOutcomeUnknown: "payment outcome unknown (the acquirer did not answer)"
        case .orderCancelled: "order cancelled"
        case .orderPaymentUpdated: "order status updated"
        case .orderShipped: "shipped"
        case .authorizationHoldPlaced: "authorization hold placed"
        case .holdIncremented: "authorization incremented by"
        case .holdCaptured: "captured"
        case .holdReversed: "voided (hold released)"
        case .holdExpired: "hold expired, released"
        case .holdRefunded: "refunded"
        case .settlementBatchOpened: "settlement batch opened"
        case .settlementBatchClosed: "settlement batch closed"
        case .settlementBatchSubmitted: "settlement batch submitted to the acquirer"
        case .settlementBatchCleared: "settlement batch cleared (fees known)"
        case .settlementPayoutScheduled: "payout scheduled"
        case .settlementPayoutPaid: "payout paid"
        case .reconciliationRecorded: "reconciliation recorded"
        case .reconciliationBreakFound: "reconciliation break found"
        case .reconciliationBreakResolved: "reconciliation break resolved"
        case .disputeInquiryRaised: "inquiry raised by the cardholder's bank"
        case .chargebackReceived: "chargeback received"
        case .disputeDefenseSubmitted: "defence submitted"
        case .disputeSecondPresentment: "second presentment"
        case .chargebackReversed: "chargeback reversed"
        case .disputePreArbitrationOpened: "pre-arbitration opened"
        case .secondChargebackReceived: "second chargeback received"
        case .disputeClosed: "dispute closed"
        case .applePayTokenAccepted: "Apple Pay token accepted"
        case .applePayTokenRejected: "Apple Pay token refused"
        case .checkpointSigned: "checkpoint signed"
        case .contactErased: "shipping contact erased"
        case .bankStatementReceived: "bank statement imported"
        case .bankEntryBooked: "bank entry"
        case .bankPayoutMatched: "payout matched to the bank's deposit"
        case .bankBreakFound: "bank break found"
        case .bankBreakResolved: "bank break resolved"
        }
    }

    /// The payload members a clerk reads beside the amount, in this order, when the event has them as text.
    static let detailMembers: [(member: String, label: String)] = [
        ("status", "now"), ("reason", "reason"), ("message", "message"), ("response_code", "code"), ("carrier", "carrier"),
        ("tracking", "tracking"), ("auth_code", "authorization code"), ("psp_reference", "PSP reference"), ("outcome", "outcome"),
        ("break_class", "class"),
    ]

    /// The sentence for a stored event of `type` with payload `data` (JSON text) recorded by `actor` (empty: unknown).
    /// A type this build does not know keeps its name.
    public static func sentence(type: String, data: String, actor: String) -> String {
        let phrase = EventCatalogue.entry(forType: type).map { Self.phrase($0.kind) } ?? type
        let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
        var text = phrase
        if let money = object["amount"] as? [String: Any], let amount = money["amount"] as? String, let currency = money["currency"] as? String {
            text += " \(amount) \(currency)"
        }
        let details = detailMembers.compactMap { member, label -> String? in
            guard let value = object[member] as? String, !value.isEmpty else { return nil }
            return "\(label) \(value)"
        }
        if !details.isEmpty { text += " (\(details.joined(separator: ", ")))" }
        if !actor.isEmpty { text += " by \(actor)" }
        return text
    }
}
