import Foundation
import LedgerBank
import LedgerCore
import LedgerEngine
import LedgerPostgres
import Synchronization

/// Matching payouts to deposits (issue 53): one pass reads what is new since the last — the matching's stream after the
/// version it remembers, the payouts announced (`SettlementPayoutScheduled` with its batch's merchant account) and the
/// credits booked after the positions it remembers (``MatchingMemory``), each in one paged query — hands them with the
/// remembered fold to ``PayoutMatcher`` and appends its outcomes in one append after the stream's version (another pass
/// at the same moment: read again). No query per entry, and no read of the matched history: a pass costs what arrived
/// since the last one (after a restart, the first pass folds the history once).
extension BankStatementService {
    /// What a pass did.
    public struct MatchSummary: Sendable, Hashable {
        /// Matches recorded (each books its deposits), and by rule (`reference`, `amount`, `amount_group`).
        public var matched: Int = 0
        public var matchedByRule: [String: Int] = [:]
        /// Breaks found, by class (`amount_differs`, …).
        public var breaks: [String: Int] = [:]
        /// Breaks resolved (by this file, or by the matching).
        public var resolved: Int = 0
        /// Events appended.
        public var appended: Int = 0
        /// Breaks open after the pass.
        public var openBreaks: Int = 0
        /// Events the pass read from the log (the matching's stream, payouts and credits new since the last pass).
        public var eventsRead: Int = 0
        /// Wall time of the pass's parts (the last attempt's, after a version conflict): reading what is new, the
        /// matcher, the append. For `ledgerd bench bank` and the log; nothing decides on them.
        public var timings = Timings()

        public init() {}

        public struct Timings: Sendable, Hashable {
            public var read: Duration = .zero
            public var match: Duration = .zero
            public var append: Duration = .zero

            public init() {}
        }
    }

    /// What the matching has read so far, kept between passes and shared by the service's copies: the matching's
    /// stream folded (and its version), and the announced payouts (and the log position read through), so a pass reads
    /// only the events after them. A value read here is a snapshot; a newer one replaces it only when it read further.
    final class MatchingMemory: Sendable {
        struct Announced: Sendable {
            var payouts: [ExpectedPayout] = []
            /// Batches opened whose payout is not announced yet: their merchant account (the payout's event names none).
            var accounts: [String: String] = [:]
            /// The log position the payouts were read through.
            var through: Int64 = 0
        }

        private let folded = Mutex<(state: BankMatchState, version: Int64)>((BankMatchState(), 0))
        private let announced = Mutex(Announced())

        init() {}

        var fold: (state: BankMatchState, version: Int64) { folded.withLock { $0 } }
        var payouts: Announced { announced.withLock { $0 } }

        func keep(_ state: BankMatchState, version: Int64) {
            folded.withLock { if version > $0.version { $0 = (state, version) } }
        }

        func keep(_ payouts: Announced) {
            announced.withLock { if payouts.through > $0.through { $0 = payouts } }
        }
    }

    /// Rows read per query.
    static let matchingPage = 10_000

    /// Runs one matching pass; `file` is the statement file whose import runs it ("" for none).
    @discardableResult
    public func matchPayouts(file: String = "") async throws -> MatchSummary {
        var read = 0
        for _ in 0..<AggregateStore.maximumAttempts {
            var summary = MatchSummary()
            var lap = ContinuousClock.now
            func split() -> Duration {
                let now = ContinuousClock.now
                defer { lap = now }
                return now - lap
            }
            let (state, version, streamRead) = try await foldedMatching()
            let (payouts, payoutsRead) = try await announcedPayouts()
            let (credits, creditsRead) = try await credits(after: state.through)
            read += streamRead + payoutsRead + creditsRead
            summary.timings.read = split()
            let today = BusinessDate(daysSinceEpoch: Int64((clock().timeIntervalSince1970 / 86_400).rounded(.down)))
            let (events, after) = PayoutMatcher.pass(state: state, payouts: payouts, credits: credits, today: today, file: file)
            summary.timings.match = split()
            summary.eventsRead = read
            for event in events {
                switch event {
                case .matched(let matched):
                    summary.matched += 1
                    summary.matchedByRule[matched.rule, default: 0] += 1
                case .breakFound(let found): summary.breaks[found.breakClass.rawValue, default: 0] += 1
                case .breakResolved: summary.resolved += 1
                }
            }
            summary.appended = events.count
            summary.openBreaks = after.openBreakIDs.count
            guard !events.isEmpty else { return summary }
            do {
                let now = clock()
                _ = try await writer.append(
                    AppendRequest(
                        stream: BankMatching.stream,
                        expectedVersion: version == 0 ? .noStream : .exact(version),
                        events: try events.map { try NewEvent(eventID: writer.ids.next(), payload: $0.payload, effectiveAt: now) },
                        metadata: EventMetadata(
                            correlationID: file.isEmpty ? "bank-matching" : file,
                            actor: BankMatching.actor,
                            command: "MatchPayouts"
                        )
                    )
                )
            } catch let error as AppendError where error == .versionConflict {
                continue  // another pass appended meanwhile: match again on what it recorded
            }
            summary.timings.append = split()
            // The fold with this pass's events is the stream's state now: the next pass reads nothing of it again.
            memory.keep(after, version: version + Int64(events.count))
            logger.info(
                "bank payouts matched",
                metadata: [
                    "file_sha256": "\(file)", "matched": "\(summary.matched)", "breaks": "\(summary.breaks)", "resolved": "\(summary.resolved)",
                ]
            )
            return summary
        }
        throw ServiceError.unavailable("the bank matching is busy with other imports; try again")
    }

    /// A clerk's note resolving an open bank break (404 for no such break, 422 for an empty note); returns the
    /// resolution recorded. The same note from the same actor again answers the resolution it recorded and appends
    /// nothing (a form sent twice, a client's retry); any other resolution of a resolved break is 409
    /// `already_resolved`. The console's form and `POST /bank/breaks/{id}/resolve` both call this.
    public func resolveBankBreak(id: String, reason: String, actor: String) async throws -> BankBreakResolved {
        let note = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !note.isEmpty else { throw ServiceError.invalid("invalid_field", "a resolution needs a note saying why", field: "reason") }
        for _ in 0..<AggregateStore.maximumAttempts {
            let (state, version) = try await matchState()
            guard state.breaks[id] != nil else { throw ServiceError.notFound("no bank break \(id)") }
            guard state.isOpen(id) else {
                if let earlier = state.resolutions[id], earlier.reason == note, earlier.resolvedBy == actor { return earlier }
                throw ServiceError.conflict("already_resolved", "bank break \(id) is already resolved")
            }
            let resolved = BankBreakResolved(breakID: id, reason: note, resolvedBy: actor, file: "")
            do {
                _ = try await writer.append(
                    AppendRequest(
                        stream: BankMatching.stream,
                        expectedVersion: .exact(version),
                        events: [try NewEvent(eventID: writer.ids.next(), payload: resolved, effectiveAt: clock())],
                        metadata: EventMetadata(correlationID: id, actor: actor, command: "ResolveBankBreak")
                    )
                )
                return resolved
            } catch let error as AppendError where error == .versionConflict {
                continue
            }
        }
        throw ServiceError.unavailable("the bank matching is busy; try again")
    }

    /// The matching's stream folded, and its version.
    public func matchState() async throws -> (BankMatchState, Int64) {
        let (state, version, _) = try await foldedMatching()
        return (state, version)
    }

    /// The matching's stream folded: the remembered fold caught up with the events after its version (usually none:
    /// a pass remembers what it appended); with the number of events read.
    func foldedMatching() async throws -> (state: BankMatchState, version: Int64, read: Int) {
        var (state, version) = memory.fold
        var read = 0
        while true {
            let page = try await store.readStream(BankMatching.stream, after: version, limit: Self.matchingPage)
            read += page.count
            for recorded in page {
                if let event = BankMatchEvent(try LedgerEvent.decode(recorded)) { state.apply(event) }
                version = recorded.streamVersion
            }
            if page.count < Self.matchingPage { break }
        }
        if read > 0 { memory.keep(state, version: version) }
        return (state, version, read)
    }

    /// Every payout the acquirer announced, with its funding window: from the batches' own events (their opened
    /// event names the merchant account; `SettlementPayoutScheduled` the reference, amount and value dates).
    public func expectedPayouts() async throws -> [ExpectedPayout] { try await announcedPayouts().payouts }

    /// ``expectedPayouts()``: the remembered payouts and those announced after the position they were read through;
    /// with the number of events read.
    func announcedPayouts() async throws -> (payouts: [ExpectedPayout], read: Int) {
        var known = memory.payouts
        var read = 0
        try await forEach(types: [SettlementBatchOpened.eventType, SettlementPayoutScheduled.eventType], after: known.through) { recorded in
            read += 1
            known.through = recorded.position
            switch try SettlementEvent.decode(recorded) {
            case .opened(let opened): known.accounts[opened.batchID] = opened.merchantAccount
            // A negative payout (the merchant owes the acquirer) is no credit to wait for.
            case .payoutScheduled(let payout) where payout.amount.minorUnits > 0:
                let first = min(payout.valueDate, payout.expectedValueDate)
                let last = max(payout.valueDate, payout.expectedValueDate)
                known.payouts.append(
                    ExpectedPayout(
                        payout: BankPayoutRef(
                            batchID: payout.batchID,
                            payoutReference: payout.payoutReference,
                            merchantAccount: known.accounts[payout.batchID] ?? "",
                            amount: payout.amount
                        ),
                        expectedDate: last,
                        earliest: first,
                        latest: calendar.adding(businessDays: fundingWindowBusinessDays, to: last)
                    )
                )
            default: break
            }
        }
        if read > 0 { memory.keep(known) }
        return (known.payouts, read)
    }

    /// The booked credits (money in, not reversals) recorded after `position`, in log order; with the number of
    /// events read.
    func credits(after position: Int64) async throws -> (credits: [BankDepositRef], read: Int) {
        var credits: [BankDepositRef] = []
        var read = 0
        try await forEach(types: [BankEntryBooked.eventType], after: position) { recorded in
            read += 1
            guard case .bankEntryBooked(let entry) = try LedgerEvent.decode(recorded), entry.booked, !entry.reversal, entry.amount.minorUnits > 0
            else { return }
            credits.append(
                BankDepositRef(
                    stream: recorded.streamID.rawValue,
                    account: entry.account,
                    statementID: entry.statementID,
                    entry: entry.entry,
                    amount: entry.amount,
                    valueDate: entry.valueDate ?? entry.bookingDate,
                    bankReference: entry.bankReference,
                    ownerReference: entry.ownerReference,
                    endToEndIDs: entry.endToEndIDs,
                    remittanceInformation: entry.remittanceInformation,
                    position: recorded.position
                )
            )
        }
        return (credits, read)
    }

    /// Every event of `types` after `position`, a page of ``matchingPage`` per query.
    private func forEach(types: [String], after position: Int64, _ body: (RecordedEvent) throws -> Void) async throws {
        var cursor = position
        while true {
            let page = try await store.events(after: cursor, matching: EventFilter(types: types), limit: Self.matchingPage)
            for recorded in page { try body(recorded) }
            guard let last = page.last, page.count == Self.matchingPage else { return }
            cursor = last.position
        }
    }
}
