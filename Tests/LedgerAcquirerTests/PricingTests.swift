import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import Testing

struct PricingTests {
    func rate(_ text: String) throws -> Rate { try Rate(decimal: text) }

    @Test("worked example: gross 5.00, interchange 0.07, scheme 0.01, markup 0.04 → net 4.88")
    func workedExample() throws {
        let fees = try PricingSchedule.demo().fees(on: usd(500), network: .visa, funding: .credit)
        #expect(fees.interchange == usd(7) && fees.schemeFee == usd(1) && fees.markup == usd(4) && fees.commission == nil)
        var scenario = try SettlementScenario()
        let report = try scenario.settle()
        let line = try #require(report.lines.first { $0.merchantReference == "order-1" })
        #expect(line.type == .settled)
        #expect(line.grossCredit == usd(500) && line.grossDebit == nil)
        #expect(line.interchange == usd(7) && line.schemeFees == usd(1) && line.markup == usd(4) && line.commission == nil)
        #expect(line.netCredit == usd(488) && line.netDebit == nil)
        #expect(line.paymentMethod == "visa" && line.paymentMethodVariant == "visacredit")
    }

    @Test(
        "fees are rounded per component, by the named rule",
        arguments: [
            (RoundingRule.halfUp, Int64(1)), (.halfEven, 0), (.down, 0), (.up, 1),
        ]
    )
    func roundingPerComponent(rule: RoundingRule, each: Int64) throws {
        // Each component is exactly half a cent on 1.00: rounded one by one, not as a 1.5 cent sum.
        let half = FeeComponent(rate: try rate("0.005"))
        let ruleEntry = InterchangeRule(network: .visa, fundingType: .credit, interchange: half, schemeFee: half)
        let schedule = PricingSchedule(
            currency: .usd,
            model: .interchangePlusPlus(rules: [ruleEntry], fallback: ruleEntry, markup: half),
            rounding: rule
        )
        let fees = try schedule.fees(on: usd(100), network: .visa, funding: .credit)
        #expect(fees.interchange == usd(each) && fees.schemeFee == usd(each) && fees.markup == usd(each))
        #expect(try fees.total(in: .usd) == usd(3 * each))
    }

    @Test("interchange depends on network × funding; fixed parts are added after rounding")
    func tableLookup() throws {
        let schedule = PricingSchedule.demo()
        let debit = try schedule.fees(on: usd(1234), network: .visa, funding: .debit)
        // 0.20 % of 12.34 = 2.468 → 2, plus 0.05 fixed.
        #expect(debit.interchange == usd(7))
        let amex = try schedule.fees(on: usd(3333), network: .amex, funding: .credit)
        // 1.90 % of 33.33 = 63.327 → 63.
        #expect(amex.interchange == usd(63))
        #expect(throws: MoneyError.self) { try schedule.fees(on: Money(minorUnits: 100, currency: .eur), network: .visa, funding: .credit) }
    }

    @Test("blended pricing: one commission column")
    func blended() throws {
        let schedule = PricingSchedule(currency: .usd, model: .blended(commission: FeeComponent(rate: try rate("0.029"), fixedMinorUnits: 30)))
        var scenario = try SettlementScenario(configuration: AcquirerModelConfiguration(pricing: [schedule]))
        let report = try scenario.settle()
        let line = try #require(report.lines.first { $0.merchantReference == "order-2" && $0.type == .settled })
        // 2.9 % of 20.00 = 0.58, + 0.30.
        #expect(line.commission == usd(88) && line.interchange == nil && line.markup == nil && line.schemeFees == nil)
        #expect(line.netCredit == usd(2000 - 88))
        #expect(report.sumOfNets == report.payout.amount.minorUnits)
    }

    @Test("every line: net = gross − fees; Σ line nets = payout; the MerchantPayout line carries it")
    func conservation() throws {
        for feesOnRefunds in [false, true] {
            var schedule = PricingSchedule.demo()
            schedule.feesOnRefunds = feesOnRefunds
            var scenario = try SettlementScenario(configuration: AcquirerModelConfiguration(pricing: [schedule]))
            let report = try scenario.settle()
            #expect(report.itemLines.count == 6)
            for line in report.itemLines {
                #expect(line.signedNetMinorUnits == line.signedGrossMinorUnits - line.totalFeesMinorUnits)
            }
            let refund = try #require(report.lines.first { $0.type == .refunded })
            #expect(refund.grossDebit == usd(750) && refund.grossCredit == nil)
            #expect(refund.netDebit == (feesOnRefunds ? usd(750 + refund.totalFeesMinorUnits) : usd(750)))
            #expect(feesOnRefunds == (refund.totalFeesMinorUnits > 0))
            #expect(report.sumOfNets == report.payout.amount.minorUnits)
            #expect(report.payoutLine?.netDebit == report.payout.amount)
            #expect(report.payoutLine?.modificationReference == report.payout.payoutReference)
            #expect(try scenario.state.payout(batchNumber: report.batchNumber) == report.payout)
        }
    }

    @Test("random batches: per-line identity and Σ nets = payout hold for any amounts (seeded)")
    func randomBatchesConserve() throws {
        let baseSeed: UInt64 = environmentInteger("ACQUIRER_PROPERTY_SEED") ?? 99
        for run in 0..<200 {
            let seed = SeededRandom.mix(baseSeed &+ UInt64(run))
            var random = SeededRandom(seed: seed)
            var state = AcquirerModelState(seed: seed)
            var items: [SettlementItem] = []
            let cards = ["tok_visa", "tok_mastercard", "tok_amex", "tok_discover", "tok_visa_debit", "tok_mastercard_prepaid"]
            for index in 0..<Int(random.int(in: 1...12)) {
                let reference = "o\(index)"
                let amount = usd(random.int(in: 1...50_000))
                _ = try state.approve(reference, amount, token: cards[Int(random.next(below: UInt64(cards.count)))])
                _ = try state.capture(
                    CaptureRequest(
                        authorizationReference: reference,
                        modificationReference: "c\(index)",
                        amount: amount,
                        isFinal: true
                    ),
                    now: monday
                )
                items.append(SettlementItem(kind: .capture, authorizationReference: reference, modificationReference: "c\(index)", amount: amount))
                if random.chance(numerator: 1, denominator: 3) {
                    let refund = usd(random.int(in: 1...amount.minorUnits))
                    _ = try state.refund(
                        RefundRequest(authorizationReference: reference, modificationReference: "r\(index)", amount: refund),
                        now: monday
                    )
                    items.append(SettlementItem(kind: .refund, authorizationReference: reference, modificationReference: "r\(index)", amount: refund))
                }
            }
            let report = try state.submitBatch(SettlementBatchRequest(batchReference: "b", currency: .usd, items: items), now: monday)
            let lineIdentity = report.itemLines.allSatisfy { $0.signedNetMinorUnits == $0.signedGrossMinorUnits - $0.totalFeesMinorUnits }
            #expect(lineIdentity, "seed \(seed)")
            #expect(report.sumOfNets == report.payout.amount.minorUnits, "seed \(seed)")
            #expect(report.itemLines.count == items.count, "seed \(seed)")
        }
    }

    @Test("batch validation: unknown, mismatched, repeated and already settled items are refused")
    func batchValidation() throws {
        var scenario = try SettlementScenario()
        let good = scenario.batch
        func with(_ change: (inout SettlementBatchRequest) -> Void) -> SettlementBatchRequest {
            var copy = good
            change(&copy)
            return copy
        }
        let before = scenario.state
        #expect(errorCode { try scenario.state.submitBatch(with { $0.items[0].modificationReference = "nope" }, now: monday) } == .unknownReference)
        #expect(errorCode { try scenario.state.submitBatch(with { $0.items[0].amount = usd(499) }, now: monday) } == .settlementMismatch)
        #expect(errorCode { try scenario.state.submitBatch(with { $0.items[0].kind = .refund }, now: monday) } == .settlementMismatch)
        #expect(errorCode { try scenario.state.submitBatch(with { $0.items.append($0.items[0]) }, now: monday) } == .duplicateReference)
        #expect(
            errorCode {
                try scenario.state.submitBatch(
                    with {
                        $0.currency = .eur
                        $0.items = []
                    },
                    now: monday
                )
            } == .currencyMismatch
        )
        #expect(scenario.state == before)
        let report = try scenario.settle()
        // Same batch again: the same report; a different batch with the same items: already settled.
        #expect(try scenario.settle() == report)
        #expect(errorCode { try scenario.state.submitBatch(with { $0.batchReference = "other" }, now: monday) } == .alreadySettled)
        #expect(errorCode { try scenario.state.submitBatch(with { $0.items.removeLast() }, now: monday) } == .duplicateReference)
        #expect(errorCode { try scenario.state.payout(batchNumber: report.batchNumber + 1) } == .unknownBatch)
    }
}
