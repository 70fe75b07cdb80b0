/// The shipping contacts (personal data, kept outside the log) as the services read and erase them (issue 56, a read
/// port): on PostgreSQL, LedgerPostgres' `ContactsStore` (`ledger.shipping_contacts`, today's SQL).
package protocol ContactBook: Sendable {
    /// Deletes the contact stored under `ref` (nothing when there is none), answered once committed.
    func erase(ref: String) async throws
    /// The contact's JSON (nil: none, or erased).
    func contactJSON(ref: String) async throws -> String?
    /// The references of the contacts `customer` names: an e-mail address (case-insensitive) or a contact reference.
    func refs(naming customer: String) async throws -> [String]
    /// The references of the contacts with the e-mail address `email` (case-insensitive), oldest first, at most `limit`.
    func refs(withEmail email: String, limit: Int) async throws -> [String]
    /// The orders opened with the contact `ref`, oldest first.
    func orderIDs(usingContact ref: String) async throws -> [String]
}
