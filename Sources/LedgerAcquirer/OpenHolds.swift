import HeapModule

import struct Foundation.Date

/// The open holds of an ``AcquirerModelState``: their references in authorization order, and a queue by expiry.
///
/// It replaces an array of references (issue 57, the day's decay): closing a hold removed its reference with a scan
/// of every open hold, string by string, and at a day's load (tens of thousands of holds open for their lifetime)
/// that scan was 62 % of the acquirer service's CPU (`perf`, minute 10 of `bench/day.sh`). Now a close is a hash
/// removal; an expiry pass takes the due holds off the queue's top, and the earliest expiry is its top.
///
/// A closed hold's entry stays in the queue until it reaches the top and is dropped there (a removal from the middle
/// of a heap would cost a search). Equality and the encoding see only the open references in authorization order —
/// what the array was — so a snapshot's bytes are unchanged, and a state restored from one (its queue rebuilt by
/// ``rebuildQueue(expiry:)``, without closed entries) equals the state it was taken from.
struct OpenHolds: Sendable {
    private struct Entry: Comparable {
        var expiresAt: Date
        var sequence: UInt64
        var reference: String

        static func < (a: Entry, b: Entry) -> Bool { (a.expiresAt, a.sequence) < (b.expiresAt, b.sequence) }
        static func == (a: Entry, b: Entry) -> Bool { a.sequence == b.sequence }
    }

    /// Each open reference's authorization sequence number (its place in authorization order).
    private var sequence: ReferenceTable<UInt64> = [:]
    private var nextSequence: UInt64 = 0
    /// An entry per open hold, and the entries of holds closed since that have not reached the top yet.
    private var queue = Heap<Entry>()

    init() {}

    var count: Int { sequence.count }

    func contains(_ reference: String) -> Bool { sequence[reference] != nil }

    /// The open references in authorization order.
    var references: [String] { sequence.sorted { $0.value < $1.value }.map(\.key) }

    /// Opens `reference`, expiring at `expiresAt` (again: a new place, its old entry dropped).
    mutating func insert(_ reference: String, expiresAt: Date) {
        let number = nextSequence
        nextSequence += 1
        sequence[reference] = number
        queue.insert(Entry(expiresAt: expiresAt, sequence: number, reference: reference))
    }

    /// Closes `reference` (nothing when it is not open).
    mutating func remove(_ reference: String) { sequence[reference] = nil }

    /// Takes out every open hold whose expiry is at or before `now`, earliest first (equal expiries in authorization
    /// order).
    mutating func removeDue(at now: Date) -> [String] {
        var due: [String] = []
        while let top = queue.min, top.expiresAt <= now {
            queue.removeMin()
            guard sequence[top.reference] == top.sequence else { continue }  // closed since, or opened again
            sequence[top.reference] = nil
            due.append(top.reference)
        }
        return due
    }

    /// The earliest expiry of an open hold; nil when none is open. Drops the closed entries on the way.
    mutating func earliestExpiry() -> Date? {
        while let top = queue.min {
            if sequence[top.reference] == top.sequence { return top.expiresAt }
            queue.removeMin()
        }
        return nil
    }

    /// The queue for references read from a snapshot (which holds the order, not the expiries): `expiry` gives each
    /// one's, from its hold; a reference without one is kept open and never expires here.
    mutating func rebuildQueue(expiry: (String) -> Date?) {
        queue = Heap(
            sequence.compactMap { reference, number in
                expiry(reference).map { Entry(expiresAt: $0, sequence: number, reference: reference) }
            }
        )
    }
}

extension OpenHolds: Hashable {
    static func == (a: OpenHolds, b: OpenHolds) -> Bool { a.count == b.count && a.references == b.references }
    func hash(into hasher: inout Hasher) { hasher.combine(references) }
}

/// Encoded as the array it replaced: the open references in authorization order.
extension OpenHolds: Codable {
    init(from decoder: any Decoder) throws {
        self.init()
        for reference in try decoder.singleValueContainer().decode([String].self) {
            sequence[reference] = nextSequence
            nextSequence += 1
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(references)
    }
}
