import Foundation
import LedgerCore
import LedgerServices

// The API's reply types are the ones swift-openapi-generator makes from `openapi.yaml` (`Generated/`, issue 31): one
// set of wire types for the routes, the CLI and the tests, and none written by hand beside them. The names below are
// those generated types (aliases, not copies), and the initializers build each from the domain. The server encodes
// them with ``WireJSON`` (keys sorted, absent optionals left out), so their bytes are the ones the API always gave.
//
// A domain enum becomes the document's enum of the same spelling (``documented(_:)``); `WireTypesTests` checks that
// every case of every such domain enum has one, so a status added to the domain and not to the document fails a test
// instead of a request.

public typealias PaymentReply = Components.Schemas.PaymentReply
public typealias HoldOperationReply = Components.Schemas.HoldOperationReply
public typealias DisputeReply = Components.Schemas.Dispute
public typealias DisputeListReply = Components.Schemas.DisputeList
public typealias SettlementBatchReply = Components.Schemas.SettlementBatch
public typealias SettlementListReply = Components.Schemas.SettlementList
public typealias SettlementRunReply = Components.Schemas.SettlementRunReply
public typealias SettlementRunLine = Components.Schemas.SettlementRunLine
public typealias ReconciliationReply = Components.Schemas.Reconciliation
public typealias SubscriptionReply = Components.Schemas.Subscription
public typealias SubscriptionListReply = Components.Schemas.SubscriptionList
public typealias WebhookReply = Components.Schemas.Webhook
public typealias WebhookListReply = Components.Schemas.WebhookList
public typealias WebhookDeliveryReply = Components.Schemas.WebhookDelivery
public typealias WebhookDeliveryListReply = Components.Schemas.WebhookDeliveryList
public typealias JournalReply = Components.Schemas.Journal
public typealias ErasureReply = Components.Schemas.ErasureReply

/// The document's case spelled as the domain's `value`. Every domain case has one (`WireTypesTests`), so a miss is a
/// programming error caught by the tests, not input.
package func documented<Wire: RawRepresentable<String>>(_ value: some RawRepresentable<String>) -> Wire {
    guard let wire = Wire(rawValue: value.rawValue) else {
        preconditionFailure("openapi.yaml has no \(Wire.self) '\(value.rawValue)': add it to the document")
    }
    return wire
}

extension Components.Schemas.PaymentReply {
    /// `POST /payment`'s answer in the storefront app's shape: 200 `succeeded`, 402 `failed` with a `decline_code`,
    /// 502 `failed` when the card issuer could not be reached (the shopper is not charged). `id` is the acquirer's PSP
    /// reference, or the order id when there is none; `amount` the order's total in minor units of `currency`.
    public init(_ outcome: PaymentAnswer) {
        self.init(
            id: outcome.reference,
            status: outcome.result == .succeeded ? .succeeded : .failed,
            orderId: outcome.orderID.rawValue,
            orderStatus: documented(outcome.orderStatus),
            amount: Int(outcome.amount.minorUnits),
            currency: outcome.amount.currency.code,
            authCode: outcome.authCode,
            declineCode: outcome.declineCode,
            message: outcome.message
        )
    }
}

extension Components.Schemas.HoldFigures {
    /// A hold's money figures as decimal strings in its currency.
    public init(_ b: HoldBalance) {
        self.init(
            currency: b.authorized.currency.code,
            authorized: b.authorized.decimalString,
            incremented: b.incremented.decimalString,
            captured: b.captured.decimalString,
            reversed: b.reversed.decimalString,
            expired: b.expired.decimalString,
            refunded: b.refunded.decimalString,
            open: b.open.decimalString
        )
    }
}

extension Components.Schemas.HoldOperationReply {
    /// The answer to `POST /orders/{id}/capture|increment|void|refund|ship`: 200 when applied or replayed, 402 for an
    /// increment the issuer declined; `status` is the order's after the operation.
    public init(_ outcome: HoldOperationOutcome) {
        self.init(
            orderId: outcome.orderID.rawValue,
            operation: documented(outcome.operation),
            result: documented(outcome.result),
            status: documented(outcome.orderStatus),
            amount: outcome.amount?.decimalString,
            pspModificationReference: outcome.modificationReference,
            payment: outcome.balance.map(Components.Schemas.HoldFigures.init),
            declineCode: outcome.declineCode,
            message: outcome.message
        )
    }
}

extension Components.Schemas.Dispute {
    /// A dispute as the back office sees it (`GET /disputes`, `GET /disputes/{id}`, the answers to `defend` and
    /// `accept`). `due_at` is the deadline of the stage awaiting the merchant (absent when nothing awaits the merchant);
    /// `net_debited` = charged_back − reversed; `order_status` only in a single dispute's answer.
    public init(_ d: DisputeState, orderStatus: OrderStatus? = nil) {
        self.init(
            disputeId: d.disputeID,
            orderId: d.orderID.rawValue,
            pspReference: d.pspReference,
            network: d.reason.network.rawValue,
            reasonCode: d.reason.code,
            reasonTitle: d.reason.title,
            amount: d.amount.decimalString,
            currency: d.amount.currency.code,
            status: documented(d.status),
            dueAt: d.dueAt.map { RFC3339.format($0.epochMicroseconds) },
            debited: d.debited,
            chargedBack: d.chargedBack.decimalString,
            reversed: d.reversed.decimalString,
            netDebited: d.netDebited.decimalString,
            evidenceRefs: d.evidenceRefs,
            orderStatus: orderStatus.map { documented($0) }
        )
    }
}

extension Components.Schemas.DisputeList {
    /// `GET /disputes?status=&due_before=`.
    public init(_ disputes: [DisputeState]) { self.init(disputes: disputes.map { Components.Schemas.Dispute($0) }) }
}

extension DisputeView {
    /// `{"dispute": …, "history": [{"position", "type", "recorded_at", "actor", "data"}]}`: the history's `data` is
    /// each event as stored.
    package func reply() throws -> RawJSON {
        let entries = history.map { entry in
            RawJSON.object([
                "position": .integer(entry.position),
                "type": .string(entry.type),
                "recorded_at": .string(RFC3339.format(entry.recordedAt.epochMicroseconds)),
                "actor": .optionalString(entry.actor),
                "data": RawJSON(stored: entry.data),
            ])
        }
        return RawJSON.object([
            "dispute": try RawJSON(encoding: Components.Schemas.Dispute(state, orderStatus: orderStatus)),
            "history": .array(entries),
        ])
    }
}

extension Components.Schemas.SettlementBatch {
    /// A settlement batch as the back office reads it: `GET /settlements/{id}` (live or `?as_of=`), each entry of
    /// `GET /settlements`, and `ledgerd audit as-of --settlement`. What the batch has not reached yet is absent;
    /// `closed_early_by` and `scheduled_cut_off_at` are set when an operator closed the day before its cut-off.
    public init(_ s: SettlementBatchState) {
        self.init(
            batchId: s.opened.batchID,
            merchantAccount: s.opened.merchantAccount,
            currency: s.opened.currency.code,
            businessDate: s.opened.businessDate.description,
            cutOffAt: EventJSON.timestamp(s.opened.cutOffAt.epochMicroseconds),
            stage: documented(s.stage),
            pinnedPosition: Int(s.opened.pinnedPosition),
            captures: s.closed?.captureCount ?? 0,
            refunds: s.closed?.refundCount ?? 0,
            grossCredit: s.closed?.grossCredit.decimalString,
            grossDebit: s.closed?.grossDebit.decimalString,
            gross: s.closed?.gross.decimalString,
            batchNumber: s.submitted?.batchNumber,
            reportSha256: s.submitted?.reportSHA256,
            interchange: s.cleared?.interchange.decimalString,
            schemeFees: s.cleared?.schemeFees.decimalString,
            markup: s.cleared?.markup.decimalString,
            commission: s.cleared?.commission.decimalString,
            net: s.cleared?.net.decimalString,
            payoutReference: s.payout?.payoutReference,
            payout: s.payout?.amount.decimalString,
            valueDate: s.payout?.valueDate.description,
            expectedValueDate: s.payout?.expectedValueDate.description,
            paidAmount: s.paid?.amount.decimalString,
            paidValueDate: s.paid?.valueDate.description,
            closedEarlyBy: s.opened.earlyClose?.requestedBy,
            scheduledCutOffAt: s.opened.earlyClose.map { EventJSON.timestamp($0.scheduledCutOffAt.epochMicroseconds) }
        )
    }
}

extension Components.Schemas.SettlementList {
    /// `GET /settlements?from=&to=`: the batches by business date, then batch id.
    public init(_ batches: [SettlementBatchState]) { self.init(settlements: batches.map(Components.Schemas.SettlementBatch.init)) }
}

extension Components.Schemas.SettlementRunBatch {
    /// What a run did to one batch, and where the batch stands now.
    public init(_ outcome: SettlementBatchOutcome) {
        let s = outcome.batch
        self.init(
            batchId: s.opened.batchID,
            currency: s.opened.currency.code,
            stage: documented(s.stage),
            captures: s.closed?.captureCount ?? 0,
            refunds: s.closed?.refundCount ?? 0,
            gross: s.closed?.gross.decimalString ?? "0",
            net: s.cleared?.net.decimalString,
            payout: s.payout?.amount.decimalString,
            valueDate: s.payout?.valueDate.description,
            batchNumber: s.submitted?.batchNumber,
            reportSha256: s.submitted?.reportSHA256,
            appendedEvents: outcome.appendedEvents
        )
    }
}

extension Components.Schemas.SettlementRunReply {
    /// `POST /settlements/run`: the business date's cut-off and what the run did to each batch.
    public init(_ summary: SettlementRunSummary) {
        self.init(
            businessDate: summary.businessDate.description,
            cutOffAt: EventJSON.timestamp(summary.cutOffAt.epochMicroseconds),
            closedEarlyBy: summary.earlyClose?.requestedBy,
            scheduledCutOffAt: summary.earlyClose.map { EventJSON.timestamp($0.scheduledCutOffAt.epochMicroseconds) },
            batches: summary.batches.map(Components.Schemas.SettlementRunBatch.init)
        )
    }
}

extension Components.Schemas.SettlementRunLine {
    // One line of `POST /settlements/run` answered as newline-delimited JSON (`Accept: application/x-ndjson`):
    // `{"progress": …}` for each step as it happens, then `{"summary": …}`, or `{"error": {"code", "message"}}` when
    // the run fails after it started. Exactly one member is present.

    /// A progress line.
    public init(_ progress: SettlementProgress) {
        self.init(
            progress: .init(batchId: progress.batchID, step: progress.step, items: progress.items, detail: progress.detail)
        )
    }

    /// The last line of a run that finished.
    public init(_ summary: SettlementRunSummary) { self.init(summary: Components.Schemas.SettlementRunReply(summary)) }

    /// The last line of a run that failed.
    public init(failure: Components.Schemas.SettlementRunFailure) { self.init(error: failure) }
}

extension Components.Schemas.ReconciliationBreak {
    /// A break and, once an operator resolved it, why and by whom. Amounts (the classes that compare money) are
    /// decimal strings in `currency` (the batch's), or in the break's own when it names one (a line or payout in another
    /// settlement currency: then `currency` is shown); counts, codes and line types as they are.
    public init(_ b: ReconciliationView.Break, currency: Currency) {
        self.init(
            breakId: b.found.breakID,
            _class: documented(b.found.breakClass),
            reference: b.found.reference,
            detail: b.found.detail,
            expected: b.found.figure(b.found.expected, in: currency),
            actual: b.found.figure(b.found.actual, in: currency),
            resolved: b.resolution != nil,
            resolutionReason: b.resolution?.reason,
            resolvedBy: b.resolution?.resolvedBy,
            currency: b.found.currency?.code
        )
    }
}

extension Components.Schemas.ReconciliationReport {
    /// One report's reconciliation: its latest result (`report`: `acquirer` or the upload's key).
    public init(_ r: ReconciliationView.Report, currency: Currency) {
        self.init(
            report: r.report ?? Components.Schemas.Reconciliation.acquirer,
            recordedAt: EventJSON.timestamp(r.recordedAt.epochMicroseconds),
            windowClosed: r.result.windowClosed,
            reportLines: r.result.reportLines,
            ledgerItems: r.result.ledgerItems,
            matched: r.result.matched,
            carried: r.result.carried,
            breaks: r.breaks.map { Components.Schemas.ReconciliationBreak($0, currency: currency) },
            openBreaks: r.openBreaks
        )
    }
}

extension Components.Schemas.Reconciliation {
    /// The name of the acquirer's own report in `report`.
    public static let acquirer = "acquirer"

    /// `GET /settlements/{id}/reconciliation`, and the answer to resolving a break and to uploading a report: the
    /// reconciliation the reply reflects (`report`: `acquirer` for the acquirer's own report, else the upload's key,
    /// `upload-<SHA-256>`) at the top level, every report's reconciliation in `reconciliations` (the acquirer's first,
    /// then each upload), and every resolution ever recorded in `resolutions`.
    public init(_ view: ReconciliationView) {
        self.init(
            batchId: view.result.batchID,
            currency: view.currency.code,
            merchantAccount: view.merchantAccount,
            report: view.reflected.report ?? Self.acquirer,
            windowClosed: view.result.windowClosed,
            reportLines: view.result.reportLines,
            ledgerItems: view.result.ledgerItems,
            matched: view.result.matched,
            carried: view.result.carried,
            breaks: view.breaks.map { Components.Schemas.ReconciliationBreak($0, currency: view.currency) },
            openBreaks: view.openBreaks,
            reconciliations: view.reports.map { Components.Schemas.ReconciliationReport($0, currency: view.currency) },
            resolutions: view.resolutions.map { Components.Schemas.ReconciliationBreak($0, currency: view.currency) }
        )
    }
}

extension Components.Schemas.Subscription {
    /// A durable subscription: `POST /subscriptions`, each entry of `GET /subscriptions`, and the `subscription` member
    /// of its pages. `lag` is how many positions the head is past the checkpoint.
    public init(_ s: StoredSubscription) {
        self.init(
            name: s.name,
            types: s.types,
            streamPrefixes: s.streamPrefixes,
            checkpoint: Int(s.checkpoint),
            head: Int(s.head),
            lag: Int(max(0, s.head - s.checkpoint)),
            createdAt: RFC3339.format(s.createdAtMicros),
            ackedAt: s.ackedAtMicros.map(RFC3339.format)
        )
    }
}

extension Components.Schemas.SubscriptionList {
    /// `GET /subscriptions`.
    public init(_ all: [StoredSubscription]) { self.init(subscriptions: all.map(Components.Schemas.Subscription.init)) }
}

extension Components.Schemas.Webhook {
    /// A webhook endpoint (never its secrets): `POST /webhooks`, `GET /webhooks`, `GET /webhooks/{id}`, redelivery and
    /// rotation. `state` is `active` or `paused`; `cursor` the last position delivered (or skipped as not matching);
    /// `attempts` the failed attempts at the next event.
    public init(_ w: WebhookView) {
        self.init(
            id: w.id.uuidString.lowercased(),
            url: w.url,
            state: w.state,
            types: w.types,
            cursor: Int(w.cursor),
            head: Int(w.head),
            lag: Int(max(0, w.head - w.cursor)),
            attempts: w.attempts,
            nextAttemptAt: RFC3339.format(w.nextAttemptAtMicros),
            createdAt: RFC3339.format(w.createdAtMicros),
            previousSecretValidUntil: w.previousSecretUntilMicros.map(RFC3339.format)
        )
    }
}

extension Components.Schemas.WebhookList {
    /// `GET /webhooks`.
    public init(_ all: [WebhookView]) { self.init(webhooks: all.map(Components.Schemas.Webhook.init)) }
}

extension Components.Schemas.WebhookDelivery {
    /// One attempt of `GET /webhooks/{id}/deliveries`: the event's position, the attempt's number for that event, the
    /// answer's status (absent when none came), its latency, and when a failed one is retried.
    public init(_ d: StoredDelivery) {
        self.init(
            id: Int(d.id),
            position: Int(d.position),
            attempt: d.attempt,
            attemptedAt: RFC3339.format(d.attemptedAtMicros),
            statusCode: d.statusCode,
            error: d.error,
            // A duration, not money: milliseconds with microsecond resolution.
            latencyMs: Double(d.latencyMicros) / 1_000,
            delivered: d.delivered,
            retryAt: d.retryAtMicros.map(RFC3339.format)
        )
    }
}

extension Components.Schemas.WebhookDeliveryList {
    /// `GET /webhooks/{id}/deliveries?after=&limit=`: attempts oldest first; `next_after` pages on.
    public init(_ all: [StoredDelivery], limit: Int) {
        self.init(
            deliveries: all.map(Components.Schemas.WebhookDelivery.init),
            nextAfter: all.count == limit ? all.last.map { Int($0.id) } : nil
        )
    }
}

extension Components.Schemas.Journal {
    /// `GET /journal?from=&to=`: the period's entries in position order, and each account's totals over this page's
    /// entries per currency; ask again with `after=` `next_after` for the next page (absent on the last).
    public init(fromMicros: Int64, toMicros: Int64, entries: [LedgerCore.JournalEntry], nextAfter: Int64? = nil) {
        var sums: [String: [JournalAccount: (debit: Int64, credit: Int64)]] = [:]
        var currencies: [String: Currency] = [:]
        for entry in entries {
            currencies[entry.currency.code] = entry.currency
            for line in entry.lines {
                let current = sums[entry.currency.code, default: [:]][line.account] ?? (0, 0)
                sums[entry.currency.code, default: [:]][line.account] = (current.debit + line.debitMinorUnits, current.credit + line.creditMinorUnits)
            }
        }
        let totals = sums.keys.sorted().flatMap { code in
            let currency = currencies[code]!
            return JournalAccount.allCases.compactMap { account -> Components.Schemas.JournalTotal? in
                guard let sum = sums[code]?[account] else { return nil }
                return Components.Schemas.JournalTotal(
                    account: account.code,
                    accountName: account.name,
                    currency: code,
                    debit: Money(minorUnits: sum.debit, currency: currency).decimalString,
                    credit: Money(minorUnits: sum.credit, currency: currency).decimalString
                )
            }
        }
        self.init(
            from: RFC3339.format(fromMicros),
            to: RFC3339.format(toMicros),
            entries: entries.map(Components.Schemas.JournalEntry.init),
            totals: totals,
            nextAfter: nextAfter.map { Int($0) }
        )
    }
}

extension Components.Schemas.JournalEntry {
    /// A journal entry: the event it records and its balanced lines, each an account and a decimal amount on one side.
    public init(_ e: LedgerCore.JournalEntry) {
        self.init(
            position: Int(e.position),
            eventType: e.eventType,
            recordedAt: RFC3339.format(e.recordedAtMicros),
            effectiveAt: RFC3339.format(e.effectiveAtMicros),
            reference: e.reference,
            currency: e.currency.code,
            lines: e.lines.map {
                Components.Schemas.JournalLine(
                    account: $0.account.code,
                    accountName: $0.account.name,
                    debit: Money(minorUnits: $0.debitMinorUnits, currency: e.currency).decimalString,
                    credit: Money(minorUnits: $0.creditMinorUnits, currency: e.currency).decimalString
                )
            }
        )
    }
}

extension Components.Schemas.ErasureReply {
    /// `POST /privacy/erasures`: the shipping contacts erased, each with the orders that used it and the position of
    /// its `ContactErased` event.
    public init(_ erased: [PrivacyService.Erasure]) {
        self.init(
            erased: erased.map { Components.Schemas.ErasedContact(contactRef: $0.contactRef, orderIds: $0.orderIDs, position: Int($0.position)) }
        )
    }
}
