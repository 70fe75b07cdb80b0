import LedgerMacros

import struct Foundation.Calendar
import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.DateComponents
import struct Foundation.TimeZone
import struct Foundation.UUID

// End-of-day settlement, as pure steps. One batch per merchant account, currency and
// business date, its own stream `settlement-<merchant>-<currency>-<date>`:
//
//   opened (business date, cut-off instant, pinned ledger position)
//   closed (the items: every capture/refund recorded before the cut-off, at or before the pinned
//           position, in no earlier batch; counts; gross credit/debit)
//   submitted (batch number, SHA-256 of the report CSV as stored)
//   cleared (fee totals of the report's lines and the sum of their nets)
//   payout scheduled (amount, acquirer's value date, the value date our calendar expects)
//   paid (the acquirer's deposit, recorded by the first run on or after the value date)
//
// Each step is one append with an exact expected version, so a re-run or a resumed run after a
// crash continues from the last recorded step and never records a step twice.

// MARK: - Cut-off

/// The daily cut-off in the merchant's time zone: captures recorded before it on business date D
/// (and after the previous batch's cut-off) settle in D's batch.
public struct SettlementCutOff: Hashable, Sendable {
    /// An IANA time zone identifier, e.g. `America/New_York`.
    public let timeZoneIdentifier: String
    /// Local wall-clock time of the cut-off, seconds after midnight (0 ..< 86 400).
    public let secondsAfterMidnight: Int
    private let timeZone: TimeZone

    /// Fails for an unknown time zone or a time outside the day.
    public init?(timeZoneIdentifier: String, secondsAfterMidnight: Int) {
        guard (0..<86_400).contains(secondsAfterMidnight), let zone = TimeZone(identifier: timeZoneIdentifier) else { return nil }
        self.timeZoneIdentifier = timeZoneIdentifier
        self.secondsAfterMidnight = secondsAfterMidnight
        self.timeZone = zone
    }

    /// Parses `HH:MM` (24-hour).
    public static func parseTime(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let h = Int(parts[0]), let m = Int(parts[1]), h < 24, m < 60
        else { return nil }
        return h * 3600 + m * 60
    }

    /// The instant business date `date` closes: its local cut-off time in the merchant's zone, with
    /// that day's UTC offset (daylight saving included). A wall time skipped by a spring-forward
    /// gap resolves to the first instant after the gap.
    public func instant(closing date: BusinessDate) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let components = DateComponents(
            year: date.year,
            month: date.month,
            day: date.day,
            hour: secondsAfterMidnight / 3600,
            minute: secondsAfterMidnight / 60 % 60,
            second: secondsAfterMidnight % 60
        )
        // Foundation only fails for components that cannot name any day; ours always name one.
        return calendar.date(from: components)!
    }

    /// The merchant's local calendar date at `instant`.
    public func localDate(of instant: Date) -> BusinessDate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: instant)
        return BusinessDate(year: parts.year!, month: parts.month!, day: parts.day!)!
    }
}

// MARK: - Items

/// One capture or refund recorded in the ledger, as a batch holds it.
@MemberwiseInit
public struct SettlementBatchItem: Hashable, Sendable, Codable {
    public var kind: SettlementItemKind
    /// The order id: the authorization's merchant reference.
    public var orderID: String
    /// Our reference of the capture/refund at the acquirer.
    public var modificationReference: String
    /// The acquirer's reference of it.
    public var pspModificationReference: String
    @DecimalMoney public var amount: Money
    @LedgerTimestamp public var recordedAt: Date
    /// The ledger position of the event that recorded it.
    public var position: Int64

    /// The capture or refund a ledger hold event records, if it is one.
    public static func from(_ event: HoldEvent, position: Int64) -> SettlementBatchItem? {
        switch event {
        case .captured(let e):
            return SettlementBatchItem(
                kind: .capture,
                orderID: e.orderID.rawValue,
                modificationReference: e.modificationReference,
                pspModificationReference: e.pspModificationReference,
                amount: e.amount,
                recordedAt: e.capturedAt,
                position: position
            )
        case .refunded(let e):
            return SettlementBatchItem(
                kind: .refund,
                orderID: e.orderID.rawValue,
                modificationReference: e.modificationReference,
                pspModificationReference: e.pspModificationReference,
                amount: e.amount,
                recordedAt: e.refundedAt,
                position: position
            )
        default: return nil
        }
    }

    /// The item as one line of its batch's digest (`items_sha256`):
    /// `position TAB kind TAB order id TAB our reference TAB acquirer's reference TAB amount TAB currency TAB recorded at LF`,
    /// the amount a decimal string and the time RFC 3339 in UTC with microseconds.
    public var canonicalLine: String {
        "\(position)\t\(kind.rawValue)\t\(orderID)\t\(modificationReference)\t\(pspModificationReference)\t"
            + "\(amount.decimalString)\t\(amount.currency.code)\t\(RFC3339.format(recordedAt.epochMicroseconds))\n"
    }

    /// What we send the acquirer for it.
    public var request: SettlementItem {
        SettlementItem(kind: kind, authorizationReference: orderID, modificationReference: modificationReference, amount: amount)
    }

    enum CodingKeys: String, CodingKey {
        case kind
        case orderID = "order_id"
        case modificationReference = "modification_reference"
        case pspModificationReference = "psp_modification_reference"
        case amount
        case recordedAt = "recorded_at"
        case position
    }
}

// MARK: - Events

/// A batch was opened for a business date, pinned to a ledger position.
@MemberwiseInit
public struct SettlementBatchOpened: LedgerEventPayload {
    public static let eventType = "SettlementBatchOpened"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.settlementBatchOpened

    public var batchID: String
    public var merchantAccount: String
    public var currency: Currency
    public var businessDate: BusinessDate
    @LedgerTimestamp public var cutOffAt: Date
    /// The ledger head when the batch opened: no item after it belongs to the batch.
    public var pinnedPosition: Int64
    /// Set when an operator closed the business day before its scheduled cut-off (`cutOffAt` is then the
    /// moment they did); nil for a day closed at its cut-off. Absent from events written before it existed.
    public var earlyClose: SettlementEarlyClose?

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case merchantAccount = "merchant_account"
        case currency
        case businessDate = "business_date"
        case cutOffAt = "cut_off_at"
        case pinnedPosition = "pinned_position"
        case earlyClose = "early_close"
    }
}

/// An operator's early close of a business day (`ledgerd settle --today`, `POST /settlements/run
/// {"close_now": true}`): the day's batches take what was recorded until the operator asked, instead of
/// waiting for the scheduled cut-off; what is captured later settles with the next business day. The
/// schedule itself is unchanged: the record says who closed early and which cut-off they brought forward.
@MemberwiseInit
public struct SettlementEarlyClose: Codable, Hashable, Sendable {
    /// The principal who asked (`operator:op-1`).
    public var requestedBy: String
    /// The cut-off the day had by the schedule.
    @LedgerTimestamp public var scheduledCutOffAt: Date

    enum CodingKeys: String, CodingKey {
        case requestedBy = "requested_by"
        case scheduledCutOffAt = "scheduled_cut_off_at"
    }
}

/// The batch's content was fixed. Its items are not listed: they are the rule's (see
/// ``SettlementBatch/belongs(_:to:settledElsewhere:)``) applied at this point of the log, and the
/// database applies that rule in the same statement (sql/0008), refusing the event when the rule
/// takes other items than the counts and gross amounts stated here. `itemsSHA256` commits to the
/// exact items: the SHA-256 of their ``SettlementBatchItem/canonicalLine``s in ledger order.
///
/// Schema 1 listed the items in the event (`items`); it decodes with `itemsSHA256` nil.
@MemberwiseInit
public struct SettlementBatchClosed: LedgerEventPayload {
    public static let eventType = "SettlementBatchClosed"
    public static let schemaVersion: Int32 = 2
    public static let eventKind = EventKind.settlementBatchClosed

    public var batchID: String
    public var captureCount: Int
    public var refundCount: Int
    /// Σ captures.
    @DecimalMoney public var grossCredit: Money
    /// Σ refunds.
    @DecimalMoney public var grossDebit: Money
    /// grossCredit − grossDebit.
    @DecimalMoney public var gross: Money
    /// Lowercase hex SHA-256 of the items' canonical lines, in ledger order (nil in schema 1).
    public var itemsSHA256: String?

    public var itemCount: Int { captureCount + refundCount }

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case captureCount = "capture_count"
        case refundCount = "refund_count"
        case grossCredit = "gross_credit"
        case grossDebit = "gross_debit"
        case gross
        case itemsSHA256 = "items_sha256"
    }
}

/// The batch was submitted; the acquirer's report is stored with this digest.
@MemberwiseInit
public struct SettlementBatchSubmitted: LedgerEventPayload {
    public static let eventType = "SettlementBatchSubmitted"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.settlementBatchSubmitted

    public var batchID: String
    public var batchNumber: Int
    /// Lowercase hex SHA-256 of the stored report CSV.
    public var reportSHA256: String
    public var reportLineCount: Int

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case batchNumber = "batch_number"
        case reportSHA256 = "report_sha256"
        case reportLineCount = "report_line_count"
    }
}

/// The acquirer priced the batch: fee totals over the report's Settled/Refunded lines (each fee
/// rounded per line by the acquirer) and the sum of their nets.
@MemberwiseInit
public struct SettlementBatchCleared: LedgerEventPayload {
    public static let eventType = "SettlementBatchCleared"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.settlementBatchCleared

    public var batchID: String
    public var lineCount: Int
    @DecimalMoney public var gross: Money
    @DecimalMoney public var interchange: Money
    @DecimalMoney public var schemeFees: Money
    @DecimalMoney public var markup: Money
    @DecimalMoney public var commission: Money
    @DecimalMoney public var net: Money

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case lineCount = "line_count"
        case gross, interchange
        case schemeFees = "scheme_fees"
        case markup, commission, net
    }
}

/// The acquirer announced the payout; `expectedValueDate` is the business date + the funding lag
/// on our calendar (a difference from the acquirer's is for reconciliation to report).
@MemberwiseInit
public struct SettlementPayoutScheduled: LedgerEventPayload {
    public static let eventType = "SettlementPayoutScheduled"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.settlementPayoutScheduled

    public var batchID: String
    public var payoutReference: String
    @DecimalMoney public var amount: Money
    public var valueDate: BusinessDate
    public var expectedValueDate: BusinessDate

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case payoutReference = "payout_reference"
        case amount
        case valueDate = "value_date"
        case expectedValueDate = "expected_value_date"
    }
}

/// The payout reached the merchant's bank account: the acquirer's deposit on its value date.
@MemberwiseInit
public struct SettlementPayoutPaid: LedgerEventPayload {
    public static let eventType = "SettlementPayoutPaid"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.settlementPayoutPaid

    public var batchID: String
    public var payoutReference: String
    @DecimalMoney public var amount: Money
    public var valueDate: BusinessDate

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case payoutReference = "payout_reference"
        case amount
        case valueDate = "value_date"
    }
}

/// The events of a settlement batch stream.
public enum SettlementEvent: Hashable, Sendable {
    case opened(SettlementBatchOpened)
    case closed(SettlementBatchClosed)
    case submitted(SettlementBatchSubmitted)
    case cleared(SettlementBatchCleared)
    case payoutScheduled(SettlementPayoutScheduled)
    case paid(SettlementPayoutPaid)
    /// On `reconciliation-<batch id>`: a reconciliation result, and an operator's resolution of a break.
    case reconciled(ReconciliationRecorded)
    case breakFound(ReconciliationBreakFound)
    case breakResolved(ReconciliationBreakResolved)

    public var payload: any LedgerEventPayload {
        switch self {
        case .opened(let e): return e
        case .closed(let e): return e
        case .submitted(let e): return e
        case .cleared(let e): return e
        case .payoutScheduled(let e): return e
        case .paid(let e): return e
        case .reconciled(let e): return e
        case .breakFound(let e): return e
        case .breakResolved(let e): return e
        }
    }

    /// The event's case in the ``EventCatalogue``.
    public var kind: EventKind { Swift.type(of: payload).eventKind }
    /// The `type` column, e.g. `SettlementBatchOpened`.
    public var type: String { Swift.type(of: payload).eventType }

    /// Every settlement and reconciliation event type: the catalogue's ``EventFamily/settlement`` entries.
    public static let knownTypes: [String] = EventCatalogue.entries.filter { $0.category.family == .settlement }.map(\.type)

    /// Sorted-key JSON (``LedgerJSON``), as the domain's events: byte-identical for equal events.
    public func newEvent(eventID: UUID, effectiveAt: Date) throws(EventCodingError) -> NewEvent {
        try NewEvent(eventID: eventID, payload: payload, effectiveAt: effectiveAt)
    }

    /// Decodes a stored settlement or reconciliation event (a `SettlementBatchClosed` of schema 1 too).
    /// Other types, unsupported schema versions and malformed payloads are typed errors.
    public static func decode(type: String, schemaVersion: Int32, json: String) throws(EventCodingError) -> SettlementEvent {
        guard let entry = EventCatalogue.entry(forType: type), entry.category.family == .settlement,
            case .settlement(let event) = try entry.decode(schemaVersion: schemaVersion, data: Data(json.utf8))
        else {
            throw EventCodingError(.unknownType, type: type, "not a settlement event")
        }
        return event
    }

    /// Decodes a committed row.
    public static func decode(_ recorded: RecordedEvent) throws(EventCodingError) -> SettlementEvent {
        try decode(type: recorded.type, schemaVersion: recorded.schemaVersion, json: recorded.data)
    }
}

// MARK: - State

/// A batch as its stream tells it.
public struct SettlementBatchState: Hashable, Sendable {
    public enum Stage: String, Hashable, Sendable, Comparable, CaseIterable {
        case opened, closed, submitted, cleared
        case payoutScheduled = "payout_scheduled"
        case paid
        var rank: Int { [.opened, .closed, .submitted, .cleared, .payoutScheduled, .paid].firstIndex(of: self)! }
        public static func < (a: Stage, b: Stage) -> Bool { a.rank < b.rank }
    }

    public var version: Int64
    public var stage: Stage
    public var opened: SettlementBatchOpened
    public var closed: SettlementBatchClosed?
    public var submitted: SettlementBatchSubmitted?
    public var cleared: SettlementBatchCleared?
    public var payout: SettlementPayoutScheduled?
    public var paid: SettlementPayoutPaid?

    public static func evolve(_ state: SettlementBatchState?, _ event: SettlementEvent) -> SettlementBatchState? {
        if case .opened(let e) = event {
            return state ?? SettlementBatchState(version: 1, stage: .opened, opened: e)
        }
        guard var state else { return nil }
        if case .reconciled = event { return state }  // another stream's events
        if case .breakResolved = event { return state }
        if case .breakFound = event { return state }
        state.version += 1
        switch event {
        case .opened, .reconciled, .breakFound, .breakResolved: break
        case .closed(let e):
            state.closed = e
            state.stage = .closed
        case .submitted(let e):
            state.submitted = e
            state.stage = .submitted
        case .cleared(let e):
            state.cleared = e
            state.stage = .cleared
        case .payoutScheduled(let e):
            state.payout = e
            state.stage = .payoutScheduled
        case .paid(let e):
            state.paid = e
            state.stage = .paid
        }
        return state
    }

    public static func fold(_ events: [SettlementEvent]) -> SettlementBatchState? {
        events.reduce(nil) { evolve($0, $1) }
    }
}

// MARK: - Deciding

/// Why a settlement step was refused.
public enum SettlementRejection: Error, Hashable, Sendable, CustomStringConvertible {
    case notABusinessDay(BusinessDate)
    case cutOffNotReached(BusinessDate)
    case currencyMismatch(String)
    case conservationViolated(String)
    case wrongStage(String)

    public var description: String {
        switch self {
        case .notABusinessDay(let d): return "\(d) is not a business day; its captures settle with the next business day"
        case .cutOffNotReached(let d): return "the business day \(d) has not reached its cut-off yet"
        case .currencyMismatch(let m), .conservationViolated(let m), .wrongStage(let m): return m
        }
    }
}

public enum SettlementBatch {
    /// `settlement-<merchant>-<currency>-<date>`'s id part (also our batch reference at the acquirer).
    public static func batchID(merchantAccount: String, currency: Currency, businessDate: BusinessDate) -> String {
        "\(merchantAccount)-\(currency.code)-\(businessDate)"
    }

    public static func streamID(batchID: String) -> StreamID { StreamID(category: "settlement", id: batchID) }

    /// Closes the batch over `items` (in ledger order) whose canonical lines hash to `itemsSHA256`.
    public static func close(
        _ opened: SettlementBatchOpened,
        items: some Sequence<SettlementBatchItem>,
        itemsSHA256: String
    ) throws(SettlementRejection) -> SettlementBatchClosed {
        var tally = SettlementBatchTally(opened)
        for item in items { try tally.add(item) }
        return try tally.closed(itemsSHA256: itemsSHA256)
    }

    /// The fee totals of a report's Settled/Refunded lines.
    public static func cleared(batchID: String, currency: Currency, lines: [SettlementReportLine]) -> SettlementBatchCleared {
        var clearing = SettlementClearing()
        for line in lines { clearing.add(line) }
        return clearing.cleared(batchID: batchID, currency: currency)
    }
}

/// A report's lines, added one page at a time as they are read: the cleared event's totals.
public struct SettlementClearing: Sendable {
    private var count = 0
    private var gross: Int64 = 0, interchange: Int64 = 0, scheme: Int64 = 0, markup: Int64 = 0, commission: Int64 = 0, net: Int64 = 0

    public init() {}

    /// Adds a line; the MerchantPayout line is not a priced line and adds nothing.
    public mutating func add(_ line: SettlementReportLine) {
        guard line.type != .merchantPayout else { return }
        count += 1
        gross += line.signedGrossMinorUnits
        net += line.signedNetMinorUnits
        interchange += line.interchange?.minorUnits ?? 0
        scheme += line.schemeFees?.minorUnits ?? 0
        markup += line.markup?.minorUnits ?? 0
        commission += line.commission?.minorUnits ?? 0
    }

    public func cleared(batchID: String, currency: Currency) -> SettlementBatchCleared {
        func m(_ units: Int64) -> Money { Money(minorUnits: units, currency: currency) }
        return SettlementBatchCleared(
            batchID: batchID,
            lineCount: count,
            gross: m(gross),
            interchange: m(interchange),
            schemeFees: m(scheme),
            markup: m(markup),
            commission: m(commission),
            net: m(net)
        )
    }
}

/// A batch's items, added one at a time in ledger order as they stream from the database: the
/// counts and gross amounts of its closed event. Memory does not grow with the batch.
///
/// Which items belong in a batch is not decided here: the database states that rule once
/// (`ledger.settlement_batch_takes`, sql/0010), the daemon selects the items with it
/// (`ledger.settlement_batch_candidates`) and the closed event's trigger takes them with it. The
/// tally counts what it is given, in one currency and in ledger order.
public struct SettlementBatchTally: Sendable {
    public let opened: SettlementBatchOpened
    public private(set) var captureCount = 0
    public private(set) var refundCount = 0
    private var credit: Int64 = 0
    private var debit: Int64 = 0
    private var lastPosition: Int64 = 0

    public init(_ opened: SettlementBatchOpened) { self.opened = opened }

    public var itemCount: Int { captureCount + refundCount }

    /// Adds the next item; refuses one in another currency (its amount cannot be added), one out of
    /// ledger order (the items digest depends on the order), or a total that overflows.
    public mutating func add(_ item: SettlementBatchItem) throws(SettlementRejection) {
        guard item.amount.currency == opened.currency else {
            throw .currencyMismatch("item \(item.modificationReference) is in \(item.amount.currency.code), the batch in \(opened.currency.code)")
        }
        guard item.position > lastPosition else {
            throw .conservationViolated("item \(item.modificationReference) at position \(item.position) is not the batch's next item")
        }
        lastPosition = item.position
        let overflow: Bool
        switch item.kind {
        case .capture:
            (credit, overflow) = credit.addingReportingOverflow(item.amount.minorUnits)
            captureCount += 1
        case .refund:
            (debit, overflow) = debit.addingReportingOverflow(item.amount.minorUnits)
            refundCount += 1
        }
        if overflow { throw .conservationViolated("batch total overflows") }
    }

    /// The closed event: Σ captures − Σ refunds = gross by construction.
    public func closed(itemsSHA256: String) throws(SettlementRejection) -> SettlementBatchClosed {
        let (gross, overflow) = credit.subtractingReportingOverflow(debit)
        if overflow { throw .conservationViolated("batch total overflows") }
        func money(_ units: Int64) -> Money { Money(minorUnits: units, currency: opened.currency) }
        return SettlementBatchClosed(
            batchID: opened.batchID,
            captureCount: captureCount,
            refundCount: refundCount,
            grossCredit: money(credit),
            grossDebit: money(debit),
            gross: money(gross),
            itemsSHA256: itemsSHA256
        )
    }
}

// MARK: - Money conservation

/// The acceptance identities, as checks returning a description of the first violation (nil: holds).
public enum SettlementConservation {
    /// Σ captures − Σ refunds = gross, and the counts match the items (the batch's items, as the
    /// database assigned them).
    public static func grossViolation(_ closed: SettlementBatchClosed, items: [SettlementBatchItem]) -> String? {
        let captures = items.filter { $0.kind == .capture }
        let refunds = items.filter { $0.kind == .refund }
        let credit = captures.reduce(Int64(0)) { $0 + $1.amount.minorUnits }
        let debit = refunds.reduce(Int64(0)) { $0 + $1.amount.minorUnits }
        if captures.count != closed.captureCount || refunds.count != closed.refundCount { return "item counts do not match" }
        if credit != closed.grossCredit.minorUnits || debit != closed.grossDebit.minorUnits { return "gross credit/debit do not match the items" }
        if credit - debit != closed.gross.minorUnits { return "Σ captures − Σ refunds ≠ gross" }
        return nil
    }

    /// For one Settled/Refunded line: net = gross − (interchange + scheme + markup) − commission.
    /// A line whose gross and net are in two currencies converts its gross at its exchange rate, as given
    /// (``SettlementLineEntry/convert(_:from:to:at:)``, half up): its net + fees may differ from that by one minor
    /// unit of rounding (booked to 6195 exchange rounding), no more.
    public static func lineViolation(_ line: SettlementReportLine) -> String? {
        guard line.type != .merchantPayout else { return nil }
        if let gross = line.grossCurrency, let net = line.netCurrency, gross != net {
            let explained = line.signedNetMinorUnits + line.totalFeesMinorUnits
            guard let rate = line.exchangeRate,
                let converted = try? SettlementLineEntry.convert(line.signedGrossMinorUnits, from: gross, to: net, at: rate)
            else {
                return "line \(line.modificationMerchantReference): gross in \(gross.code), net in \(net.code) and no exchange rate"
            }
            guard abs(explained - converted) > 1 else { return nil }
            func amount(_ units: Int64) -> String { "\(Money(minorUnits: units, currency: net).decimalString) \(net.code)" }
            return "line \(line.modificationMerchantReference): net \(amount(line.signedNetMinorUnits)) ≠ gross at the rate "
                + "\(amount(converted)) − fees \(amount(line.totalFeesMinorUnits))"
        }
        if line.signedNetMinorUnits != line.signedGrossMinorUnits - line.totalFeesMinorUnits {
            // Amounts as people read them: decimal strings in the line's currency (its net currency, else its gross).
            guard let currency = line.netCurrency ?? line.grossCurrency else {
                return "line \(line.modificationMerchantReference): net ≠ gross − fees (the line names no currency)"
            }
            func amount(_ units: Int64) -> String { "\(Money(minorUnits: units, currency: currency).decimalString) \(currency.code)" }
            return "line \(line.modificationMerchantReference): net \(amount(line.signedNetMinorUnits)) ≠ gross "
                + "\(amount(line.signedGrossMinorUnits)) − fees \(amount(line.totalFeesMinorUnits))"
        }
        return nil
    }

    /// Σ line nets = payout.
    public static func payoutViolation(lines: [SettlementReportLine], payout: Money) -> String? {
        let nets = lines.filter { $0.type != .merchantPayout }.reduce(Int64(0)) { $0 + $1.signedNetMinorUnits }
        guard nets != payout.minorUnits else { return nil }
        let code = payout.currency.code
        return "Σ line nets \(Money(minorUnits: nets, currency: payout.currency).decimalString) \(code) ≠ payout \(payout.decimalString) \(code)"
    }
}
