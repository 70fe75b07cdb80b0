import LedgerAcquirerAPI
import LedgerCore

import struct Foundation.Date

/// Building settlement report lines from priced captures and refunds.
///
/// Money conservation is built in: a line's signed net is always its signed gross minus its fees
/// (each fee rounded on its own by the schedule's rule), and the payout is the sum of the lines'
/// signed nets — unless the short-pay fault is injected on purpose.
enum SettlementLines {
    /// The report's "Payment Method" for a network.
    static func paymentMethod(_ network: CardNetwork) -> String {
        switch network {
        case .visa: return "visa"
        case .mastercard: return "mc"
        case .amex: return "amex"
        case .discover: return "discover"
        }
    }

    /// The report's "Payment Method Variant": network and funding, as acquirers name them.
    static func paymentMethodVariant(_ network: CardNetwork, _ funding: FundingType) -> String {
        switch network {
        case .amex, .discover: return paymentMethod(network)
        case .visa, .mastercard: return paymentMethod(network) + funding.rawValue
        }
    }

    /// The Settled or Refunded line of one capture or refund.
    static func line(
        for item: SettlementItem,
        modification: ModificationResponse,
        hold: Hold,
        schedule: PricingSchedule,
        configuration: AcquirerModelConfiguration,
        batchNumber: Int
    ) throws(MoneyError) -> SettlementReportLine {
        let gross = item.amount
        let isRefund = item.kind == .refund
        var fees = try schedule.fees(on: gross, network: hold.network, funding: hold.fundingType)
        if isRefund && !schedule.feesOnRefunds {
            // Keep the pricing model's columns (zero), so every line of a report has the same shape.
            let zero = Money.zero(gross.currency)
            fees = FeeBreakdown(
                interchange: fees.interchange.map { _ in zero },
                schemeFee: fees.schemeFee.map { _ in zero },
                markup: fees.markup.map { _ in zero },
                commission: fees.commission.map { _ in zero }
            )
        }
        let totalFees = try fees.total(in: gross.currency)
        let signedGross = isRefund ? try Money.zero(gross.currency).subtracting(gross) : gross
        let signedNet = try signedGross.subtracting(totalFees)
        let (netDebit, netCredit) = split(signedNet)
        return SettlementReportLine(
            companyAccount: configuration.companyAccount,
            merchantAccount: configuration.merchantAccount,
            pspReference: hold.pspReference,
            merchantReference: item.authorizationReference,
            paymentMethod: paymentMethod(hold.network),
            creationDate: wholeSecond(modification.processedAt),
            timeZone: configuration.cutOff.timeZone.name,
            type: isRefund ? .refunded : .settled,
            modificationReference: modification.modificationPSPReference,
            grossCurrency: gross.currency,
            grossDebit: isRefund ? gross : nil,
            grossCredit: isRefund ? nil : gross,
            exchangeRate: Rate(numerator: 1, denominator: 1),
            netCurrency: gross.currency,
            netDebit: netDebit,
            netCredit: netCredit,
            commission: fees.commission,
            markup: fees.markup,
            schemeFees: fees.schemeFee,
            interchange: fees.interchange,
            paymentMethodVariant: paymentMethodVariant(hold.network, hold.fundingType),
            modificationMerchantReference: item.modificationReference,
            batchNumber: batchNumber
        )
    }

    /// The MerchantPayout line closing a report: the payout as a net debit (credit when negative).
    static func payoutLine(
        payout: PayoutNotice,
        batchReference: String,
        closedAt: Date,
        configuration: AcquirerModelConfiguration
    ) -> SettlementReportLine {
        let (netDebit, netCredit) = split(payout.amount, positiveIsDebit: true)
        return SettlementReportLine(
            companyAccount: configuration.companyAccount,
            merchantAccount: configuration.merchantAccount,
            pspReference: "",
            merchantReference: "",
            paymentMethod: "",
            creationDate: wholeSecond(closedAt),
            timeZone: configuration.cutOff.timeZone.name,
            type: .merchantPayout,
            modificationReference: payout.payoutReference,
            grossCurrency: nil,
            grossDebit: nil,
            grossCredit: nil,
            exchangeRate: nil,
            netCurrency: payout.amount.currency,
            netDebit: netDebit,
            netCredit: netCredit,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: "",
            modificationMerchantReference: batchReference,
            batchNumber: payout.batchNumber
        )
    }

    /// A signed amount as (debit, credit) columns; zero is a credit of 0.
    static func split(_ signed: Money, positiveIsDebit: Bool = false) -> (debit: Money?, credit: Money?) {
        let magnitude = Money(minorUnits: signed.minorUnits == .min ? .max : abs(signed.minorUnits), currency: signed.currency)
        let positive = !signed.isNegative
        return positive != positiveIsDebit ? (nil, magnitude) : (magnitude, nil)
    }

    static func wholeSecond(_ instant: Date) -> Date {
        Date(timeIntervalSince1970: Double(wholeSeconds(instant)))
    }
}
