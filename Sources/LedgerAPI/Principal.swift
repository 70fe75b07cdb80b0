/// Who is calling a back-office endpoint: a role and the key's id (``APIKeyVerifier``), for the
/// event metadata's `actor` (`operator:op-1`).
public struct Principal: Sendable, Hashable {
    public enum Role: String, Sendable, Hashable, Codable, CaseIterable {
        /// Reads and changes (capture, void, refund, …).
        case `operator`
        /// Reads only.
        case auditor
    }

    public let role: Role
    public let keyID: String

    public var actor: String { "\(role.rawValue):\(keyID)" }

    public init(role: Role, keyID: String) {
        self.role = role
        self.keyID = keyID
    }
}
