/// The acquirer's rules for the references a request names, in one place: the model applies them to what it is asked,
/// and the acquirer service's wire applies them before asking — so a malformed request is refused there (400
/// `invalidRequest`) and journals nothing, where the model's refusal would be remembered for its idempotency key.
///
/// A reference is text that is not empty and holds no NUL character (PostgreSQL's `text` cannot: a batch reference
/// with one was a 503 where the service looked up its pages).
public enum AcquirerReferences {
    /// Whether `reference` is one.
    static func isValid(_ reference: String) -> Bool { !reference.isEmpty && !reference.utf8.contains(0) }

    /// An authorisation's merchant reference (ours) is one.
    public static func check(merchant reference: String) throws(AcquirerError) {
        guard isValid(reference) else { throw AcquirerError(.invalidRequest, "an empty merchant reference, or one with a NUL character") }
    }

    /// A modification (or a settlement item) names its authorisation and itself, each a reference.
    public static func check(authorization: String, modification: String) throws(AcquirerError) {
        guard isValid(authorization), isValid(modification) else {
            throw AcquirerError(.invalidRequest, "an empty authorization or modification reference, or one with a NUL character")
        }
    }

    /// A settlement batch's reference (ours) is one.
    public static func check(batch reference: String) throws(AcquirerError) {
        guard isValid(reference) else { throw AcquirerError(.invalidRequest, "an empty batch reference, or one with a NUL character") }
    }

    /// ``check(authorization:modification:)`` of what `request` names.
    public static func check(_ request: some NamesAModification) throws(AcquirerError) {
        try check(authorization: request.authorizationReference, modification: request.modificationReference)
    }
}

/// A request that names an authorisation and a modification of it (the four modifications, a settlement item).
public protocol NamesAModification {
    var authorizationReference: String { get }
    var modificationReference: String { get }
}

extension CaptureRequest: NamesAModification {}
extension IncrementRequest: NamesAModification {}
extension ReversalRequest: NamesAModification {}
extension RefundRequest: NamesAModification {}
extension SettlementItem: NamesAModification {}
