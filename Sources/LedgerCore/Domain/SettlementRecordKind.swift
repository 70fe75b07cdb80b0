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

    /// The Adyen Settlement Details Report's record types (its `Type` column): Adyen's "Journal types" of the
    /// Settlement details report, with the Payment Accounting Report's settled records of the same names.
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
        "AuthorisationSchemeFee": .adjustment, "ManualCorrected": .adjustment, "MatchedStatement": .adjustment,
        "BankInstructionReturned": .adjustment, "InternalCompanyPayout": .adjustment,
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

    /// Every documented Adyen type by its lower-case spelling: exports write `settled` as well as `Settled`.
    private static let adyenCanonical: [String: String] = Dictionary(
        (Array(adyen.keys) + Array(adyenLifecycle)).map { ($0.lowercased(), $0) },
        uniquingKeysWith: { a, _ in a }
    )

    /// The documented spelling of an Adyen record type, whatever its case; nil for a type no mapping knows.
    public static func canonicalAdyenType(_ type: String) -> String? { adyenCanonical[type.lowercased()] }

    /// Stripe's itemized payout reconciliation report's `reporting_category` values (Stripe's reporting
    /// categories, as its API's `ReportingCategory` enumerates them), each as the Adyen record type it books
    /// like (``SettlementBooking``).
    public static let stripeTypes: [String: String] = [
        "charge": "Settled", "payment": "Settled",
        "refund": "Refunded", "payment_refund": "Refunded",
        "refund_failure": "RefundedReversed", "payment_failure_refund": "RefundedReversed",
        "dispute": "Chargeback", "dispute_reversal": "ChargebackReversed",
        "fee": "MiscCosts", "network_cost": "MiscCosts", "tax": "MiscCosts",
        "risk_reserved_funds": "ReserveAdjustment", "risk_released_funds": "ReserveAdjustment", "connect_reserved_funds": "ReserveAdjustment",
        "connect_collection_transfer": "Balancetransfer", "transfer": "Balancetransfer", "transfer_reversal": "Balancetransfer",
        "other_adjustment": "ManualCorrected", "charge_failure": "ManualCorrected", "platform_earning": "ManualCorrected",
        "platform_earning_refund": "ManualCorrected", "partial_capture_reversal": "ManualCorrected", "contribution": "ManualCorrected",
        "climate_order_purchase": "ManualCorrected", "climate_order_refund": "ManualCorrected", "advance": "ManualCorrected",
        "advance_funding": "ManualCorrected", "anticipation_repayment": "ManualCorrected", "financing_paydown": "ManualCorrected",
        "financing_paydown_reversal": "ManualCorrected", "financing_payout": "ManualCorrected", "financing_payout_reversal": "ManualCorrected",
        "issuing_authorization_hold": "ManualCorrected", "issuing_authorization_release": "ManualCorrected",
        "issuing_dispute": "ManualCorrected", "issuing_transaction": "ManualCorrected", "topup": "ManualCorrected",
        "topup_reversal": "ManualCorrected", "unreconciled_customer_funds": "ManualCorrected",
        "payout": "MerchantPayout", "payout_reversal": "BankInstructionReturned",
    ]

    /// Stripe's categories by kind.
    public static let stripe: [String: SettlementRecordKind] = stripeTypes.mapValues { adyen[$0] ?? .unmapped }

    /// The kind of an Adyen SDR `Type` or PAR `Record Type`, whatever its case (this ledger's own report uses the
    /// same record types).
    public init(adyenType type: SettlementLineType) {
        let name = Self.adyen[type.rawValue] != nil ? type.rawValue : (Self.canonicalAdyenType(type.rawValue) ?? type.rawValue)
        self = Self.adyen[name] ?? (Self.adyenLifecycle.contains(name) ? .lifecycle : .unmapped)
    }

    /// The kind of a Stripe `reporting_category` (case-insensitive).
    public init(stripeCategory category: String) { self = Self.stripe[category.lowercased()] ?? .unmapped }
}
