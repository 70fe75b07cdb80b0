/// A value kept behind one reference and copied only when it is written while shared: what the model's
/// dictionaries of holds and modifications store, so that copying the state (a snapshot taken in the
/// background while the model goes on) or growing a dictionary moves one pointer per entry instead of
/// the whole record. Reads and writes go through the wrapped value's members (`hold.open -= 1`);
/// equality, hashing and the encoding are the wrapped value's, so snapshots keep their bytes.
@dynamicMemberLookup
struct CopyOnWrite<Value: Hashable & Sendable & Codable>: Hashable, Sendable, Codable {
    /// Mutated only when uniquely referenced (``value``'s accessor copies it first otherwise).
    private final class Box: @unchecked Sendable {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box

    init(_ value: Value) { box = Box(value) }

    var value: Value {
        get { box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
            yield &box.value
        }
    }

    subscript<T>(dynamicMember path: KeyPath<Value, T>) -> T { box.value[keyPath: path] }

    subscript<T>(dynamicMember path: WritableKeyPath<Value, T>) -> T {
        get { box.value[keyPath: path] }
        _modify { yield &value[keyPath: path] }
    }

    static func == (a: Self, b: Self) -> Bool { a.box === b.box || a.box.value == b.box.value }

    func hash(into hasher: inout Hasher) { box.value.hash(into: &hasher) }

    init(from decoder: any Decoder) throws { box = Box(try Value(from: decoder)) }

    func encode(to encoder: any Encoder) throws { try box.value.encode(to: encoder) }
}
