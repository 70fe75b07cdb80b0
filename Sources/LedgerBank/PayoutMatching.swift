import LedgerCore

// Matching the acquirer's payouts to the bank's credits (issue 53). Pure: values in, the outcome events out; the
// service reads the announced payouts, the new credits and the matching's own stream, and appends what this returns.
// docs/bank-statements.md, "Matching payouts to deposits", has the rules with examples.

/// A payout the bank should show: what the acquirer announced, and the days a deposit of it may carry (the funding
/// window, by the business calendar: computed by the caller, which has the calendar).
public struct ExpectedPayout: Hashable, Sendable {
    public var payout: BankPayoutRef
    /// The day the ledger expects the money (the announced value date).
    public var expectedDate: BusinessDate
    /// The first and last value date a deposit matched by amount alone may carry; past `latest` nothing received is a
    /// `payout_not_received` break.
    public var earliest: BusinessDate
    public var latest: BusinessDate

    public init(payout: BankPayoutRef, expectedDate: BusinessDate, earliest: BusinessDate, latest: BusinessDate) {
        self.payout = payout
        self.expectedDate = expectedDate
        self.earliest = earliest
        self.latest = latest
    }
}

/// One outcome of the matching, as appended to `bank_matching-payouts`.
public enum BankMatchEvent: Hashable, Sendable {
    case matched(BankPayoutMatched)
    case breakFound(BankBreakFound)
    case breakResolved(BankBreakResolved)

    public var payload: any LedgerEventPayload {
        switch self {
        case .matched(let e): return e
        case .breakFound(let e): return e
        case .breakResolved(let e): return e
        }
    }

    /// The matching's event of a decoded log event, or nil for any other.
    public init?(_ event: LedgerEvent) {
        switch event {
        case .bankPayoutMatched(let e): self = .matched(e)
        case .bankBreakFound(let e): self = .breakFound(e)
        case .bankBreakResolved(let e): self = .breakResolved(e)
        default: return nil
        }
    }
}

/// The matching so far, folded from its stream: what each payout received, which deposits are accounted for, the
/// breaks and which are open.
public struct BankMatchState: Sendable {
    /// Minor units received per batch (a payout absent here has received nothing).
    public private(set) var received: [String: Int64] = [:]
    /// Deposit keys (``BankDepositRef/key``) every event so far names.
    public private(set) var consumed: Set<String> = []
    /// A deposit's fingerprint → the statement stream it was first seen in (a deposit seen twice).
    private(set) var fingerprints: [DepositFingerprint: String] = [:]
    /// Every break found, by id.
    public private(set) var breaks: [String: BankBreakFound] = [:]
    /// The open breaks' ids in the order found.
    public private(set) var openBreakIDs: [String] = []
    private var open: Set<String> = []
    /// The breaks each batch's payout is named in (open or not), so a match finds its payouts' breaks without a scan.
    private var breaksByBatch: [String: [String]] = [:]
    /// Batches that have had a `payout_not_received` break (raised once, even when resolved by a note).
    private var notReceivedRaised: Set<String> = []
    public private(set) var matches: [BankPayoutMatched] = []
    public private(set) var resolutions: [String: BankBreakResolved] = [:]
    /// The highest log position of a deposit any event names: the next pass reads the credits after it.
    public private(set) var through: Int64 = 0

    public init() {}

    /// The open breaks, in the order found.
    public var openBreaks: [BankBreakFound] { openBreakIDs.compactMap { breaks[$0] } }

    public func isOpen(_ breakID: String) -> Bool { open.contains(breakID) }

    /// The open breaks that name any of these batches' payouts, in the order found (a break's id ends with its number).
    public func openBreaks(naming batches: Set<String>) -> [BankBreakFound] { openBreaks(namingAny: Array(batches)) }

    /// ``openBreaks(naming:)`` for a few batches: nothing built when none of them has a break (the common case).
    func openBreaks(namingAny batches: [String]) -> [BankBreakFound] {
        var ids: [String] = []
        for batch in batches {
            for id in breaksByBatch[batch] ?? [] where open.contains(id) && !ids.contains(id) { ids.append(id) }
        }
        guard !ids.isEmpty else { return [] }
        func number(_ id: String) -> Int { Int(id.split(separator: ".").last ?? "") ?? 0 }
        return ids.sorted { number($0) < number($1) }.compactMap { breaks[$0] }
    }

    public mutating func apply(_ event: BankMatchEvent) {
        switch event {
        case .matched(let matched):
            matches.append(matched)
            // The deposits' sum goes to the payouts in order, each up to its amount, the last taking any excess.
            var left = matched.amount.minorUnits
            for (index, payout) in matched.payouts.enumerated() {
                let owed = max(0, payout.amount.minorUnits - received[payout.batchID, default: 0])
                let share = index == matched.payouts.count - 1 ? left : min(owed, left)
                received[payout.batchID, default: 0] += share
                left -= share
            }
            take(matched.deposits)
        case .breakFound(let found):
            breaks[found.breakID] = found
            if !open.contains(found.breakID) {
                open.insert(found.breakID)
                openBreakIDs.append(found.breakID)
            }
            if found.breakClass == .payoutNotReceived { notReceivedRaised.formUnion(found.payouts.map(\.batchID)) }
            for payout in found.payouts { breaksByBatch[payout.batchID, default: []].append(found.breakID) }
            take(found.deposits)
        case .breakResolved(let resolved):
            resolutions[resolved.breakID] = resolved
            if open.remove(resolved.breakID) != nil { openBreakIDs.removeAll { $0 == resolved.breakID } }
        }
    }

    private mutating func take(_ deposits: [BankDepositRef]) {
        for deposit in deposits {
            consumed.insert(deposit.key)
            through = max(through, deposit.position)
            let stamp = Self.fingerprint(deposit)
            if fingerprints[stamp] == nil { fingerprints[stamp] = deposit.stream }
        }
    }

    /// What makes two credits the same deposit: the account, amount, value date and every reference the bank gave.
    struct DepositFingerprint: Hashable {
        var account: String
        var amount: Money
        var valueDate: BusinessDate?
        var bankReference: String?
        var ownerReference: String?
        var endToEndIDs: [String]
        var remittanceInformation: String
    }

    static func fingerprint(_ deposit: BankDepositRef) -> DepositFingerprint {
        DepositFingerprint(
            account: deposit.account,
            amount: deposit.amount,
            valueDate: deposit.valueDate,
            bankReference: deposit.bankReference,
            ownerReference: deposit.ownerReference,
            endToEndIDs: deposit.endToEndIDs,
            remittanceInformation: deposit.remittanceInformation
        )
    }

    func wasNotReceivedRaised(_ batchID: String) -> Bool { notReceivedRaised.contains(batchID) }
}

/// The matching rules (docs/bank-statements.md): a credit that names payouts (their payout or batch reference in its
/// end-to-end id, references or remittance information) pays them, however much it is (one-to-many: several credits
/// of one payout add up; many-to-one: one credit naming several payouts pays them all); a credit naming none matches a
/// payout of its currency and exact amount whose funding window holds its value date, else several payouts of one day
/// whose sum it is; else it is an `unexpected_credit` (tried again on each later pass, so a payout announced later
/// explains it). A credit seen before in another statement is `deposit_seen_twice`, as is one naming only payouts paid
/// in full. A payout whose sum received differs from its amount is `amount_differs`, with the difference; one past its
/// window with nothing received is `payout_not_received`. A later credit that completes a payout resolves its breaks,
/// naming the file.
public enum PayoutMatcher {
    /// The events a pass appends: `credits` are the credits read since the last pass (booked, positive, in log
    /// order), `file` the SHA-256 of the statement file whose import runs the pass ("" when none).
    public static func match(
        state initial: BankMatchState,
        payouts: [ExpectedPayout],
        credits: [BankDepositRef],
        today: BusinessDate,
        file: String
    ) -> [BankMatchEvent] {
        pass(state: initial, payouts: payouts, credits: credits, today: today, file: file).events
    }

    /// ``match(state:payouts:credits:today:file:)``'s events and the state with them applied (the caller need not fold
    /// them again).
    public static func pass(
        state initial: BankMatchState,
        payouts: [ExpectedPayout],
        credits: [BankDepositRef],
        today: BusinessDate,
        file: String
    ) -> (events: [BankMatchEvent], state: BankMatchState) {
        var pass = Pass(state: initial, payouts: payouts, file: file)
        // Credits an earlier pass could not explain are tried again first (a payout announced since may explain them).
        let retried = initial.openBreaks.filter { $0.breakClass == .unexpectedCredit }.compactMap { found in
            found.deposits.first.map { (deposit: $0, breakID: Optional(found.breakID)) }
        }
        var fresh: [(deposit: BankDepositRef, breakID: String?)] = []
        var seen: [BankMatchState.DepositFingerprint: String] = [:]
        for credit in credits where !initial.consumed.contains(credit.key) && credit.amount.minorUnits > 0 {
            let stamp = BankMatchState.fingerprint(credit)
            if let first = initial.fingerprints[stamp] ?? seen[stamp], first != credit.stream {
                pass.duplicate(credit, detail: "the same deposit (amount, value date and references) is on an earlier statement")
                continue
            }
            if seen[stamp] == nil { seen[stamp] = credit.stream }
            fresh.append((credit, nil))
        }
        var unreferenced: [(deposit: BankDepositRef, breakID: String?)] = []
        for candidate in retried + fresh {
            if !pass.byReference(candidate.deposit, retrying: candidate.breakID) { unreferenced.append(candidate) }
        }
        for candidate in unreferenced {
            if !pass.byAmount(candidate.deposit, retrying: candidate.breakID) && candidate.breakID == nil { pass.unexpected(candidate.deposit) }
        }
        pass.notReceived(today: today)
        return (pass.events, pass.state)
    }

    /// One pass's working state: the fold so far (with this pass's events applied) and its indexes. Payouts are
    /// integer ids (their place in `payouts`, sorted by expected date once); the indexes hold ids under value-type
    /// keys, so the per-credit work hashes no string it builds.
    struct Pass {
        var state: BankMatchState
        var events: [BankMatchEvent] = []
        let payouts: [ExpectedPayout]
        let file: String
        /// A batch id → its payout's id (the events name batches; the matcher works on ids).
        let byBatch: [String: Int]
        /// A reference (payout reference or batch id) → the payouts it names.
        let byToken: [String: [Int]]
        /// Currency and minor units → the payouts of that amount, in expected-date order.
        let byAmount: [Money: [Int]]
        /// Currency and expected date → the payouts expected that day that had received nothing when last looked at
        /// (those paid since are dropped as the amount rule passes over them: paid never reverts in a pass, so a day's
        /// list is walked whole once, not once per unexplained credit); and each currency's expected days, in order.
        var byDay: [DayKey: [Int]]
        let days: [Currency: [BusinessDate]]
        /// Per payout id, whether it has received anything (``BankMatchState/received`` has it), kept by `emit`.
        var paid: [Bool]
        /// Per amount, the first of its payouts that may still be open.
        var amountCursor: [Money: Int] = [:]

        struct DayKey: Hashable {
            var currency: Currency
            var day: BusinessDate
        }

        init(state: BankMatchState, payouts: [ExpectedPayout], file: String) {
            self.state = state
            self.file = file
            var batches: [String: Int] = [:]
            // A batch announced twice: the first (by expected date) counts.
            let ordered = payouts.filter { $0.payout.amount.minorUnits > 0 }
                .sorted { $0.expectedDate != $1.expectedDate ? $0.expectedDate < $1.expectedDate : $0.payout.batchID < $1.payout.batchID }
                .filter { batches.updateValue(0, forKey: $0.payout.batchID) == nil }
            self.payouts = ordered
            var tokens: [String: [Int]] = [:]
            var amounts: [Money: [Int]] = [:]
            var days: [DayKey: [Int]] = [:]
            var daysByCurrency: [Currency: [BusinessDate]] = [:]
            var paid = [Bool](repeating: false, count: ordered.count)
            for (id, expected) in ordered.enumerated() {
                let batch = expected.payout.batchID
                batches[batch] = id
                paid[id] = state.received[batch] != nil
                if !batch.isEmpty { tokens[batch, default: []].append(id) }
                let reference = expected.payout.payoutReference
                if !reference.isEmpty && reference != batch { tokens[reference, default: []].append(id) }
                amounts[expected.payout.amount, default: []].append(id)
                let currency = expected.payout.amount.currency
                days[DayKey(currency: currency, day: expected.expectedDate), default: []].append(id)
                if daysByCurrency[currency]?.last != expected.expectedDate { daysByCurrency[currency, default: []].append(expected.expectedDate) }
            }
            byBatch = batches
            byToken = tokens
            byAmount = amounts
            byDay = days
            self.days = daysByCurrency
            self.paid = paid
        }

        mutating func emit(_ event: BankMatchEvent) {
            state.apply(event)
            events.append(event)
            if case .matched(let matched) = event {
                for payout in matched.payouts { if let id = byBatch[payout.batchID] { paid[id] = true } }
            }
        }

        var nextBreakNumber: Int { state.breaks.count + 1 }

        static let separators: Set<Character> = [" ", "/", ",", ";", ":", "\n", "\r", "\t", "(", ")", "+", "'"]

        /// The payouts a credit names of its currency, by batch id: its references, each a whole token (a reference
        /// inside free text is one of its words).
        func named(_ deposit: BankDepositRef) -> [Int] {
            var ids: [Int] = []
            func add(_ token: String) {
                for id in byToken[token] ?? [] where !ids.contains(id) && payouts[id].payout.amount.currency == deposit.amount.currency {
                    ids.append(id)
                }
            }
            for token in deposit.endToEndIDs { add(token) }
            if let owner = deposit.ownerReference { add(owner) }
            if let bank = deposit.bankReference { add(bank) }
            if !deposit.remittanceInformation.isEmpty {
                for word in deposit.remittanceInformation.split(whereSeparator: { Self.separators.contains($0) }) { add(String(word)) }
            }
            if ids.count > 1 { ids.sort { payouts[$0].payout.batchID < payouts[$1].payout.batchID } }
            return ids
        }

        func describe(_ deposit: BankDepositRef) -> String {
            "\(deposit.amount.decimalString) \(deposit.amount.currency.code) on \(deposit.valueDate?.description ?? "no value date") "
                + "(statement \(deposit.statementID), entry \(deposit.entry))"
        }

        func fileName() -> String { file.isEmpty ? "the matching" : "the statement file \(file.prefix(12))" }

        /// A credit naming payouts pays them; false when it names none of its currency.
        mutating func byReference(_ deposit: BankDepositRef, retrying breakID: String?) -> Bool {
            let ids = named(deposit)
            guard !ids.isEmpty else { return false }
            let refs = ids.map { payouts[$0].payout }
            let expected = refs.reduce(0) { $0 + $1.amount.minorUnits }
            let before = refs.reduce(0) { $0 + state.received[$1.batchID, default: 0] }
            if before >= expected {
                duplicate(deposit, detail: "it names \(refs.map(\.payoutReference).joined(separator: ", ")), paid in full already")
                if let breakID { resolve(breakID, "seen again: \(describe(deposit)) names a payout paid in full (deposit_seen_twice)") }
                return true
            }
            record(refs, [deposit], rule: "reference", outstanding: expected - before - deposit.amount.minorUnits, retrying: breakID)
            return true
        }

        /// A credit naming no payout matches one of its exact amount whose window holds its value date, else the
        /// payouts of one day whose sum it is; false when neither.
        mutating func byAmount(_ deposit: BankDepositRef, retrying breakID: String?) -> Bool {
            guard let day = deposit.valueDate else { return false }
            // The batches of that amount, past those already paid (received only grows: the cursor never goes back).
            let key = deposit.amount
            if let candidates = byAmount[key] {
                var start = amountCursor[key, default: 0]
                while start < candidates.count, paid[candidates[start]] { start += 1 }
                amountCursor[key] = start
                for id in candidates[start...] {
                    guard let single = open(id, on: day) else { continue }
                    record([single.payout], [deposit], rule: "amount", outstanding: 0, retrying: breakID)
                    return true
                }
            }
            // Several payouts of one day in one deposit (the acquirer nets its batches into one transfer).
            for expectedDay in days[deposit.amount.currency] ?? [] {
                let dayKey = DayKey(currency: deposit.amount.currency, day: expectedDay)
                let paid = self.paid
                byDay[dayKey]?.removeAll { paid[$0] }  // in place
                let group = (byDay[dayKey] ?? []).compactMap { open($0, on: day) }
                guard group.count > 1, group.reduce(0, { $0 + $1.payout.amount.minorUnits }) == deposit.amount.minorUnits else { continue }
                record(group.map(\.payout), [deposit], rule: "amount_group", outstanding: 0, retrying: breakID)
                return true
            }
            return false
        }

        /// The payout that has received nothing and whose funding window holds `day`, or nil.
        func open(_ id: Int, on day: BusinessDate) -> ExpectedPayout? {
            let expected = payouts[id]
            guard !paid[id], expected.earliest <= day, day <= expected.latest else { return nil }
            return expected
        }

        /// Records a match and what it settles: the payouts' open breaks are resolved when they are paid in full, or
        /// become one `amount_differs` with the difference when they are not.
        mutating func record(_ refs: [BankPayoutRef], _ deposits: [BankDepositRef], rule: String, outstanding: Int64, retrying breakID: String?) {
            let currency = deposits[0].amount.currency
            let amount = deposits.reduce(0) { $0 + $1.amount.minorUnits }
            emit(
                .matched(
                    BankPayoutMatched(
                        matchID: "match-\(state.matches.count + 1)",
                        rule: rule,
                        payouts: refs,
                        deposits: deposits,
                        amount: Money(minorUnits: amount, currency: currency),
                        outstanding: Money(minorUnits: outstanding, currency: currency),
                        file: file
                    )
                )
            )
            let names = refs.count == 1 ? refs[0].payoutReference : refs.map(\.payoutReference).joined(separator: ", ")
            if let breakID { resolve(breakID, "explained by \(fileName()): \(describe(deposits[0])) pays \(names)") }
            let touching = state.openBreaks(namingAny: refs.map(\.batchID)).filter { found in
                found.breakClass != .unexpectedCredit && found.breakClass != .depositSeenTwice
            }
            if outstanding == 0 {
                for found in touching { resolve(found.breakID, "paid in full by \(fileName()): \(describe(deposits[0]))") }
                return
            }
            for found in touching {
                resolve(found.breakID, "money arrived (\(describe(deposits[0])), \(fileName())); what is left is a new amount_differs")
            }
            let expected = refs.reduce(0) { $0 + $1.amount.minorUnits }
            let actual = expected - outstanding
            let difference = Money(minorUnits: -outstanding, currency: currency)
            emit(
                .breakFound(
                    BankBreakFound(
                        breakID: "amount_differs.\(refs[0].batchID).\(nextBreakNumber)",
                        breakClass: .amountDiffers,
                        payouts: refs,
                        deposits: deposits,
                        expected: Money(minorUnits: expected, currency: currency),
                        actual: Money(minorUnits: actual, currency: currency),
                        difference: difference,
                        detail: "\(names) announced \(Money(minorUnits: expected, currency: currency).decimalString) \(currency.code), "
                            + "the bank shows \(Money(minorUnits: actual, currency: currency).decimalString) so far: "
                            + "\(outstanding > 0 ? "short" : "over") by \(Money(minorUnits: abs(outstanding), currency: currency).decimalString) "
                            + "\(currency.code)",
                        file: file
                    )
                )
            )
        }

        mutating func resolve(_ breakID: String, _ reason: String) {
            guard state.isOpen(breakID) else { return }
            emit(.breakResolved(BankBreakResolved(breakID: breakID, reason: reason, resolvedBy: BankMatching.actor, file: file)))
        }

        mutating func duplicate(_ deposit: BankDepositRef, detail: String) {
            let zero = Money(minorUnits: 0, currency: deposit.amount.currency)
            emit(
                .breakFound(
                    BankBreakFound(
                        breakID: "deposit_seen_twice.\(deposit.statementID).\(deposit.entry).\(nextBreakNumber)",
                        breakClass: .depositSeenTwice,
                        payouts: [],
                        deposits: [deposit],
                        expected: zero,
                        actual: deposit.amount,
                        difference: deposit.amount,
                        detail: "\(describe(deposit)) is not booked again: \(detail)",
                        file: file
                    )
                )
            )
        }

        mutating func unexpected(_ deposit: BankDepositRef) {
            let zero = Money(minorUnits: 0, currency: deposit.amount.currency)
            emit(
                .breakFound(
                    BankBreakFound(
                        breakID: "unexpected_credit.\(deposit.statementID).\(deposit.entry).\(nextBreakNumber)",
                        breakClass: .unexpectedCredit,
                        payouts: [],
                        deposits: [deposit],
                        expected: zero,
                        actual: deposit.amount,
                        difference: deposit.amount,
                        detail: "\(describe(deposit)) names no announced payout, and no payout of that amount is due on that day",
                        file: file
                    )
                )
            )
        }

        /// Payouts past their window with nothing received, each raised once.
        mutating func notReceived(today: BusinessDate) {
            for (id, expected) in payouts.enumerated() where today > expected.latest && !paid[id] {
                let id = expected.payout.batchID
                guard !state.wasNotReceivedRaised(id) else { continue }
                let amount = expected.payout.amount
                emit(
                    .breakFound(
                        BankBreakFound(
                            breakID: "payout_not_received.\(id).\(nextBreakNumber)",
                            breakClass: .payoutNotReceived,
                            payouts: [expected.payout],
                            deposits: [],
                            expected: amount,
                            actual: Money(minorUnits: 0, currency: amount.currency),
                            difference: Money(minorUnits: -amount.minorUnits, currency: amount.currency),
                            detail: "\(expected.payout.payoutReference) (\(amount.decimalString) \(amount.currency.code)) was expected on "
                                + "\(expected.expectedDate), at the latest \(expected.latest); no deposit has paid it by \(today)",
                            file: file
                        )
                    )
                )
            }
        }
    }
}
