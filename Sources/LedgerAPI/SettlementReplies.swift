import Foundation
import LedgerCore
import LedgerServices

/// A settlement batch as the back office reads it: `GET /settlements/{id}` (live or `?as_of=`), each
/// entry of `GET /settlements`, and `ledgerd audit as-of --settlement`. Amounts are decimal strings in
/// the batch's currency; what the batch has not reached yet is absent.
public struct SettlementBatchReply: Codable, Sendable, Hashable {
    public let batch_id, merchant_account, currency, business_date, cut_off_at: String
    /// `opened`, `closed`, `submitted`, `cleared`, `payout_scheduled` or `paid`.
    public let stage: String
    /// The ledger position the batch's items were selected up to.
    public let pinned_position: Int64
    public let captures, refunds: Int
    public let gross_credit, gross_debit, gross: String?
    public let batch_number: Int?
    public let report_sha256: String?
    public let interchange, scheme_fees, markup, commission, net: String?
    public let payout_reference, payout, value_date, expected_value_date: String?
    public let paid_amount, paid_value_date: String?
    /// Set when an operator closed the business day before its scheduled cut-off (`cut_off_at` is when they
    /// did): who, and the cut-off the schedule gave the day.
    public let closed_early_by, scheduled_cut_off_at: String?

    public init(_ s: SettlementBatchState) {
        batch_id = s.opened.batchID
        merchant_account = s.opened.merchantAccount
        currency = s.opened.currency.code
        business_date = s.opened.businessDate.description
        cut_off_at = EventJSON.timestamp(s.opened.cutOffAt.epochMicroseconds)
        stage = s.stage.rawValue
        pinned_position = s.opened.pinnedPosition
        captures = s.closed?.captureCount ?? 0
        refunds = s.closed?.refundCount ?? 0
        gross_credit = s.closed?.grossCredit.decimalString
        gross_debit = s.closed?.grossDebit.decimalString
        gross = s.closed?.gross.decimalString
        batch_number = s.submitted?.batchNumber
        report_sha256 = s.submitted?.reportSHA256
        interchange = s.cleared?.interchange.decimalString
        scheme_fees = s.cleared?.schemeFees.decimalString
        markup = s.cleared?.markup.decimalString
        commission = s.cleared?.commission.decimalString
        net = s.cleared?.net.decimalString
        payout_reference = s.payout?.payoutReference
        payout = s.payout?.amount.decimalString
        value_date = s.payout?.valueDate.description
        expected_value_date = s.payout?.expectedValueDate.description
        paid_amount = s.paid?.amount.decimalString
        paid_value_date = s.paid?.valueDate.description
        closed_early_by = s.opened.earlyClose?.requestedBy
        scheduled_cut_off_at = s.opened.earlyClose.map { EventJSON.timestamp($0.scheduledCutOffAt.epochMicroseconds) }
    }
}

/// `GET /settlements?from=&to=`: the batches by business date, then batch id.
public struct SettlementListReply: Codable, Sendable, Hashable {
    public let settlements: [SettlementBatchReply]

    public init(_ batches: [SettlementBatchState]) {
        settlements = batches.map(SettlementBatchReply.init)
    }
}

/// `POST /settlements/run`: the business date's cut-off and what the run did to each batch.
public struct SettlementRunReply: Codable, Sendable, Hashable {
    /// What the run did to one batch, and where the batch stands now.
    public struct Batch: Codable, Sendable, Hashable {
        public let batch_id, currency, stage: String
        public let captures, refunds: Int
        /// `"0"` while the batch is not closed.
        public let gross: String
        public let net, payout, value_date: String?
        public let batch_number: Int?
        public let report_sha256: String?
        /// Events this run appended to the batch (0: it was finished before).
        public let appended_events: Int

        public init(_ outcome: SettlementBatchOutcome) {
            let s = outcome.batch
            batch_id = s.opened.batchID
            currency = s.opened.currency.code
            stage = s.stage.rawValue
            captures = s.closed?.captureCount ?? 0
            refunds = s.closed?.refundCount ?? 0
            gross = s.closed?.gross.decimalString ?? "0"
            net = s.cleared?.net.decimalString
            payout = s.payout?.amount.decimalString
            value_date = s.payout?.valueDate.description
            batch_number = s.submitted?.batchNumber
            report_sha256 = s.submitted?.reportSHA256
            appended_events = outcome.appendedEvents
        }
    }

    public let business_date, cut_off_at: String
    /// Set when this run closed the open day before its cut-off (`close_now`): who, and the day's scheduled cut-off.
    public let closed_early_by, scheduled_cut_off_at: String?
    public let batches: [Batch]

    public init(_ summary: SettlementRunSummary) {
        business_date = summary.businessDate.description
        cut_off_at = EventJSON.timestamp(summary.cutOffAt.epochMicroseconds)
        closed_early_by = summary.earlyClose?.requestedBy
        scheduled_cut_off_at = summary.earlyClose.map { EventJSON.timestamp($0.scheduledCutOffAt.epochMicroseconds) }
        batches = summary.batches.map(Batch.init)
    }
}

/// One line of `POST /settlements/run` answered as newline-delimited JSON (`Accept: application/x-ndjson`):
/// `{"progress": …}` for each step as it happens, then `{"summary": …}`, or `{"error": {"code", "message"}}`
/// when the run fails after it started. Exactly one member is present.
public struct SettlementRunLine: Codable, Sendable, Hashable {
    /// One step of the run.
    public struct Progress: Codable, Sendable, Hashable {
        public let batch_id, step: String
        public let items: Int?
        public let detail: String?

        public init(_ progress: SettlementProgress) {
            batch_id = progress.batchID
            step = progress.step
            items = progress.items
            detail = progress.detail
        }
    }

    /// Why a run that had started failed (the error reply's code and message).
    public struct Failure: Codable, Sendable, Hashable {
        public let code, message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public let progress: Progress?
    public let summary: SettlementRunReply?
    public let error: Failure?

    /// A progress line.
    public init(_ progress: SettlementProgress) {
        self.progress = Progress(progress)
        summary = nil
        error = nil
    }

    /// The last line of a run that finished.
    public init(_ summary: SettlementRunSummary) {
        progress = nil
        self.summary = SettlementRunReply(summary)
        error = nil
    }

    /// The last line of a run that failed.
    public init(failure: Failure) {
        progress = nil
        summary = nil
        error = failure
    }
}

/// `GET /settlements/{id}/reconciliation`, and the answer to resolving a break and to uploading a report:
/// the reconciliation the reply reflects (`report`: `acquirer` for the acquirer's own report, else the
/// upload's key, `upload-<SHA-256>`) at the top level, every report's reconciliation in `reconciliations`
/// (the acquirer's first, then each upload), and every resolution ever recorded in `resolutions`.
/// Break amounts are decimal strings in the batch's `currency`, like the rest of the API.
public struct ReconciliationReply: Codable, Sendable, Hashable {
    /// A break and, once an operator resolved it, why and by whom.
    public struct Break: Codable, Sendable, Hashable {
        public let break_id, `class`, reference, detail: String
        /// Amounts (the classes that compare money) are decimal strings; counts, codes and line types as they are.
        public let expected, actual: String?
        public let resolved: Bool
        public let resolution_reason, resolved_by: String?

        public init(_ b: ReconciliationView.Break, currency: Currency) {
            break_id = b.found.breakID
            `class` = b.found.breakClass.rawValue
            reference = b.found.reference
            detail = b.found.detail
            expected = b.found.figure(b.found.expected, in: currency)
            actual = b.found.figure(b.found.actual, in: currency)
            resolved = b.resolution != nil
            resolution_reason = b.resolution?.reason
            resolved_by = b.resolution?.resolvedBy
        }
    }

    /// One report's reconciliation: its latest result.
    public struct Report: Codable, Sendable, Hashable {
        /// `acquirer` or the upload's key.
        public let report: String
        public let recorded_at: String
        public let window_closed: Bool
        public let report_lines, ledger_items, matched: Int
        public let breaks: [Break]
        public let open_breaks: Int

        public init(_ r: ReconciliationView.Report, currency: Currency) {
            report = r.report ?? ReconciliationReply.acquirer
            recorded_at = EventJSON.timestamp(r.recordedAt.epochMicroseconds)
            window_closed = r.result.windowClosed
            report_lines = r.result.reportLines
            ledger_items = r.result.ledgerItems
            matched = r.result.matched
            breaks = r.breaks.map { Break($0, currency: currency) }
            open_breaks = r.openBreaks
        }
    }

    /// The name of the acquirer's own report in `report`.
    public static let acquirer = "acquirer"

    public let batch_id, currency: String
    /// Which report the top-level figures reflect: `acquirer` or an upload's key.
    public let report: String
    /// Whether the next batch's report was known (absent items are then final breaks, not timing).
    public let window_closed: Bool
    public let report_lines, ledger_items, matched: Int
    public let breaks: [Break]
    public let open_breaks: Int
    /// Every report's reconciliation of the batch.
    public let reconciliations: [Report]
    /// Every resolution recorded on the batch, with its break, whether or not a later result still lists it.
    public let resolutions: [Break]

    public init(_ view: ReconciliationView) {
        batch_id = view.result.batchID
        currency = view.currency.code
        report = view.reflected.report ?? Self.acquirer
        window_closed = view.result.windowClosed
        report_lines = view.result.reportLines
        ledger_items = view.result.ledgerItems
        matched = view.result.matched
        breaks = view.breaks.map { Break($0, currency: view.currency) }
        open_breaks = view.openBreaks
        reconciliations = view.reports.map { Report($0, currency: view.currency) }
        resolutions = view.resolutions.map { Break($0, currency: view.currency) }
    }
}
