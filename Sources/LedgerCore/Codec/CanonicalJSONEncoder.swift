import Synchronization

import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.Decimal
import struct Foundation.URL

/// The ledger's JSON form (``LedgerJSON``: compact, keys sorted by their UTF-8 bytes, slashes not escaped)
/// written straight into bytes, without Foundation's `JSONEncoder`.
///
/// Why: every event payload, event metadata, read-model row and reply is encoded on the hot path, and
/// Foundation's encoder builds a tree of boxed values for each one before it writes a byte (about a fifth of
/// the daemon's CPU per payment, issue 28). This writer keeps one byte buffer per nesting depth, reused by
/// siblings: a value's members are written as they are encoded, and an object is assembled (its members
/// sorted) when the `encode(to:)` that filled it returns.
///
/// It writes **exactly** the bytes `JSONEncoder` with ``LedgerJSON/outputFormatting`` writes — the bytes are
/// hashed into the chain and compared with stored idempotency hashes, so the two must never differ
/// (`CanonicalJSONEncoderTests` compares them on every event sample, row and reply type, and on seeded random
/// values). What it does not write the same way, it refuses with ``Unsupported`` and ``LedgerJSON`` falls back
/// to Foundation for that value: `Float`, a `Double` that is not finite (Foundation's error), `Data`, `URL`
/// and `Decimal` (Foundation's own strategies), containers opened with `nestedContainer`, `nestedUnkeyedContainer`
/// or `superEncoder` (filled after the call returns, which this writer's order cannot follow), a value that
/// encodes nothing, and an encoder asked for two kinds of container.
///
/// The rules it shares with Foundation's writer: member names sorted by their UTF-8 bytes (`"10" < "9"`,
/// `"Z" < "_" < "a"`), a name encoded twice keeps its last value; strings escape `"` and `\` with a backslash,
/// U+0008, U+000C, LF, CR and TAB as `\b`, `\f`, `\n`, `\r`, `\t`, other controls below U+0020 as `\u00xx`
/// (lower-case hex), and nothing else (not `/`, not DEL, not non-ASCII); integers in decimal; `nil` as `null`; a finite
/// `Double` as its shortest round-trip `description` without a trailing `.0` (`1.5`, `3`, `1e-07`, `-0`), and a `Date`
/// as that `Double` of its `timeIntervalSinceReferenceDate` (Foundation's default, `deferredToDate`): the acquirer's
/// wire messages and journal carry dates so, and falling back to Foundation for them was most of the acquirer
/// service's JSON cost (issue 28).
package enum CanonicalJSONEncoder {
    /// A value this writer does not encode the way Foundation does; the caller encodes it with Foundation.
    package struct Unsupported: Error, CustomStringConvertible {
        package let description: String
    }

    /// The value's JSON bytes, or ``Unsupported`` (or the value's own error).
    package static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let root = pool.withLock { $0.popLast() }?.encoder ?? ValueEncoder()
        defer {
            root.release()
            pool.withLock { if $0.count < 16 { $0.append(Pooled(encoder: root)) } }
        }
        root.reset()
        try root.encodeValue(value)
        var out: [UInt8] = []
        out.reserveCapacity(root.bytes.count + 2 * root.keys.count + 16)
        try root.assemble(into: &out)
        return out
    }

    /// Encoders ready for another value, with their buffers' capacity (one taken per call, so never shared).
    private static let pool = Mutex<[Pooled]>([])

    private struct Pooled: @unchecked Sendable {  // only ever used by the one call that took it from the pool
        let encoder: ValueEncoder
    }

    /// The `Encoder` of one nesting depth, holding the value being encoded there: the kind of container it asked
    /// for and the bytes of what it holds so far. The next depth's encoder is its ``child``, reused by every
    /// nested value at that depth one after another (a nested value is assembled into its parent's bytes when
    /// its `encode(to:)` returns).
    ///
    /// Its storage is unchecked for exclusive access: one encode call uses one chain of encoders on one thread.
    fileprivate final class ValueEncoder: Encoder {
        enum Kind { case none, object, array, single, failed }
        @exclusivity(unchecked) var kind: Kind = .none
        /// The members' (or elements', or the single value's) bytes, one after another.
        @exclusivity(unchecked) var bytes: [UInt8] = []
        /// The object's member names, in the order encoded.
        @exclusivity(unchecked) var keys: [String] = []
        /// Where each member's or element's bytes end in ``bytes``.
        @exclusivity(unchecked) var ends: [Int] = []
        @exclusivity(unchecked) var failure = ""
        /// The members in the order they are written (reused buffer).
        @exclusivity(unchecked) var order: [Int] = []
        @exclusivity(unchecked) var child: ValueEncoder?
        /// Where refused containers write: kept alive until the call ends, never assembled.
        @exclusivity(unchecked) var sinks: [ValueEncoder] = []

        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func reset() {
            kind = .none
            bytes.removeAll(keepingCapacity: true)
            keys.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
        }

        /// Drops what the call left behind that is not worth keeping (sinks; keys, which hold strings; a large buffer).
        func release() {
            sinks.removeAll()
            keys.removeAll(keepingCapacity: true)
            // A large value's buffer (a settlement's report) is not kept for the next small one.
            if bytes.capacity > 64 * 1_024 { bytes = [] }
            child?.release()
        }

        /// Asks for a container of `wanted` kind: the same kind again is the same container (as in Foundation);
        /// another kind fails the value.
        func open(_ wanted: Kind) {
            if kind == .none {
                kind = wanted
            } else if kind != wanted {
                fail("an encoder was asked for two kinds of container")
            }
        }

        func fail(_ reason: String) {
            if kind != .failed { failure = reason }
            kind = .failed
        }

        /// An encoder whose writes go nowhere: what a refused nested container or super encoder hands back
        /// (the value has failed already, and ``LedgerJSON`` encodes it with Foundation instead).
        func sink() -> ValueEncoder {
            let sink = ValueEncoder()
            sinks.append(sink)
            return sink
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            open(.object)
            return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            open(.array)
            return UnkeyedContainer(encoder: self)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            open(.single)
            return SingleContainer(encoder: self)
        }

        // MARK: Writing

        func writeNull() { bytes.append(contentsOf: "null".utf8) }

        func writeBool(_ value: Bool) { bytes.append(contentsOf: value ? "true".utf8 : "false".utf8) }

        func writeString(_ value: String) { CanonicalJSONEncoder.writeString(value, into: &bytes) }

        func writeInteger<Integer: FixedWidthInteger>(_ value: Integer) {
            CanonicalJSONEncoder.writeInteger(value, into: &bytes)
        }

        /// A finite `Double` as Foundation writes it (callers refuse a non-finite one first: Foundation throws).
        func writeFinite(_ value: Double) { CanonicalJSONEncoder.writeFinite(value, into: &bytes) }

        /// Writes any encodable value: strings and integers directly, Foundation's specially encoded types
        /// refused, anything else through its `encode(to:)` one depth further down.
        func writeValue<Value: Encodable>(_ value: Value) throws {
            // Metatype comparisons, not dynamic casts: this runs for every member.
            if Value.self == String.self { return writeString(unsafeBitCast(value, to: String.self)) }
            if Value.self == Int.self { return writeInteger(unsafeBitCast(value, to: Int.self)) }
            if Value.self == Int64.self { return writeInteger(unsafeBitCast(value, to: Int64.self)) }
            if Value.self == Int32.self { return writeInteger(unsafeBitCast(value, to: Int32.self)) }
            if Value.self == Bool.self { return writeBool(unsafeBitCast(value, to: Bool.self)) }
            if Value.self == Date.self {
                return try writeDouble(unsafeBitCast(value, to: Date.self).timeIntervalSinceReferenceDate)
            }
            if Value.self == Double.self { return try writeDouble(unsafeBitCast(value, to: Double.self)) }
            if Self.isFoundationSpecial(Value.self) {
                throw Unsupported(description: "\(Value.self) is encoded by Foundation's own strategy")
            }
            let child: ValueEncoder
            if let existing = self.child {
                child = existing
            } else {
                child = ValueEncoder()
                self.child = child
            }
            child.reset()
            try child.encodeValue(value)
            try child.assemble(into: &bytes)
        }

        /// Encodes `value` into this (reset) encoder.
        func encodeValue<Value: Encodable>(_ value: Value) throws {
            if Value.self == String.self || Value.self == Int.self || Value.self == Int64.self || Value.self == Int32.self
                || Value.self == Bool.self || Value.self == Date.self || Value.self == Double.self || Self.isFoundationSpecial(Value.self)
            {
                open(.single)
                try writeValue(value)
                endMember()
            } else {
                try value.encode(to: self)
            }
        }

        /// A `Double` as Foundation writes it, or ``Unsupported`` when it is not finite (Foundation's error to throw).
        func writeDouble(_ value: Double) throws {
            guard value.isFinite else { throw Unsupported(description: "a non-finite number") }
            writeFinite(value)
        }

        /// Types Foundation's encoder writes by a strategy of its own (or, `Float`, its own formatting).
        static func isFoundationSpecial(_ type: Any.Type) -> Bool {
            type == Data.self || type == URL.self || type == Decimal.self || type == Float.self
        }

        /// Marks the end of the member or element just written.
        func endMember() { ends.append(bytes.count) }

        func beginMember(_ key: some CodingKey) { keys.append(key.stringValue) }

        func refuse(_ reason: String) { fail(reason) }

        /// Appends the value this encoder holds, in its final form, to `out`.
        func assemble(into out: inout [UInt8]) throws {
            switch kind {
            case .none:
                throw Unsupported(description: "a value encoded nothing")
            case .failed:
                throw Unsupported(description: failure)
            case .single:
                guard ends.count == 1 else { throw Unsupported(description: "a single value container held \(ends.count) values") }
                out.append(contentsOf: bytes)
            case .array:
                out.append(UInt8(ascii: "["))
                var start = 0
                for (index, end) in ends.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    out.append(contentsOf: bytes[start..<end])
                    start = end
                }
                out.append(UInt8(ascii: "]"))
            case .object:
                order.removeAll(keepingCapacity: true)
                order.append(contentsOf: keys.indices)
                // Sorted by name (UTF-8 bytes); among equal names the later one wins, as in a dictionary.
                order.sort { a, b in
                    let (x, y) = (keys[a], keys[b])
                    if x == y { return a < b }
                    return x.utf8.lexicographicallyPrecedes(y.utf8)
                }
                out.append(UInt8(ascii: "{"))
                var first = true
                for (position, index) in order.enumerated() {
                    if position + 1 < order.count, keys[order[position + 1]] == keys[index] { continue }
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    CanonicalJSONEncoder.writeString(keys[index], into: &out)
                    out.append(UInt8(ascii: ":"))
                    out.append(contentsOf: bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
                }
                out.append(UInt8(ascii: "}"))
            }
        }
    }

    fileprivate struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        unowned(unsafe) let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil(forKey key: Key) throws { member(key) { $0.writeNull() } }
        mutating func encode(_ value: Bool, forKey key: Key) throws { member(key) { $0.writeBool(value) } }
        mutating func encode(_ value: String, forKey key: Key) throws { member(key) { $0.writeString(value) } }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            guard value.isFinite else { throw Unsupported(description: "a non-finite number") }
            member(key) { $0.writeFinite(value) }
        }
        mutating func encode(_ value: Float, forKey key: Key) throws { throw Unsupported(description: "binary floating point") }
        mutating func encode(_ value: Int, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: Int8, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: Int16, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: Int32, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: Int64, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            encoder.beginMember(key)
            try encoder.writeValue(value)
            encoder.endMember()
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type,
            forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            encoder.refuse("nestedContainer(keyedBy:forKey:)")
            return encoder.sink().container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            encoder.refuse("nestedUnkeyedContainer(forKey:)")
            return encoder.sink().unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            encoder.refuse("superEncoder()")
            return encoder.sink()
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            encoder.refuse("superEncoder(forKey:)")
            return encoder.sink()
        }

        private func member(_ key: Key, _ write: (ValueEncoder) -> Void) {
            encoder.beginMember(key)
            write(encoder)
            encoder.endMember()
        }
    }

    fileprivate struct UnkeyedContainer: UnkeyedEncodingContainer {
        unowned(unsafe) let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }
        var count: Int { encoder.ends.count }

        mutating func encodeNil() throws { element { $0.writeNull() } }
        mutating func encode(_ value: Bool) throws { element { $0.writeBool(value) } }
        mutating func encode(_ value: String) throws { element { $0.writeString(value) } }
        mutating func encode(_ value: Double) throws {
            guard value.isFinite else { throw Unsupported(description: "a non-finite number") }
            element { $0.writeFinite(value) }
        }
        mutating func encode(_ value: Float) throws { throw Unsupported(description: "binary floating point") }
        mutating func encode(_ value: Int) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: Int8) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: Int16) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: Int32) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: Int64) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt8) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt16) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt32) throws { element { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt64) throws { element { $0.writeInteger(value) } }

        mutating func encode<T: Encodable>(_ value: T) throws {
            try encoder.writeValue(value)
            encoder.endMember()
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            encoder.refuse("nestedContainer(keyedBy:)")
            return encoder.sink().container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            encoder.refuse("nestedUnkeyedContainer()")
            return encoder.sink().unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            encoder.refuse("superEncoder()")
            return encoder.sink()
        }

        private func element(_ write: (ValueEncoder) -> Void) {
            write(encoder)
            encoder.endMember()
        }
    }

    fileprivate struct SingleContainer: SingleValueEncodingContainer {
        unowned(unsafe) let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() throws { single { $0.writeNull() } }
        mutating func encode(_ value: Bool) throws { single { $0.writeBool(value) } }
        mutating func encode(_ value: String) throws { single { $0.writeString(value) } }
        mutating func encode(_ value: Double) throws {
            guard value.isFinite else { throw Unsupported(description: "a non-finite number") }
            single { $0.writeFinite(value) }
        }
        mutating func encode(_ value: Float) throws { throw Unsupported(description: "binary floating point") }
        mutating func encode(_ value: Int) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: Int8) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: Int16) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: Int32) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: Int64) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt8) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt16) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt32) throws { single { $0.writeInteger(value) } }
        mutating func encode(_ value: UInt64) throws { single { $0.writeInteger(value) } }

        mutating func encode<T: Encodable>(_ value: T) throws {
            try encoder.writeValue(value)
            encoder.endMember()
        }

        private func single(_ write: (ValueEncoder) -> Void) {
            write(encoder)
            encoder.endMember()
        }
    }

    // MARK: Scalars

    /// A finite `Double` as Foundation's `JSONEncoder` writes one: its `description` (the shortest text that reads back
    /// as the same value) without a trailing `.0`.
    static func writeFinite(_ value: Double, into bytes: inout [UInt8]) {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string literal, escaped as Foundation escapes it (see the type's documentation).
    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if start < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index])) }
                start = index + 1
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)],
                    ])
                }
            }
            if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<bytes.count])) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// An integer in decimal, `-` for negative values (the minimum of a signed type included).
    static func writeInteger<Integer: FixedWidthInteger>(_ value: Integer, into out: inout [UInt8]) {
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // The magnitude's digits, least significant first, then turned around; never negated (the minimum of a
        // signed type has no positive twin): each remainder is taken by its magnitude.
        let first = out.count
        var rest = value
        while rest != 0 {
            let (quotient, remainder) = rest.quotientAndRemainder(dividingBy: 10)
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder.magnitude))
            rest = quotient
        }
        out[first...].reverse()
    }
}
