import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices
import Synchronization

// The landing page (Today) and the audit page: reads only, through the services the API reads through.

extension ConsoleRoutes {
    struct TotalRow {
        let currency: String
        let status: String
        let count: Int
        let total: String
    }

    struct ExpiringRow {
        let id: String
        let path: String
        let expiresAt: String
        let open: String
        let currency: String
    }

    struct DisputeRow {
        let id: String
        let path: String
        let orderID: String
        let orderPath: String
        let status: String
        let dueAt: String
        let amount: String
        let overdue: Bool
    }

    struct BatchView {
        let id: String
        let path: String
        let businessDate: String
        let currency: String
        /// The merchant account the batch settles under (issue 52: a ledger may settle under several).
        let merchantAccount: String
        let stage: String
        let gross: String
        let net: String?
    }

    struct BreakRow {
        let batchID: String
        let batchPath: String
        let breakClass: String
        let reference: String
        let expected: String
        let actual: String
        let detail: String
    }

    /// A kind of the day's money movement (the accounting journal's entries of one event type) in one currency.
    struct MovementRow {
        let kind: String
        let currency: String
        let count: Int
        let amount: String
    }

    struct CutOffView {
        let businessDate: String
        let at: String
        let inText: String
    }

    struct FeedRow {
        let kind: String
        let name: String
        let state: String
        let position: Int64
        let lag: Int64
        let detail: String
        let unhealthy: Bool
    }

    struct TodayPage {
        let title: String
        let session: ConsolePages.SessionView
        let date: String
        let ordersCount: Int
        let moreOrders: Bool
        let totals: [TotalRow]
        let movements: [MovementRow]
        let moreMovements: Bool
        let cutOff: CutOffView
        let feeds: [FeedRow]
        let expiring: [ExpiringRow]
        let disputes: [DisputeRow]
        let lastBatch: BatchView?
        let chart: ConsoleChart.View?
        let openBreaks: Int
        let breaks: [BreakRow]
        let moreBreaks: Bool
        let shownBreaks: Int
        /// The payouts at the bank and the open bank breaks (nil: no bank matching).
        var bank: BankPayoutsView? = nil
        /// A notice after an action (a bank break resolved).
        var notice: String? = nil
    }

    /// The most open breaks Today lists.
    static let breaksShown = 20

    /// The payments recorded since midnight UTC (authorized, with totals by currency, and declined); the open holds
    /// expiring within 24 h; the disputes with the soonest deadlines; the last settlement batch and the settled gross,
    /// fees and net per day of the last 30 days; the open reconciliation breaks of those days' submitted batches, of
    /// every report reconciled (a reconciliation read per batch: at most one per currency and day); the money the day's
    /// journal moved; the next cut-off; each consumer's lag.
    func today(
        _ signedIn: SignedIn,
        notice: String? = nil,
        resolving: (breakID: String, form: ResolveForm)? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let now = clock()
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let midnight = calendar.startOfDay(for: now)
        // The day's payments from the log: the authorizations and declines recorded since midnight (the first
        // ``movementEvents`` of them), a read of the day's positions whatever the size of the order book (the orders'
        // list sorts every order row: 1 s at a million events, docs/performance.md). Sums in integer minor units.
        let window = EventFilter(
            types: [OrderAuthorized.eventType, PaymentDeclined.eventType],
            fromMicros: midnight.epochMicroseconds,
            toMicros: now.epochMicroseconds + 1
        )
        let payments = try await ledger.events(after: 0, matching: window, limit: Self.movementEvents)
        // By currency ("—" for a decline, which names none) and outcome.
        struct Outcome: Hashable, Comparable {
            let currency: String
            let status: String
            static func < (a: Outcome, b: Outcome) -> Bool { (a.currency, a.status) < (b.currency, b.status) }
        }
        var sums: [Outcome: (count: Int, money: Money?)] = [:]
        for event in payments {
            if event.type == OrderAuthorized.eventType, let authorized = try? LedgerJSON.decode(OrderAuthorized.self, from: event.data) {
                let key = Outcome(currency: authorized.amount.currency.code, status: "authorized")
                let sum = sums[key] ?? (count: 0, money: Money.zero(authorized.amount.currency))
                sums[key] = (sum.count + 1, sum.money.flatMap { try? $0.adding(authorized.amount) })
            } else {
                sums[Outcome(currency: "—", status: "declined"), default: (count: 0, money: nil)].count += 1
            }
        }
        let totals = sums.sorted { $0.key < $1.key }.map { key, sum in
            TotalRow(currency: key.currency, status: key.status, count: sum.count, total: sum.money?.decimalString ?? "—")
        }
        let holdPage = try await holds.holds(HoldQuery(state: "open", expiringBefore: now.addingTimeInterval(24 * 3600), limit: 50, cursor: 0))
        let expiring = holdPage.ordersJSON.compactMap { row -> ExpiringRow? in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(row.utf8))) as? [String: Any] else { return nil }
            let figures = object["figures"] as? [String: Any]
            let id = object["order_id"] as? String ?? ""
            return ExpiringRow(
                id: id,
                path: Self.path("orders", id),
                expiresAt: object["expires_at"] as? String ?? "",
                open: figures?["open"] as? String ?? "",
                currency: figures?["currency"] as? String ?? ""
            )
        }
        let due = try await disputes.list(status: nil, dueBefore: nil).filter { !$0.status.isClosed && $0.dueAt != nil }.sorted {
            $0.dueAt! < $1.dueAt!
        }.prefix(10)
        let disputeRows = due.map {
            DisputeRow(
                id: $0.disputeID,
                path: Self.path("disputes", $0.disputeID),
                orderID: $0.orderID.rawValue,
                orderPath: Self.path("orders", $0.orderID.rawValue),
                status: $0.status.rawValue,
                dueAt: ConsolePages.time($0.dueAt!),
                amount: $0.amount.description,
                overdue: $0.dueAt! < now
            )
        }
        let from = calendar.date(byAdding: .day, value: -29, to: midnight)!
        // No upper bound: the open day closed early is a business date after today on a weekend (issue 55).
        let batches = try await settlement.batches(from: Self.day(from, calendar), to: nil)
        let last = batches.last.map { batch in
            BatchView(
                id: batch.opened.batchID,
                path: Self.path("settlements", batch.opened.batchID),
                businessDate: batch.opened.businessDate.description,
                currency: batch.opened.currency.code,
                merchantAccount: batch.opened.merchantAccount,
                stage: batch.stage.rawValue,
                gross: batch.closed.map { (try? $0.grossCredit.subtracting($0.grossDebit))?.decimalString ?? "" } ?? "—",
                net: nil
            )
        }
        // Each batch's reconciliation as `GET /settlements/{id}/reconciliation` reads it: its open breaks.
        var breaks: [BreakRow] = []
        var openBreaks = 0
        for batch in batches.reversed() where batch.stage >= .submitted {
            guard let view = try await settlement.reconciliation(id: batch.opened.batchID) else { continue }
            // Every report's open breaks: the acquirer's and each uploaded one's.
            for open in view.reports.flatMap(\.breaks) where open.resolution == nil {
                openBreaks += 1
                guard breaks.count < Self.breaksShown else { continue }
                breaks.append(
                    BreakRow(
                        batchID: batch.opened.batchID,
                        batchPath: Self.path("settlements", batch.opened.batchID),
                        breakClass: open.found.breakClass.rawValue,
                        reference: open.found.reference,
                        expected: open.found.figure(open.found.expected, in: view.currency) ?? "—",
                        actual: open.found.figure(open.found.actual, in: view.currency) ?? "—",
                        detail: open.found.detail
                    )
                )
            }
        }
        let chart = ConsoleChart.settled(
            batches: batches,
            days: (0..<30).map { Self.day(calendar.date(byAdding: .day, value: $0, to: from)!, calendar) }
        )
        let (movements, moreMovements) = try await movements(from: midnight, to: now)
        let open = settlement.openBusinessDay()
        let feeds = try await feedHealth(now: now)
        var page =
            TodayPage(
                title: "Today",
                session: signedIn.view,
                date: Self.day(now, calendar),
                ordersCount: payments.count,
                moreOrders: payments.count == Self.movementEvents,
                totals: totals,
                movements: movements,
                moreMovements: moreMovements,
                cutOff: CutOffView(
                    businessDate: open.businessDate.description,
                    at: ConsolePages.time(open.cutOffAt),
                    inText: Self.duration(open.cutOffAt.timeIntervalSince(now))
                ),
                feeds: feeds,
                expiring: expiring,
                disputes: Array(disputeRows),
                lastBatch: last,
                chart: chart,
                openBreaks: openBreaks,
                breaks: breaks,
                moreBreaks: openBreaks > breaks.count,
                shownBreaks: breaks.count
            )
        page.bank = try await bankPayouts(signedIn, now: now, resolving: resolving)
        page.notice = notice
        return ConsolePages.render("today", page, status: status)
    }

    /// The most events Today reads for the day's payments and folds for its movements: a thousand, so that Today renders
    /// within 200 ms on a day of a million events (bench/console.sh; at 5,000 it took 450 ms, most of it folding the
    /// journal's context: docs/performance.md). A busier day says so and links the whole journal.
    static let movementEvents = 1_000

    /// The day's money movements so far, by kind and currency: the accounting journal's entries (`GET /journal`'s
    /// reader) of [`from`, `to`], each entry's amount its debits (an entry is balanced). True when the day holds
    /// more journal events than ``movementEvents``.
    func movements(from: Date, to: Date) async throws -> ([MovementRow], Bool) {
        let page = try await journal.page(
            fromMicros: from.epochMicroseconds,
            toMicros: to.epochMicroseconds + 1,
            after: 0,
            limit: Self.movementEvents
        )
        var sums: [String: (kind: String, currency: Currency, count: Int, minorUnits: Int64)] = [:]
        for entry in page.entries {
            let key = "\(entry.eventType) \(entry.currency.code)"
            var sum = sums[key] ?? (entry.eventType, entry.currency, 0, 0)
            sum.count += 1
            sum.minorUnits += entry.totalDebitMinorUnits
            sums[key] = sum
        }
        let rows = sums.sorted { $0.key < $1.key }.map {
            MovementRow(
                kind: Self.movementNames[$0.value.kind] ?? $0.value.kind,
                currency: $0.value.currency.code,
                count: $0.value.count,
                amount: ConsoleChart.decimal($0.value.minorUnits, $0.value.currency)
            )
        }
        return (rows, page.nextAfter != nil)
    }

    /// The journal's event types as Today names them.
    static let movementNames: [String: String] = [
        HoldCaptured.eventType: "captures", HoldRefunded.eventType: "refunds", ChargebackReceived.eventType: "chargebacks",
        SecondChargebackReceived.eventType: "second chargebacks", ChargebackReversed.eventType: "chargebacks reversed",
        DisputeClosed.eventType: "disputes closed", SettlementBatchClosed.eventType: "batches closed",
        SettlementBatchCleared.eventType: "batches cleared (fees)", SettlementPayoutScheduled.eventType: "payouts scheduled",
        SettlementPayoutPaid.eventType: "payouts paid", BankPayoutMatched.eventType: "payouts in the bank",
    ]

    /// The most consumers Today lists (the rest under `GET /subscriptions` and `GET /webhooks`).
    static let feedsShown = 20

    /// Each subscription's and webhook endpoint's position and lag behind the head (what it has not yet taken), a paused
    /// endpoint or one retrying after failures marked: as `GET /subscriptions` and `GET /webhooks` read them.
    func feedHealth(now: Date) async throws -> [FeedRow] {
        var rows: [FeedRow] = []
        for subscription in try await subscriptions.all().prefix(Self.feedsShown) {
            let lag = max(0, subscription.head - subscription.checkpoint)
            rows.append(
                FeedRow(
                    kind: "subscription",
                    name: subscription.name,
                    state: "active",
                    position: subscription.checkpoint,
                    lag: lag,
                    detail: subscription.ackedAtMicros.map { "acknowledged \(ConsolePages.time(Date(epochMicroseconds: $0)))" }
                        ?? "never acknowledged",
                    unhealthy: false
                )
            )
        }
        for webhook in try await webhooks.all().prefix(Self.feedsShown) {
            let retrying = webhook.attempts > 0
            let next = Date(epochMicroseconds: webhook.nextAttemptAtMicros)
            rows.append(
                FeedRow(
                    kind: "webhook",
                    name: webhook.url,
                    state: webhook.state,
                    position: webhook.cursor,
                    lag: max(0, webhook.head - webhook.cursor),
                    detail: retrying ? "\(webhook.attempts) failed attempts, next \(ConsolePages.time(next))" : "delivering",
                    unhealthy: webhook.state != "active" || retrying
                )
            )
        }
        return rows
    }

    /// `seconds` ahead as the page says it: "3 h 05 min", "12 min", or "passed".
    static func duration(_ seconds: TimeInterval) -> String {
        guard seconds > 0 else { return "passed" }
        let minutes = Int64(seconds) / 60
        let hours = minutes / 60
        return hours > 0 ? "\(hours) h \(minutes % 60 < 10 ? "0" : "")\(minutes % 60) min" : "\(minutes) min"
    }

    /// `YYYY-MM-DD` of `date` in `calendar`'s time zone.
    static func day(_ date: Date, _ calendar: Calendar) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    // MARK: Audit

    struct ReportView {
        let ok: Bool
        let summary: String
        let checked: Int64
        let firstBadPosition: Int64?
        let nextFrom: Int64?
    }

    struct AuditPage {
        let title: String
        let session: ConsolePages.SessionView
        let window: Int64
        let from: String
        let to: String
        var fromError: ConsolePages.ErrorView?
        var toError: ConsolePages.ErrorView?
        var report: ReportView?
        /// The verification did not start: two others are streaming.
        var busy = false
        var checkpoints: CheckpointsView?
        var notice: String?
        /// Today (UTC), the journal form's default.
        var today = ""
    }

    /// The verification form, and with `verify=1` the chain recomputed over the range (at most
    /// ``AuditRoutes/maximumVerifyWindow`` positions, as `GET /audit/verify`).
    func audit(_ request: Request, _ signedIn: SignedIn) async throws -> Response {
        let query = request.uri.queryParameters
        let fromText = query["from"].map(String.init) ?? ""
        let toText = query["to"].map(String.init) ?? ""
        var page = AuditPage(
            title: "Audit",
            session: signedIn.view,
            window: AuditRoutes.maximumVerifyWindow,
            from: fromText,
            to: toText,
            fromError: nil,
            toError: nil,
            report: nil
        )
        let after = (query["checkpoints_after"].map(String.init)).flatMap { Int64($0) }.map { max(0, $0) } ?? 0
        page.checkpoints = try await checkpointsView(after: after, signedIn)
        page.notice = query["signed"].map { "A checkpoint of position \($0) was signed and recorded." }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        page.today = Self.day(clock(), calendar)
        guard query["verify"] == "1" else { return ConsolePages.render("audit", page) }
        // A bad bound: the API's error beside its field (GET /audit/verify reads both bounds the same way).
        let from: Int64
        let to: Int64?
        do {
            from = try AuditRoutes.integer(fromText.isEmpty ? nil : fromText, name: "from", default: 1, range: 1...Int64.max)
        } catch let error as APIError {
            page.fromError = .init(code: error.code, message: error.message)
            return ConsolePages.render("audit", page, status: error.status)
        }
        do {
            to = try toText.isEmpty ? nil : AuditRoutes.integer(toText, name: "to", default: 0, range: 1...Int64.max)
        } catch let error as APIError {
            page.toError = .init(code: error.code, message: error.message)
            return ConsolePages.render("audit", page, status: error.status)
        }
        let (windowEnd, overflow) = from.addingReportingOverflow(AuditRoutes.maximumVerifyWindow - 1)
        let end = min(to ?? Int64.max, overflow ? Int64.max : windowEnd)
        return verificationPage(from: from, end: end, continues: to.map { $0 > end } ?? true, page: page)
    }

    /// Positions re-hashed per step of a verification page (a step is a line on the page as it goes).
    static let verifyStep: Int64 = 25_000

    /// The verifications streaming now, at most ``VerificationSlots/limit``: a slot is taken and given back inside the
    /// streamed body, so a reply never written holds none.
    static let verifications = VerificationSlots()

    /// Counts the verification pages streaming at once.
    final class VerificationSlots: Sendable {
        static let limit = 2
        let running = Mutex(0)

        func enter() -> Bool {
            running.withLock { count in
                guard count < Self.limit else { return false }
                count += 1
                return true
            }
        }

        func leave() { running.withLock { $0 -= 1 } }
    }

    struct VerifyStep {
        let from: Int64
        let to: Int64
        let checked: Int64
        let ok: Bool
    }

    /// The chain re-hashed over `from…end` (at most ``AuditRoutes/maximumVerifyWindow`` positions, as one
    /// `GET /audit/verify`), streamed: a line per ``verifyStep`` positions as each is done, then the result and, when
    /// the range goes on, where to continue.
    func verificationPage(from: Int64, end: Int64, continues: Bool, page: AuditPage) -> Response {
        let ledger = self.ledger
        return ConsolePages.streamed { write in
            try await write("verify-start", page)
            var result = page
            guard Self.verifications.enter() else {
                result.busy = true
                try await write("verify-end", result)
                return
            }
            defer { Self.verifications.leave() }
            var start = from
            var checked: Int64 = 0
            var broken: ChainReport?
            while start <= end {
                let (stepEnd, overflow) = start.addingReportingOverflow(Self.verifyStep - 1)
                let last = min(end, overflow ? Int64.max : stepEnd)
                let report = try await ledger.verifyChain(from: start, to: last)
                checked += report.checked
                if report.checked > 0 || !report.ok {
                    try await write("verify-step", VerifyStep(from: start, to: start + max(report.checked, 1) - 1, checked: checked, ok: report.ok))
                }
                if !report.ok {
                    broken = report
                    break
                }
                // Past the head: nothing more to re-hash.
                if report.checked < last - start + 1 { break }
                if last == Int64.max { break }
                start = last + 1
            }
            let next: Int64? = broken == nil && checked == AuditRoutes.maximumVerifyWindow && continues ? end + 1 : nil
            let summary =
                broken.map {
                    "The chain is broken at position \($0.firstBadPosition.map(String.init) ?? "?"): \($0.reason ?? "hash mismatch")."
                } ?? "The chain is intact: \(checked) positions re-hashed from \(from)."
            result.report = ReportView(
                ok: broken == nil,
                summary: summary,
                checked: checked,
                firstBadPosition: broken?.firstBadPosition,
                nextFrom: next
            )
            try await write("verify-end", result)
        }
    }
}
