import Foundation
import LedgerCore
import LedgerServices

/// A dispute as the back office sees it (`GET /disputes`, `GET /disputes/{id}`, the answers to
/// `defend` and `accept`). Money as decimal strings, times in RFC 3339.
public struct DisputeReply: Codable, Sendable, Hashable {
    public let dispute_id, order_id, psp_reference: String
    public let network, reason_code: String
    public let reason_title: String?
    public let amount, currency: String
    public let status: String
    /// The deadline of the stage awaiting the merchant; nil when nothing awaits the merchant.
    public let due_at: String?
    /// Whether the amount is debited from the merchant now.
    public let debited: Bool
    /// Σ debits and Σ credits so far; `net_debited` = charged_back − reversed (0 or the amount).
    public let charged_back, reversed, net_debited: String
    public let evidence_refs: [String]
    /// The order's status now (only in a single dispute's answer).
    public let order_status: String?

    public init(_ d: DisputeState, orderStatus: OrderStatus? = nil) {
        dispute_id = d.disputeID
        order_id = d.orderID.rawValue
        psp_reference = d.pspReference
        network = d.reason.network.rawValue
        reason_code = d.reason.code
        reason_title = d.reason.title
        amount = d.amount.decimalString
        currency = d.amount.currency.code
        status = d.status.rawValue
        due_at = d.dueAt.map { RFC3339.format($0.epochMicroseconds) }
        debited = d.debited
        charged_back = d.chargedBack.decimalString
        reversed = d.reversed.decimalString
        net_debited = d.netDebited.decimalString
        evidence_refs = d.evidenceRefs
        order_status = orderStatus?.rawValue
    }
}

/// `GET /disputes?status=&due_before=`.
public struct DisputeListReply: Codable, Sendable, Hashable {
    public let disputes: [DisputeReply]

    public init(_ disputes: [DisputeState]) { self.disputes = disputes.map { DisputeReply($0) } }
}

extension DisputeView {
    /// `{"dispute": …, "history": [{"position", "type", "recorded_at", "actor", "data"}]}`: the
    /// history's `data` is each event as stored.
    package func reply() throws -> RawJSON {
        let entries = history.map { entry in
            RawJSON.object([
                "position": .integer(entry.position),
                "type": .string(entry.type),
                "recorded_at": .string(RFC3339.format(entry.recordedAt.epochMicroseconds)),
                "actor": .optionalString(entry.actor),
                "data": RawJSON(stored: entry.data),
            ])
        }
        return RawJSON.object([
            "dispute": try RawJSON(encoding: DisputeReply(state, orderStatus: orderStatus)),
            "history": .array(entries),
        ])
    }
}
