/// The one error the use cases throw for anything a caller can act on (in the style of
/// swift-service-lifecycle's `ServiceRunnerError`: a struct with a kind and a stable code, equal on
/// those two only).
///
/// - `kind` says what went wrong in terms any front end understands (the input, a missing thing, a
///   state conflict, a dependency that is down…); LedgerHTTP turns it into a status code in exactly
///   one place (`LedgerHTTP/HTTPReplies.swift`), the CLI into an exit message.
/// - `code` is stable and machine-readable (`out_of_stock`, `hold_closed`, `idempotency_conflict`…):
///   clients branch on it, so it never changes meaning.
/// - `message` is for people and never carries a database error's text or anything secret; `field`
///   names the offending input when there is one.
///
/// Services never speak HTTP: they do not know status codes, headers or bodies.
public struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is; front ends map each kind to their own vocabulary.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case malformedRequest, invalidInput, notFound, conflict, gone, dependencyFailed, unavailable, internalFailure
        }

        private let base: Base

        /// The request cannot be read at all (not JSON, a parameter of the wrong form).
        public static let malformedRequest = Kind(base: .malformedRequest)
        /// The request is well formed but a value is unacceptable (a wrong amount, an unknown name).
        public static let invalidInput = Kind(base: .invalidInput)
        /// The thing named does not exist.
        public static let notFound = Kind(base: .notFound)
        /// The thing's current state refuses the request (out of stock, hold closed, key reused).
        public static let conflict = Kind(base: .conflict)
        /// The thing existed and was removed on purpose (an erased contact).
        public static let gone = Kind(base: .gone)
        /// A system we depend on (the acquirer) failed or answered something we cannot use.
        public static let dependencyFailed = Kind(base: .dependencyFailed)
        /// Busy or temporarily unable; retrying later (with the same idempotency key) is right.
        public static let unavailable = Kind(base: .unavailable)
        /// Our own failure; nothing the caller did. The detail goes to the log, never to the caller.
        public static let internalFailure = Kind(base: .internalFailure)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    public let code: String
    public let message: String
    public let field: String?

    public init(_ kind: Kind, code: String, message: String, field: String? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(kind) \(code): \(message)" + (field.map { " (\($0))" } ?? "") }

    public static func == (lhs: ServiceError, rhs: ServiceError) -> Bool { lhs.kind == rhs.kind && lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(code)
    }

    // The common ones.

    public static func malformed(_ code: String, _ message: String, field: String? = nil) -> ServiceError {
        ServiceError(.malformedRequest, code: code, message: message, field: field)
    }

    public static func invalid(_ code: String, _ message: String, field: String? = nil) -> ServiceError {
        ServiceError(.invalidInput, code: code, message: message, field: field)
    }

    public static func notFound(_ message: String = "no such resource") -> ServiceError {
        ServiceError(.notFound, code: "not_found", message: message)
    }

    public static func conflict(_ code: String, _ message: String, field: String? = nil) -> ServiceError {
        ServiceError(.conflict, code: code, message: message, field: field)
    }

    public static func unavailable(_ message: String) -> ServiceError {
        ServiceError(.unavailable, code: "unavailable", message: message)
    }

    public static func dependencyFailed(_ code: String, _ message: String) -> ServiceError {
        ServiceError(.dependencyFailed, code: code, message: message)
    }

    /// The ledger database cannot be reached (or went away mid-request): 503, retry later with the same
    /// idempotency key.
    public static let databaseUnavailable = ServiceError(
        .unavailable,
        code: "database_unavailable",
        message: "the ledger database is unavailable; retry shortly (with the same Idempotency-Key)"
    )

    public static let internalFailure = ServiceError(
        .internalFailure,
        code: "internal_error",
        message: "the server failed; the request changed nothing it reported"
    )
}
