import Foundation
import HTTPTypes
import Hummingbird
import LedgerBank
import LedgerCore
import LedgerServices

// The third leg on the console (issue 53): a batch's page shows ledger ↔ acquirer ↔ bank, each with its state, and the
// bank breaks naming its payout; Today counts the payouts expected, arrived, late and differing and lists the open bank
// breaks; an operator resolves a bank break with a note (a form with the session's CSRF token, as the reconciliation
// breaks' form).

/// What the console reads of the matching of payouts to bank deposits, and a clerk's resolution of a bank break.
public protocol BankMatchingOperator: Sendable {
    func matchState() async throws -> (BankMatchState, Int64)
    func expectedPayouts() async throws -> [ExpectedPayout]
    func resolveBankBreak(id: String, reason: String, actor: String) async throws -> BankBreakResolved
}

extension BankStatementService: BankMatchingOperator {}

extension ConsoleRoutes {
    /// Where a payout stands at the bank.
    enum BankLegState: String {
        case expected, arrived, late, differs
    }

    /// One payout's bank leg.
    struct PayoutLine {
        let batchID: String
        let batchPath: String
        let reference: String
        let amount: String
        let received: String
        let expectedDate: String
        let latest: String
        let state: String
    }

    /// A bank break as the console shows it, with an operator's resolve form when it is open.
    struct BankBreakView {
        let id: String
        let path: String
        let breakClass: String
        let expected: String
        let actual: String
        let difference: String
        let detail: String
        let resolved: Bool
        let resolution: String
        let form: ResolveForm?
        /// Where the form returns to (a batch's id, or empty: Today).
        let batchID: String
        let csrfToken: String
    }

    /// Today's payouts at the bank.
    struct BankPayoutsView {
        let expected: Int
        let arrived: Int
        let late: Int
        let differs: Int
        /// The payouts that need a look (late, differing), then those still expected; at most ``bankLinesShown``.
        let lines: [PayoutLine]
        let bankBreaks: [BankBreakView]
        let openBreaks: Int
    }

    static let bankLinesShown = 20

    /// The business day of `now` (UTC), as the matching counts windows.
    static func businessDay(_ now: Date) -> BusinessDate {
        BusinessDate(daysSinceEpoch: Int64((now.timeIntervalSince1970 / 86_400).rounded(.down)))
    }

    static func line(_ expected: ExpectedPayout, _ state: BankMatchState, today: BusinessDate) -> PayoutLine {
        let payout = expected.payout
        let received = state.received[payout.batchID]
        let leg: BankLegState =
            switch received {
            case nil: today > expected.latest ? .late : .expected
            case let units? where units == payout.amount.minorUnits: .arrived
            default: .differs
            }
        let code = payout.amount.currency.code
        return PayoutLine(
            batchID: payout.batchID,
            batchPath: Self.path("settlements", payout.batchID),
            reference: payout.payoutReference,
            amount: "\(payout.amount.decimalString) \(code)",
            received: received.map { "\(Money(minorUnits: $0, currency: payout.amount.currency).decimalString) \(code)" } ?? "—",
            expectedDate: expected.expectedDate.description,
            latest: expected.latest.description,
            state: leg.rawValue
        )
    }

    func bankBreakView(
        _ found: BankBreakFound,
        _ state: BankMatchState,
        batchID: String,
        _ signedIn: SignedIn,
        resolving: (breakID: String, form: ResolveForm)?
    )
        -> BankBreakView
    {
        let open = state.isOpen(found.breakID)
        var form: ResolveForm?
        if open && signedIn.isOperator {
            form = resolving?.breakID == found.breakID ? resolving?.form : ResolveForm(reason: "", error: nil)
        }
        let code = found.expected.currency.code
        return BankBreakView(
            id: found.breakID,
            path: Self.path("bank", "breaks", found.breakID),
            breakClass: found.breakClass.rawValue,
            expected: "\(found.expected.decimalString) \(code)",
            actual: "\(found.actual.decimalString) \(code)",
            difference: "\(found.difference.decimalString) \(code)",
            detail: found.detail,
            resolved: !open,
            resolution: state.resolutions[found.breakID].map { "\($0.reason) (\($0.resolvedBy))" } ?? "",
            form: form,
            batchID: batchID,
            csrfToken: signedIn.session.csrfToken
        )
    }

    /// Today's payout lines and open bank breaks (nil when the console has no bank matching).
    func bankPayouts(_ signedIn: SignedIn, now: Date, resolving: (breakID: String, form: ResolveForm)? = nil) async throws -> BankPayoutsView? {
        guard let matching else { return nil }
        let (state, _) = try await matching.matchState()
        let today = Self.businessDay(now)
        let lines = try await matching.expectedPayouts().map { Self.line($0, state, today: today) }
        func count(_ leg: BankLegState) -> Int { lines.reduce(0) { $0 + ($1.state == leg.rawValue ? 1 : 0) } }
        let shown =
            lines.filter { $0.state == BankLegState.late.rawValue || $0.state == BankLegState.differs.rawValue }
            + lines.filter { $0.state == BankLegState.expected.rawValue }
        let open = state.openBreaks
        return BankPayoutsView(
            expected: count(.expected),
            arrived: count(.arrived),
            late: count(.late),
            differs: count(.differs),
            lines: Array(shown.prefix(Self.bankLinesShown)),
            bankBreaks: open.prefix(Self.breaksShown).map { bankBreakView($0, state, batchID: "", signedIn, resolving: resolving) },
            openBreaks: open.count
        )
    }

    /// The three legs of a batch: the ledger's (its stage), the acquirer's (its reconciliations' open breaks) and the
    /// bank's (its payout received or not), each with its state; and the bank breaks naming its payout.
    struct LegsView {
        let states: [ConsolePages.Figure]
        let bankBreaks: [BankBreakView]
    }

    func legs(
        _ batch: SettlementBatchState,
        reconciliation: ReconciliationView?,
        _ signedIn: SignedIn,
        resolving: (breakID: String, form: ResolveForm)?
    ) async throws -> LegsView {
        let id = batch.opened.batchID
        let ledger =
            batch.closed.map { "\(batch.stage.rawValue): \($0.captureCount) captures, \($0.refundCount) refunds, gross \($0.gross.decimalString)" }
            ?? "\(batch.stage.rawValue): not closed yet"
        let acquirer: String
        if let reconciliation {
            let open = reconciliation.reports.flatMap(\.breaks).filter { $0.resolution == nil }.count
            acquirer = open == 0 ? "reconciled: no open break" : "reconciled: \(open) open break\(open == 1 ? "" : "s")"
        } else {
            acquirer = batch.stage >= .submitted ? "submitted, not reconciled yet" : "not submitted yet"
        }
        var bankText = "no payout announced yet"
        var breaks: [BankBreakView] = []
        if let matching {
            let (state, _) = try await matching.matchState()
            if let expected = try await matching.expectedPayouts().first(where: { $0.payout.batchID == id }) {
                let line = Self.line(expected, state, today: Self.businessDay(clock()))
                bankText =
                    switch line.state {
                    case BankLegState.arrived.rawValue: "arrived: \(line.received) (\(line.reference))"
                    case BankLegState.differs.rawValue: "differs: received \(line.received) of \(line.amount) (\(line.reference))"
                    case BankLegState.late.rawValue: "late: \(line.amount) expected on \(line.expectedDate), its window ended \(line.latest)"
                    default: "expected: \(line.amount) on \(line.expectedDate) (window to \(line.latest))"
                    }
            }
            breaks = state.breaks.values.filter { $0.payouts.contains { $0.batchID == id } }.sorted { $0.breakID < $1.breakID }
                .map { bankBreakView($0, state, batchID: id, signedIn, resolving: resolving) }
        } else {
            bankText = "not matched (no bank statements read)"
        }
        return LegsView(
            states: [.init(label: "ledger", value: ledger), .init(label: "acquirer", value: acquirer), .init(label: "bank", value: bankText)],
            bankBreaks: breaks
        )
    }

    /// `POST /console/bank/breaks/{id}/resolve`: an operator's note resolving a bank break (the API's body parser reads
    /// it: its limits and errors). Done: back to the batch (or Today), 303; refused: the page again with the error
    /// beside the break's form.
    func resolveBankBreak(id breakID: String, form: ConsoleForm, _ signedIn: SignedIn) async throws -> Response {
        guard let matching else { throw APIError.notFound("no bank break \(breakID)") }
        let reason = form["reason"] ?? ""
        let batchID = form["batch_id"] ?? ""
        let back = batchID.isEmpty ? "/console/today" : Self.path("settlements", batchID)
        do {
            let body = try JSONSerialization.data(withJSONObject: reason.isEmpty ? [:] : ["reason": reason])
            let parsed = try StrictJSON.decode(ResolutionBody.self, from: ByteBuffer(bytes: body))
            _ = try await matching.resolveBankBreak(id: breakID, reason: parsed.reason, actor: signedIn.principal.actor)
            return ConsolePages.seeOther(back + "?done=resolve")
        } catch {
            let api: APIError
            if let error = error as? ServiceError {
                api = APIError(error)
            } else if let error = error as? APIError {
                api = error
            } else {
                throw error
            }
            if api.status == .notFound || api.status.code >= 500 { throw api }
            let resolving = (breakID, ResolveForm(reason: reason, error: .init(code: api.code, message: api.message)))
            if batchID.isEmpty { return try await today(signedIn, resolving: resolving, status: api.status) }
            return try await batchPage(id: batchID, signedIn, resolvingBank: resolving, status: api.status)
        }
    }
}
