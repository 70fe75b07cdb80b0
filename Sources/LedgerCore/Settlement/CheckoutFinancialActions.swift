// Checkout.com's Financial Actions by Payout ID report (`financial-actions_{EntityID}_{Payout Date}_{PayoutID}_1.csv`),
// read into the ledger's normalized report lines. One row is one breakdown of one financial action (a capture's gross,
// each of its fees, a refund, a chargeback, an adjustment, the payout), so a payment spans several rows; amounts are
// signed as the balance moved (a capture positive, a fee or a refund negative). The rows of one action (one Action
// ID, listed together as Checkout.com lists each payment's actions chronologically) are folded into one line, as an
// Adyen SDR line carries its fees: the gross row's processing amount is the line's gross, every fee row goes to its
// fee column, and the line's net is the sum of the action's held amounts. Column names, action types and breakdown
// types, and which documentation page each came from: docs/report-formats.md, "Checkout.com".

/// What one breakdown type of a Checkout.com financial action does to the action's line.
public enum CheckoutBreakdown: Hashable, Sendable {
    /// The action's money: its line becomes this Adyen record type, gross from the processing amount.
    case gross(SettlementLineType)
    /// A chargeback row (`Chargeback (ADJM)`, …): a `Chargeback` when it debits, `ChargebackReversed` when it credits.
    case chargeback
    /// A fee of the action, to the given fee column (its held amount is negative: a charged fee is positive there).
    case fee(FeeColumn)
    /// A balance adjustment not tied to a payment: its line becomes this Adyen record type, with no gross.
    case adjustment(SettlementLineType)
    /// The payout of the balance to the bank: the report's payout row (a debit whatever its sign).
    case payout

    /// The fee column a fee breakdown is booked to.
    public enum FeeColumn: Hashable, Sendable { case interchange, schemeFees, markup, commission }

    /// Breakdown types by their lower-case spelling (Checkout.com's "Breakdown types" reference, 2023 and 2025
    /// editions, and its "Payment fees" categories; docs/report-formats.md says which from where).
    public static let breakdownTypes: [String: CheckoutBreakdown] = [
        "capture": .gross(SettlementLineType(rawValue: "Settled")), "partial capture": .gross(SettlementLineType(rawValue: "Settled")),
        "refund": .gross(SettlementLineType(rawValue: "Refunded")), "partial refund": .gross(SettlementLineType(rawValue: "Refunded")),
        "clearing failed": .adjustment(SettlementLineType(rawValue: "ManualCorrected")),
        "chargeback (adjm)": .chargeback, "chargeback (cbrv)": .chargeback, "chargeback (rpdw)": .chargeback,
        "chargeback (arbw)": .chargeback, "chargeback (arbl)": .chargeback, "chargeback (arws)": .chargeback,
        "chargeback (auto)": .chargeback,
        "interchange fixed fee": .fee(.interchange), "interchange variable fee": .fee(.interchange),
        "scheme fixed fee": .fee(.schemeFees), "scheme variable fee": .fee(.schemeFees),
        "premium fixed fee": .fee(.markup), "premium variable fee": .fee(.markup),
        "authentication fixed fee": .fee(.commission), "authorization fixed fee": .fee(.commission),
        "card verification fixed fee": .fee(.commission), "gateway fixed fee": .fee(.commission),
        "refund fixed fee": .fee(.commission), "risk engine fixed fee": .fee(.commission), "void fixed fee": .fee(.commission),
        "acquirer fee": .fee(.commission), "alternative payment method fee": .fee(.commission),
        "cover negative position": .adjustment(SettlementLineType(rawValue: "Balancetransfer")),
        "invoice settlement": .adjustment(SettlementLineType(rawValue: "InvoiceDeduction")),
        "operational funding release": .adjustment(SettlementLineType(rawValue: "ReserveAdjustment")),
        "operational funding reservation": .adjustment(SettlementLineType(rawValue: "ReserveAdjustment")),
        "security deposit release": .adjustment(SettlementLineType(rawValue: "ReserveAdjustment")),
        "security deposit reservation": .adjustment(SettlementLineType(rawValue: "ReserveAdjustment")),
        "top up": .adjustment(SettlementLineType(rawValue: "ManualCorrected")),
        "transaction amount discrepancy": .adjustment(SettlementLineType(rawValue: "ManualCorrected")),
        "payout": .payout,
    ]

    /// Action types whose rows are balance adjustments whatever their breakdown says (an `Operational Funding
    /// Reservation` row's breakdown may be `Top Up`; a reservation is a reserve movement, not a top-up).
    static let adjustmentActions: [String: SettlementLineType] = [
        "operational funding release": SettlementLineType(rawValue: "ReserveAdjustment"),
        "operational funding reservation": SettlementLineType(rawValue: "ReserveAdjustment"),
        "security deposit release": SettlementLineType(rawValue: "ReserveAdjustment"),
        "security deposit reservation": SettlementLineType(rawValue: "ReserveAdjustment"),
    ]

    /// The breakdown of a row; nil for a breakdown type no documentation page names.
    public static func of(actionType: String, breakdownType: String) -> CheckoutBreakdown? {
        if let type = adjustmentActions[actionType.lowercased()] { return .adjustment(type) }
        return breakdownTypes[breakdownType.lowercased()]
    }
}

/// The rows of one Checkout.com financial action read so far, folded into one line when the action ends.
struct CheckoutAction: Sendable {
    var line: SettlementReportLine
    var actionID: String
    var hasGross = false
    var net: Int64 = 0
    var fees: [CheckoutBreakdown.FeeColumn: Int64] = [:]
    var isPayout = false

    /// The action's line: its net the sum of the held amounts, its fees by column; a payout is a debit.
    var finished: SettlementReportLine {
        var done = line
        let currency = line.netCurrency ?? .usd
        func amount(_ units: Int64?) -> Money? { units.map { Money(minorUnits: $0, currency: currency) } }
        done.interchange = amount(fees[.interchange])
        done.schemeFees = amount(fees[.schemeFees])
        done.markup = amount(fees[.markup])
        done.commission = amount(fees[.commission])
        let signed = isPayout ? -abs(net) : net
        (done.netDebit, done.netCredit) = signed < 0 ? (amount(-signed), nil) : (nil, amount(signed))
        return done
    }
}

extension SettlementReportImporter {
    /// One row of a Checkout.com Financial Actions by Payout ID report: the line of the action before it, when this row
    /// starts another action (or has no Action ID), else nothing yet. ``finish()`` hands over the last action's line.
    mutating func checkout(_ f: [String], row: Int) throws(ReportImportError) -> [SettlementReportLine] {
        let payout = text(f, "Payout ID")
        if let payoutID, !payout.isEmpty, payout != payoutID { throw .severalPayouts(payoutID, payout) }
        if payoutID == nil, !payout.isEmpty { payoutID = payout }
        let actionID = text(f, "Action ID")
        let actionType = text(f, "Action Type")
        let breakdownType = text(f, "Breakdown Type")
        for (column, value) in [("Action ID", actionID), ("Payment ID", text(f, "Payment ID")), ("Reference", text(f, "Reference"))] {
            if let reason = ReportReference.refusal(value) { throw .invalidReference(row: row, column: column, value, reason: reason) }
        }
        let breakdown = CheckoutBreakdown.of(actionType: actionType, breakdownType: breakdownType)
        if breakdown == nil, strict { throw .unknownRecordType(row: row, column: "Breakdown Type", breakdownType) }
        let holdingCurrency = try currency(f, "Holding Currency", row: row)
        guard let held = try money(f, "Holding Currency Amount", holdingCurrency, row: row) else {
            throw .invalidField(row: row, column: "Holding Currency Amount", text(f, "Holding Currency Amount"))
        }
        // A row that starts a line of its own ends the action before it: another action, a row without an Action ID,
        // or a second gross row of one action (reported, as a line of its own, rather than merged).
        var done: [SettlementReportLine] = []
        let startsLine: Bool
        switch breakdown {
        case .fee: startsLine = false
        case nil, .gross, .chargeback, .adjustment, .payout: startsLine = pendingAction?.hasGross ?? false
        }
        if let pending = pendingAction, actionID.isEmpty || pending.actionID != actionID || startsLine || pending.isPayout {
            done.append(pending.finished)
            pendingAction = nil
        }
        var action = pendingAction ?? CheckoutAction(line: checkoutLine(f, actionID: actionID, currency: holdingCurrency), actionID: actionID)
        action.net += held.minorUnits
        switch breakdown {
        case .fee(let column):
            action.fees[column, default: 0] -= held.minorUnits
        case .gross(let type):
            action.line.type = type
            try checkoutGross(f, held: held, into: &action, row: row)
        case .chargeback:
            action.line.type = held.isNegative ? .chargeback : SettlementLineType(rawValue: "ChargebackReversed")
            try checkoutGross(f, held: held, into: &action, row: row)
        case .adjustment(let type):
            action.line.type = type
            action.hasGross = true
        case .payout:
            action.line.type = .merchantPayout
            action.hasGross = true
            action.isPayout = true
        case nil:
            // Kept under its own name: reconciliation reports it as an unmapped record, never dropped.
            action.line.type = SettlementLineType(rawValue: breakdownType.isEmpty ? "(empty Breakdown Type)" : breakdownType)
            action.hasGross = true
        }
        if actionID.isEmpty {
            done.append(action.finished)
        } else {
            pendingAction = action
        }
        return done
    }

    /// The gross of an action's gross row: its processing amount in the processing currency (the held amount when the
    /// report has none), converted at `FX Rate Applied` when the two currencies differ.
    private func checkoutGross(_ f: [String], held: Money, into action: inout CheckoutAction, row: Int) throws(ReportImportError) {
        let processing = try currency(f, "Processing Currency", row: row) ?? held.currency
        let gross = try money(f, "Processing Currency Amount", processing, row: row) ?? held
        (action.line.grossDebit, action.line.grossCredit) = Self.split(gross)
        action.line.grossCurrency = gross.currency
        if gross.currency != held.currency {
            let rateText = text(f, "FX Rate Applied")
            guard !rateText.isEmpty else { throw .invalidField(row: row, column: "FX Rate Applied", rateText) }
            do { action.line.exchangeRate = try ReportNumber.exchangeRate(rateText) } catch {
                throw .invalidNumber(row: row, column: "FX Rate Applied", rateText, error)
            }
        }
        action.hasGross = true
    }

    /// A new action's line, with no money yet (a fee-only action stays a `Fee` line: a cost the ledger books).
    private func checkoutLine(_ f: [String], actionID: String, currency: Currency?) -> SettlementReportLine {
        let method = text(f, "Payment Method").lowercased()
        return SettlementReportLine(
            companyAccount: text(f, "Client Entity ID"),
            // The entity and its currency accounts are Checkout.com's, not a merchant account of ours: not checked.
            merchantAccount: "",
            pspReference: text(f, "Payment ID"),
            merchantReference: text(f, "Reference"),
            // Checkout.com's fees are its own breakdown, not the contract's interchange++ split: a payment method the
            // contract does not name, so a line's fees are checked for conservation only.
            paymentMethod: method.isEmpty ? "checkout" : "checkout:" + method,
            creationDate: nil,
            timeZone: "",
            type: .fee,
            modificationReference: actionID,
            grossCurrency: nil,
            grossDebit: nil,
            grossCredit: nil,
            exchangeRate: nil,
            netCurrency: currency,
            netDebit: nil,
            netCredit: nil,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: text(f, "Card Type").lowercased(),
            modificationMerchantReference: "",
            batchNumber: 0
        )
    }
}
