import Foundation
import LedgerAcquirer
import LedgerCore

/// A day of trading used by the settlement tests: five payments on different cards, captured
/// (one partially, one twice), and one refund — and the batch that submits them.
struct SettlementScenario {
    var state: AcquirerModelState
    var batch: SettlementBatchRequest

    static let payments: [(reference: String, token: String, amount: Int64)] = [
        ("order-1", "tok_visa", 500), ("order-2", "tok_mastercard", 2000), ("order-3", "tok_amex", 3333),
        ("order-4", "tok_visa_debit", 1234), ("order-5", "tok_discover", 9999),
    ]

    init(seed: UInt64 = 42, configuration: AcquirerModelConfiguration = AcquirerModelConfiguration()) throws {
        var state = AcquirerModelState(seed: seed, configuration: configuration)
        var items: [SettlementItem] = []
        var now = monday
        for payment in Self.payments {
            now += 60
            _ = try state.approve(payment.reference, usd(payment.amount), token: payment.token, now: now)
            let captureReference = "cap-" + payment.reference
            let amount = payment.reference == "order-5" ? usd(4999) : usd(payment.amount)
            _ = try state.capture(
                CaptureRequest(
                    authorizationReference: payment.reference,
                    modificationReference: captureReference,
                    amount: amount,
                    isFinal: true
                ),
                now: now + 30
            )
            items.append(
                SettlementItem(
                    kind: .capture,
                    authorizationReference: payment.reference,
                    modificationReference: captureReference,
                    amount: amount
                )
            )
        }
        _ = try state.refund(
            RefundRequest(
                authorizationReference: "order-2",
                modificationReference: "refund-order-2",
                amount: usd(750)
            ),
            now: now + 90
        )
        items.append(
            SettlementItem(
                kind: .refund,
                authorizationReference: "order-2",
                modificationReference: "refund-order-2",
                amount: usd(750)
            )
        )
        self.state = state
        self.batch = SettlementBatchRequest(batchReference: "batch-2025-01-06", currency: .usd, items: items)
    }

    /// Settles the batch at `closeAt`.
    mutating func settle(at instant: Date = at("2025-01-06", 20)) throws -> SettlementReport {
        try state.submitBatch(batch, now: instant)
    }
}

extension SettlementReport {
    /// The lines without the MerchantPayout line.
    var itemLines: [SettlementReportLine] { lines.filter { $0.type != .merchantPayout } }
    var payoutLine: SettlementReportLine? { lines.last { $0.type == .merchantPayout } }
    var sumOfNets: Int64 { itemLines.reduce(0) { $0 + $1.signedNetMinorUnits } }
}
