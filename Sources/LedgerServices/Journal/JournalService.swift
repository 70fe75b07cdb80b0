import Foundation
import LedgerCore
import LedgerPostgres

/// The accounting journal of a period (issue 16): the entries of the money events recorded in
/// [from, to) (ledger time), folded by ``AccountingJournal`` with the orders' earlier events as context.
public struct JournalService: Sendable {
    /// Most money events one journal request folds (a day of a busy shop is far below).
    public static let maximumEvents = 2_000_000
    static let pageSize = 5_000

    let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// The journal of the money events recorded at or after `fromMicros` and before `toMicros`.
    public func entries(fromMicros: Int64, toMicros: Int64) async throws -> [JournalEntry] {
        guard fromMicros < toMicros else {
            throw ServiceError.invalid("invalid_range", "from must be before to", field: "from")
        }
        let lower = try await store.position(atMicros: fromMicros - 1)
        let upper = try await store.position(atMicros: toMicros - 1)
        guard lower < upper else { return [] }
        var events: [RecordedEvent] = []
        var cursor = lower
        while true {
            let page = try await store.events(
                after: cursor,
                through: upper,
                matching: EventFilter(types: AccountingJournal.postingTypes + AccountingJournal.contextTypes),
                limit: Self.pageSize
            )
            events += page
            guard page.count == Self.pageSize, let last = page.last else { break }
            guard events.count <= Self.maximumEvents else {
                throw ServiceError.invalid(
                    "range_too_large",
                    "the period holds more than \(Self.maximumEvents) money events; ask for less",
                    field: "to"
                )
            }
            cursor = last.position
        }
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
        return entries
    }
}
