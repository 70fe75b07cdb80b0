import Crypto
import Foundation
import LedgerCore
import LedgerMacros

/// Events for one stream inside an ``AppendRequest``, with the version the caller expects.
@MemberwiseInit
public struct StreamAppend: Sendable, Hashable {
    public var streamID: StreamID
    public var expectedVersion: ExpectedVersion
    public var events: [NewEvent]
}

/// A client's idempotency key and the hash of the request it was first used with.
@MemberwiseInit
public struct IdempotencyKey: Sendable, Hashable {
    public static let maximumByteLength = 255

    public var key: String
    /// SHA-256 of the request's canonical content (32 bytes).
    public var requestHash: [UInt8]

    /// Keys a request by its content: same content, same hash (see ``AppendRequest/contentHash``).
    public init(key: String, for request: AppendRequest) {
        self.init(key: key, requestHash: request.contentHash)
    }

    /// A client's `Idempotency-Key` as the ledger stores it: `<kind>:<scope>:<client key>`, where the scope is the
    /// unpadded base64url SHA-256 (43 characters) of `scope`'s parts — who sent the key and what it may stand for (a
    /// hold operation's principal, order and kind; an anonymous payment's request hash). Two clients' equal keys are
    /// then two keys (security review 4, L9), and a 200-byte client key still fits ``maximumByteLength``.
    public static func scoped(_ kind: String, scope: [String], clientKey: String, requestHash: [UInt8]) -> IdempotencyKey {
        let digest = Base64URL.encode(SHA256.hash(data: Array(scope.joined(separator: "\u{1F}").utf8)))
        return IdempotencyKey(key: "\(kind):\(digest):\(clientKey)", requestHash: requestHash)
    }
}

/// A read-model row written in the same statement as its events (`ledger.projection_rows`):
/// the aggregate's row in API shape, at the stream version the append produces.
@MemberwiseInit
public struct ProjectionRow: Sendable, Hashable {
    public var projection: String
    public var key: String
    /// The aggregate whose state the row shows; it must be one of the request's streams.
    public var stream: StreamID
    /// The stream version the row reflects; an older row never overwrites a newer one.
    public var version: Int64
    /// The row as a JSON object.
    public var json: String
}

/// A shopper's shipping contact as a payment receives it (personal data): never in an event, stored as a JSON object
/// with the keys `name`, `email`, `street`, `city`, `state` and `zip` in `ledger.shipping_contacts`, where an erasure
/// can delete it without touching the chain.
@MemberwiseInit
public struct ShippingContact: Sendable, Hashable, Codable {
    public var name: String
    public var email: String
    public var street: String
    public var city: String
    public var state: String
    public var zip: String
}

/// A shipping contact written by the append that opens its order, in the same transaction (sql/0023), under the
/// reference the order's `OrderOpened` names: it is stored exactly when the order is, never for a refused or
/// replayed request.
public struct ContactRow: Sendable, Hashable {
    public var ref: String
    /// The contact as its JSON object (encoded by the caller, off the writer's loop).
    public var json: String

    public init(ref: String, contact: ShippingContact) throws {
        self.ref = ref
        self.json = try LedgerJSON.string(contact)
    }
}

/// One command's events, appended atomically across one or more streams: all or nothing.
@MemberwiseInit
public struct AppendRequest: Sendable, Hashable {
    public var streams: [StreamAppend]
    public var metadata: EventMetadata = .init()
    public var idempotency: IdempotencyKey?
    /// Read-model rows computed from the aggregates' states after these events. Only allowed when
    /// every stream has an exact (or no-stream) expectation: then the state the rows came from is
    /// the state the append is checked against.
    public var projections: [ProjectionRow] = []
    /// Shipping contacts stored with these events (the orders they open name them).
    public var contacts: [ContactRow] = []
    /// Streams the request's decision read but does not append to, at the versions it read (a shipping method's
    /// price): the request is refused with a version conflict when one of them moved, as when an appended stream did.
    public var unchanged: [StreamVersion] = []

    public init(
        stream: StreamID,
        expectedVersion: ExpectedVersion,
        events: [NewEvent],
        metadata: EventMetadata = .init(),
        idempotency: IdempotencyKey? = nil
    ) {
        self.init(
            streams: [StreamAppend(streamID: stream, expectedVersion: expectedVersion, events: events)],
            metadata: metadata,
            idempotency: idempotency
        )
    }

    public var eventCount: Int { streams.reduce(0) { $0 + $1.events.count } }

    /// Rejects a malformed request before it can join (and fail) a batch.
    public func validate() throws(AppendError) {
        guard !streams.isEmpty else { throw .invalidAppend("an append needs at least one stream") }
        var expected: [StreamID: ExpectedVersion] = [:]  // a sweep's append has a thousand streams: no linear search per row
        for stream in streams {
            guard expected.updateValue(stream.expectedVersion, forKey: stream.streamID) == nil else {
                throw .invalidAppend("stream \(stream.streamID) appears twice in one append")
            }
            guard !stream.events.isEmpty else {
                throw .invalidAppend("stream \(stream.streamID) has no events")
            }
            if case .exact(let version) = stream.expectedVersion, version < 1 {
                throw .invalidAppend("expected version must be ≥ 1 (use noStream for a new stream)")
            }
            for event in stream.events {
                guard !event.type.isEmpty, event.type.utf8.count <= 200 else {
                    throw .invalidAppend("event type must be 1…200 bytes")
                }
                guard event.schemaVersion > 0 else { throw .invalidAppend("schema version must be ≥ 1") }
            }
        }
        for row in projections {
            guard let expectation = expected[row.stream] else {
                throw .invalidAppend("projection row \(row.projection)/\(row.key) is for a stream not in the append")
            }
            guard expectation != .any else {
                throw .invalidAppend("projection rows need exact stream expectations, not any")
            }
        }
        for stream in unchanged {
            guard expected[stream.streamID] == nil, stream.version >= 0 else {
                throw .invalidAppend("stream \(stream.streamID) is both appended to and expected unchanged")
            }
        }
        var refs = Set<String>()
        for contact in contacts {
            guard !contact.ref.isEmpty, refs.insert(contact.ref).inserted else {
                throw .invalidAppend("a contact needs a reference of its own")
            }
        }
        if let idempotency {
            guard !idempotency.key.isEmpty, idempotency.key.utf8.count <= IdempotencyKey.maximumByteLength else {
                throw .invalidAppend("idempotency key must be 1…\(IdempotencyKey.maximumByteLength) bytes")
            }
            guard idempotency.requestHash.count == 32 else {
                throw .invalidAppend("idempotency request hash must be 32 bytes")
            }
        }
    }

    /// SHA-256 over what the request asks for: streams, expected versions, event types, schema
    /// versions and payloads. Event ids and effective times are left out: a client's retry makes
    /// new ones, and it is still the same request.
    public var contentHash: [UInt8] {
        var hasher = SHA256()
        func feed(_ text: String) {
            var length = UInt32(text.utf8.count).bigEndian
            withUnsafeBytes(of: &length) { hasher.update(bufferPointer: $0) }
            hasher.update(data: Array(text.utf8))
        }
        for stream in streams {
            feed(stream.streamID.rawValue)
            feed(stream.expectedVersion.description)
            for event in stream.events {
                feed(event.type)
                feed(String(event.schemaVersion))
                feed(event.data)
            }
        }
        return Array(hasher.finalize())
    }
}

/// A stream's version after an append.
@MemberwiseInit
public struct StreamVersion: Sendable, Hashable, Codable {
    public var streamID: StreamID
    public var version: Int64

    enum CodingKeys: String, CodingKey {
        case streamID = "stream_id"
        case version
    }
}

/// What an append produced: its positions in the global log and each stream's new version.
@MemberwiseInit
public struct AppendResult: Sendable, Hashable, Codable {
    public var firstPosition: Int64
    public var lastPosition: Int64
    public var streams: [StreamVersion]
    /// True when this is the stored result of an earlier request with the same idempotency key;
    /// nothing was appended this time.
    public var replayed: Bool = false

    enum CodingKeys: String, CodingKey {
        case firstPosition = "first_position"
        case lastPosition = "last_position"
        case streams
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        firstPosition = try c.decode(Int64.self, forKey: .firstPosition)
        lastPosition = try c.decode(Int64.self, forKey: .lastPosition)
        streams = try c.decode([StreamVersion].self, forKey: .streams)
        replayed = false
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(firstPosition, forKey: .firstPosition)
        try c.encode(lastPosition, forKey: .lastPosition)
        try c.encode(streams, forKey: .streams)
    }

    /// The result an idempotency record stores (`ledger.idempotency_keys.result`, JSON) as a replay answers it
    /// (``replayed``); a storage failure naming `key` when it is unreadable.
    package static func replaying(stored json: String, key: String) throws(AppendError) -> AppendResult {
        guard var result = try? JSONDecoder().decode(AppendResult.self, from: Data(json.utf8)) else {
            throw .storageFailure("the stored result of idempotency key \"\(key)\" is unreadable")
        }
        result.replayed = true
        return result
    }
}
