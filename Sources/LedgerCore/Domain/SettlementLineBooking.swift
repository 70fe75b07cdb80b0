// What each settlement report record does to money and to the accounting journal (docs/report-formats.md,
// "Record types → outcomes"; docs/journal.md for the accounts). The Adyen journal types and their direction
// are Adyen's "Journal types" of the Settlement details report; a record's line moves the batch's payable
// (1200 acquirer clearing) by its net, its fees go to the fee accounts, and the rest to the account of its
// booking. A line in two currencies (an exchange rate between its gross and its net) books the conversion
// explicitly: each currency balances on 1290 currency conversion, at the rate as given, and the rounding of
// the converted amount goes to 6195 exchange rounding, never absorbed.

/// The journal account a record's gross (or, when it has none, its net and fees) is booked against.
public enum SettlementBooking: String, Hashable, Sendable, CaseIterable {
    /// A capture settled: the card receivable is cleared (`Settled`, …; Stripe `charge`).
    case sale
    /// A refund settled (`Refunded`, …; Stripe `refund`).
    case refund
    /// A refund the scheme sent back (`RefundedReversed`; Stripe `refund_failure`): the refund is undone.
    case refundReversal = "refund_reversal"
    /// A chargeback or second chargeback debited, or its reversal credited (4950 chargebacks).
    case chargeback
    /// The acquirer's fees and costs not in a line's fee columns (`Fee`, `MiscCosts`, `PaymentCost`,
    /// `AuthorisationSchemeFee`, `CashOutFee`; Stripe `fee`, `network_cost`, `tax`, …).
    case cost
    /// A monthly invoice deducted from or credited to the batch (`InvoiceDeduction`).
    case invoice
    /// Money withheld into or released from the security deposit (`DepositCorrection`, `ReserveAdjustment`;
    /// Stripe `risk_reserved_funds`, `risk_released_funds`).
    case reserve
    /// A balance carried between batches (`Balancetransfer`, `InternalCompanyPayout`; Stripe
    /// `connect_collection_transfer`): this batch's loss is another's gain.
    case balanceTransfer = "balance_transfer"
    /// A manual booking or a correction by the acquirer (`ManualCorrected`, `MatchedStatement`,
    /// `AdvancementCommissionExternallyWithInfo`, `CashOutFunding`, `CashOutReimbursement`; Stripe
    /// `other_adjustment`, `charge_failure`, `platform_earning`, `platform_earning_refund`).
    case correction
    /// A payout that came back (`BankInstructionReturned`; Stripe `payout_reversal`): back from payouts in transit.
    case payoutReturned = "payout_returned"
    /// The batch's payout (`MerchantPayout`, `AcquirerPayout`; Stripe `payout`): to payouts in transit.
    case payout
    /// A status record (`Received`, `Authorised`, …): moves no settled money, books nothing.
    case none

    /// The account the record is booked against.
    public var account: JournalAccount? {
        switch self {
        case .sale, .refund: .cardReceivable
        case .refundReversal: .refunds
        case .chargeback: .chargebacks
        case .cost: .acquirerCosts
        case .invoice: .acquirerInvoices
        case .reserve: .acquirerReserve
        case .balanceTransfer: .batchTransfers
        case .correction: .settlementDifferences
        case .payoutReturned, .payout: .payoutsInTransit
        case .none: nil
        }
    }

    /// The Adyen journal types that book as adjustments, by booking (the others follow from their kind).
    static let adyenAdjustments: [String: SettlementBooking] = [
        "Fee": .cost, "MiscCosts": .cost, "PaymentCost": .cost, "AuthorisationSchemeFee": .cost, "CashOutFee": .cost,
        "InvoiceDeduction": .invoice,
        "DepositCorrection": .reserve, "ReserveAdjustment": .reserve,
        "Balancetransfer": .balanceTransfer, "InternalCompanyPayout": .balanceTransfer,
        "ManualCorrected": .correction, "MatchedStatement": .correction, "AdvancementCommissionExternallyWithInfo": .correction,
        "CashOutFunding": .correction, "CashOutReimbursement": .correction,
        "BankInstructionReturned": .payoutReturned,
    ]

    /// The booking of a line of an Adyen record type (a Stripe category is mapped to one first).
    public init(adyenType type: SettlementLineType) {
        let canonical = SettlementRecordKind.canonicalAdyenType(type.rawValue)
        switch SettlementRecordKind(adyenType: type) {
        case .capture: self = .sale
        case .refund: self = .refund
        case .refundReversed: self = .refundReversal
        case .chargeback, .secondChargeback, .chargebackReversed: self = .chargeback
        case .payout: self = .payout
        case .lifecycle: self = .none
        case .adjustment, .unmapped: self = Self.adyenAdjustments[canonical ?? ""] ?? .correction
        }
    }
}

/// Why a report line cannot be booked.
public enum SettlementBookingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Gross and net in different currencies without an exchange rate.
    case noExchangeRate(Currency, Currency)
    /// The converted gross is out of range.
    case overflow

    public var description: String {
        switch self {
        case .noExchangeRate(let gross, let net): "gross in \(gross.code) and net in \(net.code) but no exchange rate"
        case .overflow: "the converted amount is out of range"
        }
    }
}

/// The journal lines one report line books, per currency: each currency's lines balance.
public struct SettlementLineEntry: Hashable, Sendable {
    /// One currency's lines (positive: debit).
    public var legs: [Currency: [JournalLine]]
    /// The converted gross, rounded half up to the net currency (nil: one currency).
    public var converted: Money?
    /// The line's rounding difference, net + fees − converted (nil: one currency); booked to 6195.
    public var roundingDifference: Money?

    /// Whether every currency's debits equal its credits.
    public var isBalanced: Bool {
        legs.values.allSatisfy { lines in
            lines.reduce(0) { $0 + $1.debitMinorUnits } == lines.reduce(0) { $0 + $1.creditMinorUnits }
        }
    }

    /// The entry for `line`. A line whose net is not its gross less its fees books the difference to 6190
    /// settlement differences (captures and refunds; the reconciliation reports it as `fee_mismatch`).
    public static func of(_ line: SettlementReportLine, batchCurrency: Currency) throws(SettlementBookingError) -> SettlementLineEntry {
        let booking = SettlementBooking(adyenType: line.type)
        guard let counter = booking.account else { return SettlementLineEntry(legs: [:]) }
        let netCurrency = line.netCurrency ?? line.grossCurrency ?? batchCurrency
        var legs: [Currency: [JournalLine]] = [:]
        func post(_ account: JournalAccount, _ signed: Int64, _ currency: Currency) {
            guard signed != 0 else { return }
            legs[currency, default: []]
                .append(JournalLine(account: account, debitMinorUnits: max(signed, 0), creditMinorUnits: max(-signed, 0)))
        }
        let net = line.signedNetMinorUnits
        post(.acquirerClearing, net, netCurrency)
        let fees: [(JournalAccount, Money?)] = [
            (.acquirerCommission, line.commission), (.acquirerMarkup, line.markup), (.schemeFees, line.schemeFees),
            (.interchangeFees, line.interchange),
        ]
        for (account, fee) in fees { post(account, fee?.minorUnits ?? 0, netCurrency) }
        let explained = net + line.totalFeesMinorUnits
        var entry = SettlementLineEntry(legs: [:])
        guard let grossCurrency = line.grossCurrency, line.grossDebit != nil || line.grossCredit != nil else {
            // No gross (a cost, a correction, the payout): the counter account takes the net and the fees.
            post(counter, -explained, netCurrency)
            entry.legs = legs
            return entry
        }
        let gross = line.signedGrossMinorUnits
        if grossCurrency == netCurrency {
            post(counter, -gross, netCurrency)
            post(.settlementDifferences, gross - explained, netCurrency)
            entry.legs = legs
            return entry
        }
        guard let rate = line.exchangeRate else { throw .noExchangeRate(grossCurrency, netCurrency) }
        let converted = try convert(gross, from: grossCurrency, to: netCurrency, at: rate)
        post(counter, -gross, grossCurrency)
        post(.currencyConversion, gross, grossCurrency)
        post(.currencyConversion, -converted, netCurrency)
        post(.exchangeRounding, converted - explained, netCurrency)
        entry.legs = legs
        entry.converted = Money(minorUnits: converted, currency: netCurrency)
        entry.roundingDifference = Money(minorUnits: explained - converted, currency: netCurrency)
        return entry
    }

    /// `units` of `from` at `rate` in minor units of `to`, rounded half up (exact integer arithmetic).
    public static func convert(_ units: Int64, from: Currency, to: Currency, at rate: Rate) throws(SettlementBookingError) -> Int64 {
        // units × rate × 10^(to digits − from digits), in 128 bits: a rate may have 18 digits.
        var numerator = Int128(units) * Int128(rate.numerator)
        var denominator = Int128(rate.denominator)
        let shift = to.minorUnitDigits - from.minorUnitDigits
        for _ in 0..<abs(shift) {
            if shift > 0 { numerator *= 10 } else { denominator *= 10 }
        }
        let quotient = numerator / denominator
        let remainder = numerator % denominator
        var rounded = quotient
        if remainder.magnitude * 2 >= denominator.magnitude { rounded += numerator < 0 ? -1 : 1 }
        guard let result = Int64(exactly: rounded) else { throw .overflow }
        return result
    }
}
