import LedgerMacros

import struct Foundation.Date

// MARK: - Settlement

/// Whether a batch item is a capture (money in) or a refund (money out).
public enum SettlementItemKind: String, Hashable, Sendable, Codable, CaseIterable {
    case capture, refund
}

/// One capture or refund we submit for settlement, by the references we sent when we made it.
@MemberwiseInit
public struct SettlementItem: Hashable, Sendable, Codable {
    public var kind: SettlementItemKind
    public var authorizationReference: String
    public var modificationReference: String
    public var amount: Money
}

/// What a settlement batch is, without its items: our reference (the idempotency key), its currency
/// and, optionally, the business date the merchant closed it for (see ``SettlementBatchRequest``) and the
/// merchant account it settles under.
@MemberwiseInit
public struct SettlementBatchHeader: Hashable, Sendable, Codable {
    public var batchReference: String
    public var currency: Currency
    public var businessDate: BusinessDate?
    /// The merchant account the batch settles under (its report's lines and payout name it); nil: the acquirer's
    /// configured one. A ledger with several accounts names each batch's (issue 52).
    public var merchantAccount: String?
}

/// The acquirer's acknowledgement of a settled batch: its number, report length and payout.
@MemberwiseInit
public struct SettlementReceipt: Hashable, Sendable, Codable {
    public var batchReference: String
    public var batchNumber: Int
    public var businessDate: BusinessDate
    /// Lines of the report, the MerchantPayout line included.
    public var lineCount: Int
    public var payout: PayoutNotice

    public init(_ report: SettlementReport) {
        self.init(
            batchReference: report.batchReference,
            batchNumber: report.batchNumber,
            businessDate: report.businessDate,
            lineCount: report.lines.count,
            payout: report.payout
        )
    }
}

/// A batch of captures and refunds in one currency, items included: what the acquirer settles once
/// every page is in. `batchReference` is our idempotency key for the batch.
@MemberwiseInit
public struct SettlementBatchRequest: Hashable, Sendable, Codable {
    public var batchReference: String
    public var currency: Currency
    public var items: [SettlementItem]
    /// The business date the merchant closed the batch for. When nil the acquirer derives it from
    /// the submission time and its cut-off (a batch submitted at or after the cut-off belongs to the
    /// next business day) — so a ledger that closes its day at the cut-off and submits right after
    /// names the date it closed.
    public var businessDate: BusinessDate?
    /// The merchant account the batch settles under (nil: the acquirer's configured one).
    public var merchantAccount: String?

    public init(_ header: SettlementBatchHeader, items: [SettlementItem]) {
        self.init(
            batchReference: header.batchReference,
            currency: header.currency,
            items: items,
            businessDate: header.businessDate,
            merchantAccount: header.merchantAccount
        )
    }

    public var header: SettlementBatchHeader {
        SettlementBatchHeader(batchReference: batchReference, currency: currency, businessDate: businessDate, merchantAccount: merchantAccount)
    }
}

/// The "Type" column of a settlement report line. Open set: a parser keeps types it does not name.
public struct SettlementLineType: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let settled = SettlementLineType(rawValue: "Settled")
    public static let refunded = SettlementLineType(rawValue: "Refunded")
    public static let chargeback = SettlementLineType(rawValue: "Chargeback")
    public static let fee = SettlementLineType(rawValue: "Fee")
    public static let merchantPayout = SettlementLineType(rawValue: "MerchantPayout")

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One row of a settlement report, in the widely used column layout (see domain §2).
/// Amount columns are `nil` when the report leaves them empty; gross and net are never negative (debit and
/// credit columns carry the sign); a fee is negative when the acquirer credits it (a commission given back).
@MemberwiseInit
public struct SettlementReportLine: Hashable, Sendable, Codable {
    public var companyAccount: String
    public var merchantAccount: String
    public var pspReference: String
    public var merchantReference: String
    public var paymentMethod: String
    /// Whole seconds; written in ``timeZone``.
    public var creationDate: Date?
    public var timeZone: String
    public var type: SettlementLineType
    public var modificationReference: String
    public var grossCurrency: Currency?
    public var grossDebit: Money?
    public var grossCredit: Money?
    public var exchangeRate: Rate?
    public var netCurrency: Currency?
    public var netDebit: Money?
    public var netCredit: Money?
    public var commission: Money?
    public var markup: Money?
    public var schemeFees: Money?
    public var interchange: Money?
    public var paymentMethodVariant: String
    public var modificationMerchantReference: String
    public var batchNumber: Int

    /// Gross credit − gross debit in minor units of the gross currency (0 when both are empty).
    public var signedGrossMinorUnits: Int64 { (grossCredit?.minorUnits ?? 0) - (grossDebit?.minorUnits ?? 0) }

    /// Net credit − net debit in minor units of the net currency (0 when both are empty).
    public var signedNetMinorUnits: Int64 { (netCredit?.minorUnits ?? 0) - (netDebit?.minorUnits ?? 0) }

    /// Commission + markup + scheme fees + interchange, in minor units of the net currency.
    public var totalFeesMinorUnits: Int64 {
        [commission, markup, schemeFees, interchange].reduce(0) { $0 + ($1?.minorUnits ?? 0) }
    }
}

/// The deposit the acquirer makes (or will make) to the merchant's bank account for one batch.
@MemberwiseInit
public struct PayoutNotice: Hashable, Sendable, Codable {
    public var payoutReference: String
    public var batchNumber: Int
    public var merchantAccount: String
    /// The day the money is credited to the bank account.
    public var valueDate: BusinessDate
    /// Negative when refunds and fees exceed captures (the merchant owes the acquirer).
    public var amount: Money
}

/// The acquirer's settlement report for one batch: its lines (ending with the MerchantPayout line)
/// and the payout they lead to.
@MemberwiseInit
public struct SettlementReport: Hashable, Sendable, Codable {
    public var batchReference: String
    public var batchNumber: Int
    public var companyAccount: String
    public var merchantAccount: String
    public var businessDate: BusinessDate
    public var closedAt: Date
    public var currency: Currency
    public var lines: [SettlementReportLine]
    public var payout: PayoutNotice
}

extension SettlementBatchHeader {
    /// Walks a batch's pages as ``Acquirer/submitBatch(_:pages:)`` defines them — page 0, 1, … once each, in
    /// order, until `pages` returns nil — handing each to `take` with its index; returns how many there were.
    /// A page that cannot be read fails the upload as `.unavailable` (nothing is settled yet, so the batch may
    /// be submitted again with the same reference).
    public func forEachPage(
        _ pages: @Sendable (Int) async throws -> [SettlementItem]?,
        _ take: ([SettlementItem], Int) async throws(AcquirerError) -> Void
    ) async throws(AcquirerError) -> Int {
        var index = 0
        while true {
            let page: [SettlementItem]?
            do { page = try await pages(index) } catch {
                throw AcquirerError(.unavailable, reference: batchReference, "the batch upload failed at page \(index): \(error)")
            }
            guard let page else { return index }
            try await take(page, index)
            index += 1
        }
    }
}
