import Foundation
import Logging
import PostgresNIO

/// `ledger.hold_operation_intents` (sql/0015): a hold operation noted before the acquirer is called
/// and deleted once its answer is recorded, so that an operation the acquirer applied while the ledger
/// died (or never heard its answer) is found and recorded by recovery.
package struct HoldIntentStore: PostgresStore {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// One noted operation.
    package struct Intent: Sendable, Hashable {
        package var modificationReference: String
        package var orderID: String
        /// `capture`, `increment`, `void` or `refund`.
        package var kind: String
        package var ledgerKey: String?
        package var requestHash: [UInt8]?
        package var idempotencyKey: String?
        package var actor: String
        package var notedAt: Date

        package init(
            modificationReference: String,
            orderID: String,
            kind: String,
            ledgerKey: String?,
            requestHash: [UInt8]?,
            idempotencyKey: String?,
            actor: String,
            notedAt: Date
        ) {
            self.modificationReference = modificationReference
            self.orderID = orderID
            self.kind = kind
            self.ledgerKey = ledgerKey
            self.requestHash = requestHash
            self.idempotencyKey = idempotencyKey
            self.actor = actor
            self.notedAt = notedAt
        }
    }

    /// Notes `intent` (committed before this returns); the same reference again keeps the first note.
    package func note(_ intent: Intent) async throws {
        try await client.query(
            """
            INSERT INTO ledger.hold_operation_intents
                (modification_reference, order_id, kind, ledger_key, request_hash, idempotency_key, actor, noted_at)
            VALUES (\(intent.modificationReference), \(intent.orderID), \(intent.kind), \(intent.ledgerKey),
                    \(intent.requestHash.map { ByteBuffer(bytes: $0) }), \(intent.idempotencyKey), \(intent.actor), \(intent.notedAt))
            ON CONFLICT (modification_reference) DO NOTHING
            """,
            logger: logger
        )
    }

    /// Deletes the note of `modificationReference` (nothing when there is none).
    package func delete(_ modificationReference: String) async throws {
        try await client.query(
            "DELETE FROM ledger.hold_operation_intents WHERE modification_reference = \(modificationReference)",
            logger: logger
        )
    }

    /// Notes made before `cutoff`, oldest first, at most `limit`.
    package func due(before cutoff: Date, limit: Int) async throws -> [Intent] {
        let rows = try await client.query(
            """
            SELECT modification_reference, order_id, kind, ledger_key, request_hash, idempotency_key, actor, noted_at
            FROM ledger.hold_operation_intents WHERE noted_at < \(cutoff) ORDER BY noted_at, modification_reference LIMIT \(limit)
            """,
            logger: logger
        )
        var intents: [Intent] = []
        for try await (reference, order, kind, key, hash, idempotencyKey, actor, at) in rows.decode(
            (String, String, String, String?, ByteBuffer?, String?, String, Date).self
        ) {
            intents.append(
                Intent(
                    modificationReference: reference,
                    orderID: order,
                    kind: kind,
                    ledgerKey: key,
                    requestHash: hash.map { Array($0.readableBytesView) },
                    idempotencyKey: idempotencyKey,
                    actor: actor,
                    notedAt: at
                )
            )
        }
        return intents
    }
}
