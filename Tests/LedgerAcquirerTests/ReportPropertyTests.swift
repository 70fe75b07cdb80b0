import Foundation
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// Issue 52's property: random well-formed Adyen SDR files — random record types (in random case), currencies and
/// settlement currencies (a presentment currency settled in another at a 15-digit rate), column orders and versions
/// (25–49 columns), number spellings (`.11`, `+`, credited fees), blank lines — whose lines add up per settlement
/// currency reconcile with no `payout_mismatch`; the same file with one line's net one cent off reports exactly that
/// line (and its currency's payout), nothing else.
@Suite struct ReportPropertyTests {
    /// SplitMix64: reproducible from the seed a failure prints.
    struct Random: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
        mutating func bool() -> Bool { next() % 2 == 0 }
        mutating func pick<T>(_ values: [T]) -> T { values[int(0...values.count - 1)] }
    }

    static let base = SettlementReportCSV.columns
    static let currencies = ["USD", "CAD", "EUR", "JPY"].map { Currency(code: $0)! }
    static let costTypes = ["Fee", "MiscCosts", "PaymentCost", "InvoiceDeduction", "DepositCorrection", "Balancetransfer", "ManualCorrected"]

    struct File {
        var text: String
        var items: [SettlementBatchItem]
        /// Each capture or refund line's reference, its settlement currency, and whether it is in one currency.
        var priced: [(reference: String, settlement: Currency, oneCurrency: Bool)]
    }

    /// A number as an export may spell it: `.11` for 0.11, a `+` on a positive amount.
    static func spell(_ money: Money, _ random: inout Random) -> String {
        var text = money.decimalString
        if text.hasPrefix("0."), random.bool() { text.removeFirst() }
        if text.hasPrefix("-0."), random.bool() { text = "-" + text.dropFirst(2) }
        if !money.isNegative, random.int(0...3) == 0 { text = "+" + text }
        return text
    }

    static func cased(_ type: String, _ random: inout Random) -> String {
        switch random.int(0...3) {
        case 0: type.lowercased()
        case 1: type.uppercased()
        default: type
        }
    }

    /// A random well-formed report whose lines add up per settlement currency; `offByOneCent` alters one priced line's net.
    static func file(seed: UInt64, offByOneCent: Int? = nil) -> File {
        var random = Random(state: seed)
        // Column version: the 23 read columns, reserved and optional ones up to 25…49, in a random order.
        let extra =
            ["Booking Date", "Booking Date TimeZone", "Additional Type", "Installments", "Issuer Country", "Shopper Country"]
            + (4...26).map { "Reserved\($0)" }
        var header = base + Array(extra.prefix(random.int(2...26)))
        if random.bool() {
            header.shuffle(using: &random)
        } else if random.bool() {
            header.removeAll { $0 == "Psp Reference" }
            header.append("Psp Reference")
        }
        let settlementCurrencies = Array(currencies.shuffled(using: &random).prefix(random.int(1...3)))
        var items: [SettlementBatchItem] = []
        var priced: [(String, Currency, Bool)] = []
        var rows: [[String: String]] = []
        var nets: [Currency: Int64] = [:]
        let t0 = Date(timeIntervalSince1970: 1_781_690_400)
        for n in 0..<random.int(3...25) {
            let settlement = random.pick(settlementCurrencies)
            var row: [String: String] = [
                "Company Account": "LedgerCo", "Merchant Account": "LedgerUS", "Creation Date": "2026-06-17 10:00:00", "TimeZone": "CET",
                "Batch Number": "7", "Net Currency": settlement.code, "Modification Reference": "psp-\(n)",
            ]
            let choice = random.int(0...9)
            var net: Int64
            if choice < 7 {
                // A capture or a refund, in the settlement currency or (a third of them) presented in another at a rate.
                let refund = choice >= 5
                let presentment = random.int(0...2) == 0 ? random.pick(currencies) : settlement
                let gross = Int64(random.int(100...250_000))
                let rate =
                    presentment == settlement
                    ? Rate(numerator: 1, denominator: 1)
                    : Rate(
                        numerator: Int64(random.int(1...3_000_000)) * 1_000_000_000 + Int64(random.int(0...999_999_999)),
                        denominator: 1_000_000_000_000_000
                    )
                let converted = try! SettlementLineEntry.convert(gross, from: presentment, to: settlement, at: rate)
                var fees: [Int64] = (0..<4).map { _ in Int64(random.int(0...40)) }
                if random.int(0...4) == 0 { fees[0] = -Int64(random.int(1...20)) }  // a credited commission
                net = converted - fees.reduce(0, +)
                if refund { net = -converted }  // no fees on refunds here
                let ours = "mod-\(n)"
                items.append(
                    SettlementBatchItem(
                        kind: refund ? .refund : .capture,
                        orderID: "o-\(n)",
                        modificationReference: ours,
                        pspModificationReference: "psp-\(n)",
                        amount: Money(minorUnits: gross, currency: presentment),
                        recordedAt: t0,
                        position: Int64(n)
                    )
                )
                priced.append((ours, settlement, presentment == settlement))
                row["Type"] = cased(refund ? random.pick(["Refunded", "RefundedBulk"]) : random.pick(["Settled", "SettledBulk"]), &random)
                row["Psp Reference"] = "8816\(n)"
                row["Merchant Reference"] = "o-\(n)"
                row["Payment Method"] = "visa"
                row["Modification Merchant Reference"] = ours
                row["Gross Currency"] = presentment.code
                row[refund ? "Gross Debit (GC)" : "Gross Credit (GC)"] = spell(Money(minorUnits: gross, currency: presentment), &random)
                // Written as Adyen writes it: 15 fraction digits (1.000000000000000 when one currency, or 1).
                let scaled = presentment == settlement ? 1_000_000_000_000_000 : rate.numerator
                let fraction = String(scaled % 1_000_000_000_000_000)
                row["Exchange Rate"] =
                    presentment == settlement && random.bool()
                    ? "1" : "\(scaled / 1_000_000_000_000_000)." + String(repeating: "0", count: 15 - fraction.count) + fraction
                if !refund {
                    for (column, fee) in zip(["Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)"], fees) {
                        row[column] = spell(Money(minorUnits: fee, currency: settlement), &random)
                    }
                }
                if offByOneCent == priced.count - 1 { net += 1 }
            } else {
                // A cost, a correction, a reserve movement, a balance transfer: the ledger's to book.
                net = Int64(random.int(-5000...5000))
                row["Type"] = cased(random.pick(costTypes), &random)
            }
            let magnitude = Money(minorUnits: abs(net), currency: settlement)
            row[net < 0 ? "Net Debit (NC)" : "Net Credit (NC)"] = spell(magnitude, &random)
            nets[settlement, default: 0] += net - (offByOneCent == priced.count - 1 && choice < 7 ? 1 : 0)
            rows.append(row)
        }
        // One payout line per settlement currency: Σ nets (as they should add up).
        for settlement in settlementCurrencies where nets[settlement] != nil {
            let payout = nets[settlement]!
            rows.append([
                "Company Account": "LedgerCo", "Merchant Account": "LedgerUS", "Type": cased("MerchantPayout", &random),
                "Modification Reference": "PAYOUT-\(settlement.code)", "Net Currency": settlement.code, "Batch Number": "7",
                payout >= 0 ? "Net Debit (NC)" : "Net Credit (NC)": Money(minorUnits: abs(payout), currency: settlement).decimalString,
            ])
        }
        let newline = random.bool() ? "\r\n" : "\n"
        var text = (random.bool() ? "\u{FEFF}" : "") + (random.bool() ? newline + newline : "")
        func csv(_ fields: [String]) -> String {
            fields.map { $0.contains(where: { ",\"\r\n".contains($0) }) ? "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : $0 }
                .joined(separator: ",")
        }
        text += csv(header) + newline
        for row in rows {
            text += csv(header.map { row[$0] ?? "" }) + newline
            if random.int(0...9) == 0 { text += newline }
        }
        return File(text: text, items: items, priced: priced)
    }

    func reconcile(_ file: File) throws -> ReconciliationRecorded {
        var lines: [SettlementReportLine] = []
        try SettlementReportImport.read(Array(file.text.utf8), ledgerColumns: SettlementReportCSV.columns, chunk: 41) { line, _ in
            lines.append(line)
        }
        return Reconciliation.reconcile(
            batchID: "S-7",
            currency: .usd,
            items: file.items,
            lines: lines,
            laterLines: [],
            settledElsewhere: [],
            report: "upload-p",
            expectedFees: { _, _ in nil }
        )
    }

    @Test(arguments: 0..<200) func wellFormedFilesReconcileAndOneCentOffIsExactlyThatLine(seed: Int) throws {
        let file = Self.file(seed: UInt64(seed))
        let result = try reconcile(file)
        // Every capture and refund matched; only the costs are left for the clerk.
        #expect(result.breaks.allSatisfy { $0.breakClass == .unmatchedAdjustment }, "seed \(seed): \(result.breaks.map(\.detail))")
        #expect(result.matched == file.priced.count, "seed \(seed)")
        // A line in two currencies may differ from its converted gross by one minor unit of rounding (booked to 6195):
        // the cent is altered on a line in one currency.
        let exact = file.priced.indices.filter { file.priced[$0].oneCurrency }
        guard !exact.isEmpty else { return }
        let altered = exact[(seed * 7) % exact.count]
        let off = Self.file(seed: UInt64(seed), offByOneCent: altered)
        let broken = try reconcile(off).breaks.filter { $0.breakClass != .unmatchedAdjustment }
        let (reference, settlement, _) = file.priced[altered]
        #expect(
            broken.map { "\($0.breakClass.rawValue) \($0.reference)" }.sorted()
                == ["fee_mismatch \(reference)", "payout_mismatch PAYOUT-\(settlement.code)"],
            "seed \(seed): \(broken.map(\.detail))"
        )
    }
}
