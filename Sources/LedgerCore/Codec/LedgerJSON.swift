import struct Foundation.Data
import class Foundation.JSONDecoder
import class Foundation.JSONEncoder

/// The ledger's one JSON configuration, for event payloads, event metadata and the JSON replies and
/// read-model rows built from them.
///
/// - Compact output with **sorted keys** and **unescaped slashes** (`"a/b"`, not `"a\/b"`): equal values give
///   byte-identical JSON, so event bytes can be hashed into the chain, compared with golden files and
///   used in idempotency request hashes. Changing ``outputFormatting`` changes every future event's bytes;
///   it must not change.
/// - Pretty output (the same plus indentation) only for files people read, e.g. checkpoint files.
/// - Default strategies otherwise. Keys are spelled out by each type's `CodingKeys` (snake_case), never
///   converted by a key strategy; dates, money and rates are strings written by their own wrappers
///   (``LedgerTimestamp``, ``DecimalMoney``, ``DecimalRate``), so no date or number strategy is involved.
///
/// Decoding goes through ``DirectJSONDecoder`` the same way: Foundation decodes what it is not certain of.
///
/// Encoding goes through ``CanonicalJSONEncoder`` (the same bytes, written directly: about a fifth of the daemon's
/// CPU per payment was Foundation's encoder), which hands anything it does not write exactly as Foundation does
/// back to the Foundation encoder below.
///
/// The coders are shared `static let` instances, used through the functions below. That is safe under
/// concurrency: on Linux (swift-foundation) and Darwin `JSONEncoder`/`JSONDecoder` are `Sendable`,
/// their options are lock-protected, and each `encode`/`decode` call builds its own internal state
/// from a copy of the options. The instances are private, so nobody can change their options after
/// they were configured once, and no call pays for building and configuring a coder.
public enum LedgerJSON {
    /// Sorted keys, no escaped slashes, no whitespace: the form of every event payload.
    public static let outputFormatting: JSONEncoder.OutputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    /// ``outputFormatting`` plus indentation, for files.
    public static let prettyOutputFormatting: JSONEncoder.OutputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = outputFormatting
        return encoder
    }()

    private static let prettyEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyOutputFormatting
        return encoder
    }()

    private static let decoder = JSONDecoder()

    /// The canonical (compact, sorted-key) JSON of `value`.
    public static func encode(_ value: some Encodable) throws -> Data {
        if let bytes = try? CanonicalJSONEncoder.encode(value) { return Data(bytes) }
        return try encoder.encode(value)
    }

    /// ``encode(_:)`` as text.
    public static func string(_ value: some Encodable) throws -> String {
        if let bytes = try? CanonicalJSONEncoder.encode(value) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The canonical JSON of `value` as Foundation's `JSONEncoder` writes it, never by the direct writer: what
    /// the direct writer's tests compare it with.
    package static func foundationEncode(_ value: some Encodable) throws -> Data {
        try encoder.encode(value)
    }

    /// Indented, sorted-key JSON for files (no trailing line feed).
    public static func prettyString(_ value: some Encodable) throws -> String {
        String(decoding: try prettyEncoder.encode(value), as: UTF8.self)
    }

    /// Decodes `data` with the default strategies (what every payload's `CodingKeys` expect): by
    /// ``DirectJSONDecoder`` where it answers for certain, else by Foundation's `JSONDecoder`.
    public static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        if let value = try data.withUnsafeBytes({ try DirectJSONDecoder.decode(type, from: $0) }) { return value }
        return try decoder.decode(type, from: data)
    }

    /// The same for JSON text, as the database hands back jsonb.
    public static func decode<Value: Decodable>(_ type: Value.Type, from text: String) throws -> Value {
        var text = text
        if let value = try text.withUTF8({ try DirectJSONDecoder.decode(type, from: UnsafeRawBufferPointer($0)) }) { return value }
        return try decoder.decode(type, from: Data(text.utf8))
    }

    /// The same for bytes in memory (a request body).
    public static func decode<Value: Decodable>(_ type: Value.Type, bytes: UnsafeRawBufferPointer) throws -> Value {
        if let value = try DirectJSONDecoder.decode(type, from: bytes) { return value }
        return try decoder.decode(type, from: Data(bytes))
    }

    /// Foundation's decoding alone, never the direct one: what the direct decoder's tests compare it with.
    package static func foundationDecode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        try decoder.decode(type, from: data)
    }
}
