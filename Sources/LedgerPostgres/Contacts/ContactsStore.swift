import LedgerCore
import LedgerEngine
import LedgerMacros
import Logging
import PostgresNIO

/// The shipping contacts (personal data) in `ledger.shipping_contacts`, outside the hash-chained log:
/// the order's events carry only an opaque `contact_ref`, so a contact can be erased on request
/// without touching the chain.
///
/// A contact is written by the append that opens its order (``ContactRow``, sql/0023), in its
/// transaction; every other statement on the table is a method here: the back office reads it, and an
/// erasure finds a data subject's contacts and deletes them.
package struct ContactsStore: PostgresStore, ContactBook {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// Deletes the contact stored under `ref` (nothing when there is none), answered once committed
    /// (``DatabaseClient/committed(_:logger:)``): an erasure reported done stays done across a failover.
    package func erase(ref: String) async throws {
        try await client.committed("DELETE FROM ledger.shipping_contacts WHERE contact_ref = \(ref)", logger: logger)
    }

    /// The contact stored under `ref` as its JSON object, or nil when there is none (never stored, or erased).
    package func contactJSON(ref: String) async throws -> String? {
        let rows = try await client.query(
            "SELECT data::text FROM ledger.shipping_contacts WHERE contact_ref = \(ref)",
            logger: logger
        )
        for try await json in rows.decode(String.self) { return json }
        return nil
    }

    /// The references of the contacts that `customer` names, oldest first: the reference itself, or
    /// every contact with that e-mail address (compared case-insensitively).
    package func refs(naming customer: String) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT contact_ref FROM ledger.shipping_contacts
            WHERE contact_ref = \(customer) OR lower(data ->> 'email') = lower(\(customer))
            ORDER BY created_at, contact_ref
            """,
            logger: logger
        )
        var refs: [String] = []
        for try await ref in rows.decode(String.self) { refs.append(ref) }
        return refs
    }

    /// The references of the contacts with the e-mail address `email` (case-insensitive), oldest first, at most
    /// `limit` (an erased contact has none: its row is gone).
    package func refs(withEmail email: String, limit: Int) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT contact_ref FROM ledger.shipping_contacts WHERE lower(data ->> 'email') = lower(\(email))
            ORDER BY created_at, contact_ref LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var refs: [String] = []
        for try await ref in rows.decode(String.self) { refs.append(ref) }
        return refs
    }

    /// The orders opened with the contact `ref`, oldest first, from the log (which keeps them after
    /// the contact is erased).
    package func orderIDs(usingContact ref: String) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT data ->> 'order_id' FROM ledger.events
            WHERE type = \(OrderOpened.eventType) AND data ->> 'contact_ref' = \(ref) ORDER BY position
            """,
            logger: logger
        )
        var ids: [String] = []
        for try await id in rows.decode(String.self) { ids.append(id) }
        return ids
    }
}
