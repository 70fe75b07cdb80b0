/// An event payload with a stable name and schema version in the log, registered in the ``EventCatalogue``.
///
/// `eventType` is the `type` column and must never change once events of it were written; a change of
/// payload shape gets a new `schemaVersion`, and the catalogue entry lists the older versions the payload's
/// `Decodable` still reads (``EventCatalogue/Entry/readableSchemaVersions``). Payloads spell their JSON keys
/// out (snake_case) instead of relying on an encoder's key strategy, so the wire format cannot drift with a
/// Foundation release.
///
/// `eventKind` names the payload's case in ``EventKind``, whose exhaustive switch gives every kind its
/// catalogue entry: a payload type cannot exist without naming a kind, and a kind cannot exist without an
/// entry, so an unregistered payload does not compile. The catalogue's tests check that each entry names
/// its payload back.
public protocol LedgerEventPayload: Codable, Hashable, Sendable {
    /// The `type` column, e.g. `OrderOpened`.
    static var eventType: String { get }
    /// The version written now; see ``EventCatalogue/Entry/readableSchemaVersions`` for what is read.
    static var schemaVersion: Int32 { get }
    /// The payload's entry in the ``EventCatalogue``.
    static var eventKind: EventKind { get }
}

/// Why an event could not be encoded or decoded. A struct with a code (the ServiceRunnerError
/// pattern) so the database layer can map it in one place.
public struct EventCodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Hashable, Sendable {
        /// No event type of that name is known to this build.
        case unknownType
        /// The type is known, but not at that schema version.
        case unsupportedSchemaVersion
        /// The JSON does not decode to the type's payload.
        case invalidPayload
        /// The payload could not be encoded to JSON.
        case encodingFailed
    }

    /// What went wrong.
    public let code: Code
    /// The event type concerned (the `type` column).
    public let type: String
    /// A human-readable explanation, e.g. the decoding error.
    public let message: String

    public init(_ code: Code, type: String, _ message: String) {
        self.code = code
        self.type = type
        self.message = message
    }

    public var description: String { "EventCodingError.\(code.rawValue) [\(type)]: \(message)" }
}
