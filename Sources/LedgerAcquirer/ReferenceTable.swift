/// A dictionary keyed by our references (merchant and modification references) whose keys carry their string's hash:
/// a probe compares two stored hashes, side by side in the table, and reads a key's characters only when they are
/// equal — in practice, only for the key it is looking for.
///
/// Issue 57 (the day's decay): from minute 22 of `bench/day.sh` the acquirer service's CPU per request doubled, and a
/// third of its samples were `memcmp` under `Dictionary.find` with `String` keys (`knows(payment:)`, `authorize`,
/// `pspReference(of:)`). Every probe of a `[String: …]` compares the key looked for with the key in the bucket, and a
/// reference longer than 15 bytes lives on the heap: each probe read another string from wherever the allocator had put
/// it, and a lookup of a new reference (an authorization's first question) probes the most. Here a probe is an integer
/// comparison; the characters are compared once, to confirm.
///
/// It behaves as the `[String: Value]` it replaces: the same keys and values, equality and hashing by content, encoded
/// as that dictionary (a snapshot's bytes are unchanged). Iteration order is unspecified, as a dictionary's; the model
/// never lets it decide an answer.
struct ReferenceTable<Value> {
    /// A reference with its hash (`String.hashValue`: seeded per process, so never stored or compared across processes).
    struct HashedReference: Hashable {
        let reference: String
        let hash: Int

        init(_ reference: String) {
            self.reference = reference
            hash = reference.hashValue
        }

        static func == (a: HashedReference, b: HashedReference) -> Bool { a.hash == b.hash && a.reference == b.reference }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    private var storage: [HashedReference: Value]

    init() { storage = [:] }

    private init(storage: [HashedReference: Value]) { self.storage = storage }

    subscript(reference: String) -> Value? {
        get { storage[HashedReference(reference)] }
        _modify { yield &storage[HashedReference(reference)] }
        set { storage[HashedReference(reference)] = newValue }
    }

    @discardableResult
    mutating func removeValue(forKey reference: String) -> Value? { storage.removeValue(forKey: HashedReference(reference)) }

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }
    var capacity: Int { storage.capacity }

    /// The references, in the table's (unspecified) order.
    var keys: some Collection<String> { storage.keys.lazy.map(\.reference) }

    /// The same entries in a table sized for them: gives back the storage of entries taken out (a dictionary keeps its
    /// capacity when emptied).
    func compacted() -> ReferenceTable { ReferenceTable(storage: Dictionary(uniqueKeysWithValues: storage.map { ($0.key, $0.value) })) }
}

extension ReferenceTable: Sequence {
    struct Iterator: IteratorProtocol {
        var base: Dictionary<HashedReference, Value>.Iterator
        mutating func next() -> (key: String, value: Value)? { base.next().map { ($0.key.reference, $0.value) } }
    }

    func makeIterator() -> Iterator { Iterator(base: storage.makeIterator()) }
    var underestimatedCount: Int { storage.count }
}

extension ReferenceTable: ExpressibleByDictionaryLiteral {
    typealias Key = String
    init(dictionaryLiteral elements: (String, Value)...) {
        self.init(storage: Dictionary(uniqueKeysWithValues: elements.map { (HashedReference($0.0), $0.1) }))
    }
}

extension ReferenceTable: Equatable where Value: Equatable {
    static func == (a: ReferenceTable, b: ReferenceTable) -> Bool { a.storage == b.storage }
}

extension ReferenceTable: Hashable where Value: Hashable {
    func hash(into hasher: inout Hasher) { hasher.combine(storage) }
}

extension ReferenceTable: Sendable where Value: Sendable {}

/// Encoded as the `[String: Value]` it replaces.
extension ReferenceTable: Codable where Value: Codable {
    init(from decoder: any Decoder) throws {
        let dictionary = try decoder.singleValueContainer().decode([String: Value].self)
        self.init(storage: Dictionary(uniqueKeysWithValues: dictionary.map { (HashedReference($0.key), $0.value) }))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Dictionary(uniqueKeysWithValues: storage.map { ($0.key.reference, $0.value) }))
    }
}
