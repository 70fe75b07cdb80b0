/// The accounting journal: a pure fold of the log into balanced double-entry entries (docs/journal.md).
///
/// Fold every event in position order with ``post(_:position:recordedAtMicros:effectiveAtMicros:)``; an
/// event that moves money returns its entry, every other event returns nil (an `OrderOpened` is still
/// remembered: its amounts split later captures). Which events move money, and how:
///
/// | event | debit | credit |
/// |---|---|---|
/// | `HoldCaptured` | 1100 card receivable | 4000 sales, 4100 shipping, 2100 sales tax, 4200 other income |
/// | `HoldRefunded` | 4900 refunds, 2100 sales tax | 1100 card receivable |
/// | `SettlementBatchClosed` | 1200 acquirer clearing (gross) | 1100 card receivable |
/// | `SettlementBatchCleared` | 6100–6130 fees, 6190 differences | 1200 acquirer clearing |
/// | `SettlementPayoutScheduled` | 1300 payouts in transit | 1200 acquirer clearing |
/// | `BankPayoutMatched` | 1000 bank (the deposits) | 1300 payouts in transit |
/// | `ChargebackReceived`, `SecondChargebackReceived`, `DisputeClosed` (debited) | 4950 chargebacks | 1200 acquirer clearing |
/// | `ChargebackReversed`, `DisputeClosed` (credited) | 1200 acquirer clearing | 4950 chargebacks |
///
/// A chargeback is debited by the acquirer in a settlement report (its Chargeback line lowers the
/// batch's payout), so it comes out of acquirer clearing; a reversal puts it back. A `DisputeClosed`
/// that moves no money posts nothing. `SettlementPayoutPaid` (the acquirer's word that it paid) posts nothing: the money
/// is in the bank when the bank's statement shows it, matched to the payout (`BankPayoutMatched`, issue 53).
///
/// A capture is split by the order's amounts cumulatively: after captures totalling C of an order with
/// total T, tax ⌊min(C,T)·tax/T⌋ and shipping ⌊min(C,T)·shipping/T⌋ are recognised, goods the rest of
/// min(C,T), other income C − min(C,T). Each capture posts the difference from the previous captures,
/// so the captures of a fully captured order recognise exactly its subtotal, shipping and tax. Refunds
/// are split the same way over their own running total. Authorizations, increments, voids and expiries
/// move no money (a hold is not a receivable) and post nothing.
///
/// An amount that comes out negative (a batch whose refunds exceed its captures) posts on the other side.
public struct AccountingJournal: Sendable {
    struct OrderBook: Sendable {
        var amounts: OrderAmounts
        var captured: Int64 = 0
        var refunded: Int64 = 0
    }

    private var orders: [String: OrderBook] = [:]

    public init() {}

    /// The event types that can post an entry.
    public static let postingTypes: [String] = [
        HoldCaptured.eventType, HoldRefunded.eventType, SettlementBatchClosed.eventType, SettlementBatchCleared.eventType,
        SettlementPayoutScheduled.eventType, BankPayoutMatched.eventType, ChargebackReceived.eventType,
        SecondChargebackReceived.eventType, ChargebackReversed.eventType, DisputeClosed.eventType,
    ]
    /// The event types the fold also needs to see before those (the orders' amounts).
    public static let contextTypes: [String] = [OrderOpened.eventType]

    /// Folds one event; its entry when it moves money.
    public mutating func post(_ event: LedgerEvent, position: Int64, recordedAtMicros: Int64, effectiveAtMicros: Int64) -> JournalEntry? {
        var builder = Builder()
        let reference: String
        let currency: Currency
        switch event {
        case .domain(.order(.opened(let opened))):
            orders[opened.orderID.rawValue] = OrderBook(amounts: opened.amounts)
            return nil
        case .domain(.hold(.captured(let captured))):
            reference = captured.orderID.rawValue
            currency = captured.amount.currency
            let amount = captured.amount.minorUnits
            var book = orders[reference]
            let before = Self.split(book?.captured ?? 0, of: book?.amounts)
            let after = Self.split((book?.captured ?? 0) + amount, of: book?.amounts)
            book?.captured += amount
            orders[reference] = book
            builder.debit(.cardReceivable, amount)
            builder.credit(.sales, after.goods - before.goods)
            builder.credit(.shippingIncome, after.shipping - before.shipping)
            builder.credit(.salesTaxPayable, after.tax - before.tax)
            builder.credit(.otherIncome, after.other - before.other)
        case .domain(.hold(.refunded(let refunded))):
            reference = refunded.orderID.rawValue
            currency = refunded.amount.currency
            let amount = refunded.amount.minorUnits
            var book = orders[reference]
            let before = Self.split(book?.refunded ?? 0, of: book?.amounts)
            let after = Self.split((book?.refunded ?? 0) + amount, of: book?.amounts)
            book?.refunded += amount
            orders[reference] = book
            builder.debit(
                .refunds,
                (after.goods - before.goods) + (after.shipping - before.shipping) + (after.other - before.other)
            )
            builder.debit(.salesTaxPayable, after.tax - before.tax)
            builder.credit(.cardReceivable, amount)
        case .settlement(.closed(let closed)):
            reference = closed.batchID
            currency = closed.gross.currency
            builder.debit(.acquirerClearing, closed.gross.minorUnits)
            builder.credit(.cardReceivable, closed.gross.minorUnits)
        case .settlement(.cleared(let cleared)):
            reference = cleared.batchID
            currency = cleared.net.currency
            let fees: [(JournalAccount, Int64)] = [
                (.interchangeFees, cleared.interchange.minorUnits), (.schemeFees, cleared.schemeFees.minorUnits),
                (.acquirerMarkup, cleared.markup.minorUnits), (.acquirerCommission, cleared.commission.minorUnits),
            ]
            let withheld = cleared.gross.minorUnits - cleared.net.minorUnits
            for (account, amount) in fees { builder.debit(account, amount) }
            builder.debit(.settlementDifferences, withheld - fees.reduce(0) { $0 + $1.1 })
            builder.credit(.acquirerClearing, withheld)
        case .settlement(.payoutScheduled(let scheduled)):
            reference = scheduled.batchID
            currency = scheduled.amount.currency
            builder.debit(.payoutsInTransit, scheduled.amount.minorUnits)
            builder.credit(.acquirerClearing, scheduled.amount.minorUnits)
        case .bankPayoutMatched(let matched):
            // The deposit the bank's statement shows, matched to its payouts: out of transit into the bank.
            guard !matched.amount.isZero else { return nil }
            reference = matched.payouts.map(\.batchID).joined(separator: " ")
            currency = matched.amount.currency
            builder.debit(.bank, matched.amount.minorUnits)
            builder.credit(.payoutsInTransit, matched.amount.minorUnits)
        case .dispute(let dispute):
            let debited: Money
            switch dispute {
            case .chargeback(let e): debited = e.amount
            case .secondChargeback(let e): debited = e.amount
            case .reversed(let e): debited = Money(minorUnits: -e.amount.minorUnits, currency: e.amount.currency)
            case .closed(let e): debited = Money(minorUnits: e.debited.minorUnits - e.credited.minorUnits, currency: e.debited.currency)
            default: return nil
            }
            guard !debited.isZero else { return nil }
            reference = dispute.disputeID
            currency = debited.currency
            builder.debit(.chargebacks, debited.minorUnits)
            builder.credit(.acquirerClearing, debited.minorUnits)
        default:
            return nil
        }
        return JournalEntry(
            position: position,
            eventType: event.type,
            recordedAtMicros: recordedAtMicros,
            effectiveAtMicros: effectiveAtMicros,
            reference: reference,
            currency: currency,
            lines: builder.lines
        )
    }

    /// Cumulative amount `c` of an order split into goods, shipping, tax and what exceeds its total.
    /// Without the order's amounts (an order opened outside the folded range) all of it is goods.
    static func split(_ c: Int64, of amounts: OrderAmounts?) -> (goods: Int64, shipping: Int64, tax: Int64, other: Int64) {
        guard let amounts, amounts.total.minorUnits > 0, c > 0 else { return (max(c, 0), 0, 0, min(c, 0)) }
        let total = amounts.total.minorUnits
        let within = min(c, total)
        let tax = proportion(within, amounts.tax.minorUnits, total)
        let shipping = proportion(within, amounts.shipping.minorUnits, total)
        return (within - tax - shipping, shipping, tax, c - within)
    }

    /// ⌊a·b/c⌋ without overflow (a, b ≥ 0, c > 0, a ≤ c).
    static func proportion(_ a: Int64, _ b: Int64, _ c: Int64) -> Int64 {
        let product = a.multipliedFullWidth(by: b)
        return c.dividingFullWidth(product).quotient
    }

    struct Builder {
        var lines: [JournalLine] = []
        mutating func debit(_ account: JournalAccount, _ amount: Int64) {
            if amount > 0 {
                lines.append(JournalLine(account: account, debitMinorUnits: amount, creditMinorUnits: 0))
            } else if amount < 0 {
                lines.append(JournalLine(account: account, debitMinorUnits: 0, creditMinorUnits: -amount))
            }
        }
        mutating func credit(_ account: JournalAccount, _ amount: Int64) { debit(account, -amount) }
    }
}
