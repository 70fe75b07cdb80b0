import Foundation
import LedgerCore
import LedgerEngine

/// The accounting journal of a period: the entries of the money events recorded in
/// [from, to) (ledger time), folded by ``AccountingJournal`` with the orders' earlier events as context.
public struct JournalService: Sendable {
    /// Most money events one journal request folds (a day of a busy shop is far below).
    public static let maximumEvents = 2_000_000
    static let pageSize = 5_000

    /// The event store (on PostgreSQL, LedgerPostgres' `EventStore`; an auditor's replica when there is one).
    let store: any PositionReads

    package init(store: any PositionReads) { self.store = store }

    /// One page of a period's journal: its entries, and the position to ask `after` for the next page (nil: the last).
    public struct Page: Sendable {
        public let entries: [JournalEntry]
        public let nextAfter: Int64?
    }

    /// The journal of the money events recorded at or after `fromMicros` and before `toMicros`, whole (the command
    /// line's export, offline): its pages in order.
    public func entries(fromMicros: Int64, toMicros: Int64) async throws -> [JournalEntry] {
        var entries: [JournalEntry] = []
        var after: Int64 = 0
        var read = 0
        while true {
            let page = try await page(fromMicros: fromMicros, toMicros: toMicros, after: after, limit: Self.pageSize)
            entries += page.entries
            guard let next = page.nextAfter else { return entries }
            read += Self.pageSize
            guard read <= Self.maximumEvents else {
                throw ServiceError.invalid(
                    "range_too_large",
                    "the period holds more than \(Self.maximumEvents) money events; ask for less",
                    field: "to"
                )
            }
            after = next
        }
    }

    /// A page of the period's journal (review 3, N3: `GET /journal` answered the whole period at once): the entries of
    /// at most `limit` journal events (money events and their context) after position `after`. Memory is bounded by
    /// `limit`, whatever the period; `nextAfter` is the cursor of the next page. An order's earlier events (before the
    /// page) are folded as context, so a page's entries are those the whole period's fold gives.
    public func page(fromMicros: Int64, toMicros: Int64, after: Int64, limit: Int) async throws -> Page {
        guard fromMicros < toMicros else {
            throw ServiceError.invalid("invalid_range", "from must be before to", field: "from")
        }
        precondition(limit >= 1)
        let lower = max(try await store.position(atMicros: fromMicros - 1), after)
        let upper = try await store.position(atMicros: toMicros - 1)
        guard lower < upper else { return Page(entries: [], nextAfter: nil) }
        let events = try await store.events(
            after: lower,
            through: upper,
            matching: EventFilter(types: AccountingJournal.postingTypes + AccountingJournal.contextTypes),
            limit: limit
        )
        let nextAfter = events.count == limit ? events.last.flatMap { $0.position < upper ? $0.position : nil } : nil
        // Captures and refunds are split by their order's amounts and earlier captures and refunds:
        // fold those orders' streams from their start.
        var orders = Set<String>()
        for event in events where event.type == HoldCaptured.eventType || event.type == HoldRefunded.eventType {
            orders.insert(event.streamID.rawValue.dropFirst("hold-".count).description)
        }
        let streams = orders.sorted().flatMap { [StreamID("order-\($0)"), StreamID("hold-\($0)")] }.compactMap { $0 }
        var context: [RecordedEvent] = []
        for chunk in stride(from: 0, to: streams.count, by: 1_000) {
            let slice = Array(streams[chunk..<min(chunk + 1_000, streams.count)])
            context += try await store.readStreams(slice, through: lower)
        }
        var journal = AccountingJournal()
        var entries: [JournalEntry] = []
        for event in (context + events).sorted(by: { $0.position < $1.position }) {
            let decoded: LedgerEvent
            do {
                decoded = try EventCatalogue.decode(type: event.type, schemaVersion: event.schemaVersion, data: Data(event.data.utf8))
            } catch {
                throw ServiceError.internalFailure
            }
            let entry = journal.post(
                decoded,
                position: event.position,
                recordedAtMicros: event.recordedAtMicros,
                effectiveAtMicros: event.effectiveAtMicros
            )
            if let entry, event.position > lower { entries.append(entry) }
        }
        return Page(entries: entries, nextAfter: nextAfter)
    }
}
