import Foundation
import Testing

@testable import LedgerAcquirer

/// `ReferenceTable` (issue 57) stands in for the `[String: Value]` dictionaries of the acquirer model: driven by the
/// same random operations as a dictionary, it must answer every read alike and encode to the same bytes.
@Suite struct ReferenceTableTests {
    /// References as the model sees them: long, sharing a prefix (heap strings), and a few short ones (inline strings).
    static func reference(_ n: UInt64) -> String { n % 7 == 0 ? "r\(n)" : "OrderLedgerStore-2026-12-07-order-\(n)-capture-k1" }

    @Test(arguments: [1, 2, 3] as [UInt64]) func answersAsTheDictionaryItReplacesOverRandomOperations(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var table: ReferenceTable<Int> = [:]
        var dictionary: [String: Int] = [:]
        for step in 0..<20_000 {
            let key = Self.reference(random.next() % 3_000)
            switch random.next() % 6 {
            case 0, 1:
                table[key] = step
                dictionary[key] = step
            case 2:
                #expect(table.removeValue(forKey: key) == dictionary.removeValue(forKey: key))
            case 3:
                // In place, through the optional (as `holds[reference]?.response = …`).
                table[key]? += 1
                dictionary[key]? += 1
            case 4:
                table[key] = nil
                dictionary[key] = nil
            default:
                #expect(table[key] == dictionary[key])
            }
            if step % 2_500 == 0 { table = table.compacted() }
        }
        #expect(table.count == dictionary.count && table.isEmpty == dictionary.isEmpty)
        #expect(table.keys.sorted() == dictionary.keys.sorted())
        #expect(table.map { "\($0.key)=\($0.value)" }.sorted() == dictionary.map { "\($0.key)=\($0.value)" }.sorted())
        for n in 0..<3_100 as Range<UInt64> { #expect(table[Self.reference(n)] == dictionary[Self.reference(n)]) }

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = try encoder.encode(table)
        #expect(bytes == (try encoder.encode(dictionary)))
        let decoded = try JSONDecoder().decode(ReferenceTable<Int>.self, from: bytes)
        #expect(decoded == table && decoded.hashValue == table.hashValue)
        let other = ReferenceTable(dictionary.map { ($0.key, $0.value + 1) })
        #expect(other != table)
    }

    @Test func compactingGivesBackTheCapacityOfEntriesTakenOut() {
        var table: ReferenceTable<Int> = [:]
        for n in 0..<50_000 as Range<UInt64> { table[Self.reference(n)] = Int(n) }
        for n in 0..<49_000 as Range<UInt64> { table.removeValue(forKey: Self.reference(n)) }
        let before = table.capacity
        let compacted = table.compacted()
        #expect(compacted.capacity < before / 10 && compacted == table && compacted.count == 1_000)
    }
}

extension ReferenceTable {
    /// A table of these entries (tests).
    init(_ entries: [(String, Value)]) {
        self.init()
        for (key, value) in entries { self[key] = value }
    }
}
