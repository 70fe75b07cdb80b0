// What each record type of a settlement report means to reconciliation: the Adyen
// Settlement Details Report's `Type` column and Stripe's itemized payout reconciliation report's
// `reporting_category`, mapped to one normalized kind. A type no mapping knows is `unmapped`, which
// reconciliation reports as its own break (`unmapped_record`), never dropping the line.

/// The normalized meaning of a settlement report record.
public enum SettlementRecordKind: String, Hashable, Sendable, CaseIterable {
    /// A capture settled (Adyen `Settled`, Stripe `charge`).
    case capture
    /// A refund settled (Adyen `Refunded`, Stripe `refund`).
    case refund
    /// A refund undone by the acquirer (Adyen `RefundedReversed`, Stripe `refund_failure`).
    case refundReversed = "refund_reversed"
    /// A chargeback debited (Adyen `Chargeback`, Stripe `dispute`).
    case chargeback
    /// A second chargeback debited (Adyen `SecondChargeback`).
    case secondChargeback = "second_chargeback"
    /// A chargeback reversed, credited (Adyen `ChargebackReversed`, Stripe `dispute_reversal`).
    case chargebackReversed = "chargeback_reversed"
    /// A fee or cost not tied to one payment (Adyen `Fee`, `MiscCosts`, `InvoiceDeduction`,
    /// `DepositCorrection`, `PaymentCost`; Stripe `fee`, `other_adjustment`, `tax`, …).
    case adjustment
    /// The payout of the batch (Adyen `MerchantPayout`, Stripe `payout`).
    case payout
    /// A payment's status record that moves no settled money (the Adyen Payment Accounting Report's
    /// `Received`, `Authorised`, `SentForSettle`, …): counted, never a break.
    case lifecycle
    /// A record type no mapping knows.
    case unmapped

    /// The Adyen Settlement Details Report's record types (its `Type` column), as documented.
    public static let adyen: [String: SettlementRecordKind] = [
        "Settled": .capture, "SettledBulk": .capture, "SettledInInstallments": .capture, "SettledExternallyWithInfo": .capture,
        "Refunded": .refund, "RefundedBulk": .refund, "RefundedInInstallments": .refund, "RefundedExternallyWithInfo": .refund,
        "RefundedReversed": .refundReversed,
        "Chargeback": .chargeback, "ChargebackExternallyWithInfo": .chargeback,
        "SecondChargeback": .secondChargeback,
        "ChargebackReversed": .chargebackReversed, "ChargebackReversedExternallyWithInfo": .chargebackReversed,
        "Fee": .adjustment, "MiscCosts": .adjustment, "PaymentCost": .adjustment, "DepositCorrection": .adjustment,
        "InvoiceDeduction": .adjustment, "ReserveAdjustment": .adjustment, "AdvancementCommissionExternallyWithInfo": .adjustment,
        "Balancetransfer": .adjustment, "CashOutFunding": .adjustment, "CashOutFee": .adjustment, "CashOutReimbursement": .adjustment,
        "MerchantPayout": .payout, "AcquirerPayout": .payout,
    ]

    /// The Adyen Payment Accounting Report's status record types (its `Record Type` column), which
    /// move no settled money.
    public static let adyenLifecycle: Set<String> = [
        "Received", "Authorised", "Refused", "Cancelled", "CancelledExternally", "SentForSettle", "SentForRefund", "Expired",
        "Error", "Retried", "CaptureFailed", "RefundFailed", "RefusedReversed", "AuthorisedPending", "SentForPayout",
        "NotificationOfChargeback", "RequestForInformation", "InformationSupplied", "NotificationOfFraud",
        "PrearbitrationWon", "PrearbitrationLost", "DisputeDefended", "ChargebackDefended",
    ]

    /// Stripe's itemized payout reconciliation report's `reporting_category` values, as documented.
    public static let stripe: [String: SettlementRecordKind] = [
        "charge": .capture, "payment": .capture,
        "refund": .refund, "payment_refund": .refund,
        "refund_failure": .refundReversed, "payment_failure_refund": .refundReversed,
        "dispute": .chargeback,
        "dispute_reversal": .chargebackReversed,
        "fee": .adjustment, "other_adjustment": .adjustment, "tax": .adjustment, "platform_earning": .adjustment,
        "platform_earning_refund": .adjustment, "network_cost": .adjustment, "risk_reserved_funds": .adjustment,
        "risk_released_funds": .adjustment, "connect_collection_transfer": .adjustment, "charge_failure": .adjustment,
        "payout": .payout, "payout_reversal": .adjustment,
    ]

    /// The kind of an Adyen SDR `Type` (this ledger's own report uses the same record types).
    public init(adyenType type: SettlementLineType) {
        self = Self.adyen[type.rawValue] ?? (Self.adyenLifecycle.contains(type.rawValue) ? .lifecycle : .unmapped)
    }

    /// The kind of a Stripe `reporting_category`.
    public init(stripeCategory category: String) { self = Self.stripe[category] ?? .unmapped }
}
