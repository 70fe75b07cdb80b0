import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// The accounting journal's fold (``AccountingJournal``): which events post, that every entry balances,
/// and how captures and refunds split into the chart's accounts.
@Suite struct JournalTests {
    /// Folds `events` in order; the entries they post.
    func post(_ events: [LedgerEvent]) -> [JournalEntry] {
        var journal = AccountingJournal()
        return events.enumerated().compactMap { index, event in
            journal.post(event, position: Int64(index + 1), recordedAtMicros: 1_000 + Int64(index), effectiveAtMicros: 2_000)
        }
    }

    func balance(_ entries: [JournalEntry], _ account: JournalAccount) -> Int64 {
        entries.flatMap(\.lines).filter { $0.account == account }.reduce(0) { $0 + $1.debitMinorUnits - $1.creditMinorUnits }
    }

    /// Every event type of the catalogue (one sample each): the ones that move money post one balanced
    /// entry with lines, every other type posts nothing.
    @Test func everyEventTypeThatMovesMoneyPostsABalancedEntryAndNoOtherTypePosts() {
        var journal = AccountingJournal()
        var posted: Set<String> = []
        for (index, event) in CatalogueSamples.all.enumerated() {
            let entry = journal.post(event, position: Int64(index + 1), recordedAtMicros: 0, effectiveAtMicros: 0)
            if case .dispute(.closed(let closed)) = event, closed.credited.isZero, closed.debited.isZero {
                #expect(entry == nil, "a close that moves no money posts nothing")
                continue
            }
            if AccountingJournal.postingTypes.contains(event.type) {
                guard let entry else {
                    Issue.record("\(event.type) posted nothing")
                    continue
                }
                #expect(entry.isBalanced, "\(event.type): \(entry)")
                #expect(!entry.lines.isEmpty, "\(event.type) posted no lines")
                #expect(entry.lines.allSatisfy { ($0.debitMinorUnits == 0) != ($0.creditMinorUnits == 0) })
                #expect(entry.lines.allSatisfy { $0.debitMinorUnits >= 0 && $0.creditMinorUnits >= 0 })
                posted.insert(event.type)
            } else {
                #expect(entry == nil, "\(event.type) moves no money but posted \(String(describing: entry))")
            }
        }
        #expect(posted == Set(AccountingJournal.postingTypes).subtracting([DisputeClosed.eventType]))
    }

    /// Captures in parts recognise exactly the order's subtotal, shipping and tax once it is all captured,
    /// whatever the parts; a refund of everything reverses them; each entry balances.
    @Test(arguments: [[5900], [2000, 3900], [1, 1, 5898], [3333, 2567], [5900, 100]])
    func capturesSplitByTheOrdersAmountsAndAddUpToThem(parts: [Int64]) throws {
        let order = EventSamples.order
        let amounts = EventSamples.amounts.amounts
        var events: [LedgerEvent] = [
            .domain(
                .order(
                    .opened(
                        OrderOpened(
                            orderID: order,
                            merchantReference: order.rawValue,
                            lines: EventSamples.amounts.lines,
                            shipping: ShippingSelection(
                                shippingMethodID: ShippingMethodID("standard")!,
                                name: "Standard",
                                transitDays: 5,
                                price: usd("5.00")
                            ),
                            amounts: amounts,
                            contactRef: "c-1",
                            openedAt: t0
                        )
                    )
                )
            )
        ]
        for (index, part) in parts.enumerated() {
            events.append(
                .domain(
                    .hold(
                        .captured(
                            HoldCaptured(
                                orderID: order,
                                amount: Money(minorUnits: part, currency: .usd),
                                isFinal: false,
                                released: usd("0.00"),
                                modificationReference: "m\(index)",
                                pspModificationReference: "p\(index)",
                                capturedAt: t0
                            )
                        )
                    )
                )
            )
        }
        let captured = parts.reduce(0, +)
        let entries = post(events)
        #expect(entries.count == parts.count)
        #expect(entries.allSatisfy { $0.isBalanced })
        let total = amounts.total.minorUnits
        #expect(balance(entries, .cardReceivable) == captured)
        #expect(-balance(entries, .otherIncome) == max(0, captured - total))
        if captured >= total {
            #expect(-balance(entries, .sales) == amounts.subtotal.minorUnits)
            #expect(-balance(entries, .shippingIncome) == amounts.shipping.minorUnits)
            #expect(-balance(entries, .salesTaxPayable) == amounts.tax.minorUnits)
        }
        // Refund all of it: income and tax come back to zero, the receivable too.
        let refund = LedgerEvent.domain(
            .hold(
                .refunded(
                    HoldRefunded(
                        orderID: order,
                        amount: Money(minorUnits: captured, currency: .usd),
                        reason: "returned",
                        modificationReference: "r",
                        pspModificationReference: "pr",
                        refundedAt: t0
                    )
                )
            )
        )
        let all = post(events + [refund])
        #expect(all.allSatisfy { $0.isBalanced })
        #expect(balance(all, .cardReceivable) == 0)
        #expect(balance(all, .salesTaxPayable) == 0)
        #expect(balance(all, .refunds) == -(balance(all, .sales) + balance(all, .shippingIncome) + balance(all, .otherIncome)))
    }

    /// A batch whose refunds exceed its captures has a negative gross: it posts on the other sides.
    @Test func aNegativeGrossPostsOnTheOtherSide() throws {
        let closed = SettlementBatchClosed(
            batchID: "b",
            captureCount: 1,
            refundCount: 1,
            grossCredit: usd("1.00"),
            grossDebit: usd("3.00"),
            gross: usd("-2.00"),
            itemsSHA256: nil
        )
        let entry = try #require(post([.settlement(.closed(closed))]).first)
        #expect(entry.isBalanced)
        #expect(entry.lines.contains(JournalLine(account: .acquirerClearing, debitMinorUnits: 0, creditMinorUnits: 200)))
        #expect(entry.lines.contains(JournalLine(account: .cardReceivable, debitMinorUnits: 200, creditMinorUnits: 0)))
    }

    /// Cleared fees that do not explain gross − net leave the difference on its own account.
    @Test func clearedFeesThatDoNotAddUpLeaveADifference() throws {
        let cleared = SettlementBatchCleared(
            batchID: "b",
            lineCount: 2,
            gross: usd("100.00"),
            interchange: usd("1.00"),
            schemeFees: usd("0.50"),
            markup: usd("0.25"),
            commission: usd("0.00"),
            net: usd("98.00")
        )
        let entry = try #require(post([.settlement(.cleared(cleared))]).first)
        #expect(entry.isBalanced)
        #expect(balance([entry], .settlementDifferences) == 25)
        #expect(balance([entry], .acquirerClearing) == -200)
    }

    @Test func exportRowsCarryDecimalAmountsAndEveryColumn() throws {
        let entry = try #require(post([CatalogueSamples.all.first { $0.type == "BankPayoutMatched" }!]).first)
        let csv = JournalExport.csv(entry, .exact)
        #expect(csv.split(separator: "\r\n").count == entry.lines.count)
        let json = JournalExport.jsonl(entry)
        for line in json.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(object.keys) == Set(JournalExport.columns))
            #expect(object["position"] as? Int == 1)
            #expect((object["debit"] as? String)?.contains(".") == true)
        }
        #expect(JournalExport.csvHeader == JournalExport.columns.joined(separator: ",") + "\r\n")
    }
}

@Suite struct FeedCoreTests {
    /// The retry schedule: within [d/2, d] of the doubling delay, capped, the same for the same inputs.
    @Test func retryDelaysDoubleWithJitterUpToTheCap() {
        let policy = WebhookRetryPolicy(baseDelayMicros: 1_000_000, maximumDelayMicros: 3_600_000_000, giveUpAfterMicros: 86_400_000_000, seed: 7)
        var ceiling: Int64 = 1_000_000
        for attempt in 1...30 {
            let delay = policy.delayMicros(afterFailedAttempts: attempt, endpoint: "e", position: 9)
            #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay) outside [\(ceiling / 2), \(ceiling)]")
            #expect(delay == policy.delayMicros(afterFailedAttempts: attempt, endpoint: "e", position: 9))
            ceiling = min(ceiling * 2, 3_600_000_000)
        }
        let delays = (1...20).map { policy.delayMicros(afterFailedAttempts: 3, endpoint: "e", position: Int64($0)) }
        #expect(Set(delays).count > 10, "the jitter varies with the position")
        #expect(!policy.givesUp(firstFailureMicros: 0, nowMicros: 86_399_999_999))
        #expect(policy.givesUp(firstFailureMicros: 0, nowMicros: 86_400_000_000))
        let other = WebhookRetryPolicy(seed: 8)
        #expect(
            (1...10).map { other.delayMicros(afterFailedAttempts: 2, endpoint: "e", position: Int64($0)) }
                != (1...10).map { WebhookRetryPolicy(seed: 7).delayMicros(afterFailedAttempts: 2, endpoint: "e", position: Int64($0)) }
        )
    }

    /// A frame parses back into its id, type and the event's JSON, across arbitrary chunk boundaries.
    @Test func serverSentEventFramesParseBackWhateverTheChunks() {
        let text = ": hello\n\nid: 7\nevent: OrderOpened\ndata: {\"a\":1}\n\n: keep-alive\n\nid: 8\r\nevent: X\r\ndata: {}\r\n\r\n"
        let bytes = Array(text.utf8)
        for chunk in [1, 2, 3, 7, bytes.count] {
            var parser = ServerSentEvents.Parser()
            var messages: [ServerSentEvents.Message] = []
            for start in stride(from: 0, to: bytes.count, by: chunk) { messages += parser.feed(bytes[start..<min(start + chunk, bytes.count)]) }
            #expect(messages.map(\.id) == ["7", "8"])
            #expect(messages.map(\.event) == ["OrderOpened", "X"])
            #expect(messages.map(\.data) == ["{\"a\":1}", "{}"])
        }
        #expect(ServerSentEvents.position(lastEventID: "42") == 42)
        #expect(ServerSentEvents.position(lastEventID: "-1") == nil)
        #expect(ServerSentEvents.position(lastEventID: "x") == nil)
    }
}
