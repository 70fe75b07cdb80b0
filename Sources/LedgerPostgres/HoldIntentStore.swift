import Foundation
import LedgerEngine
import Logging
import PostgresNIO
import Synchronization

/// `ledger.hold_operation_intents` (sql/0015): a hold operation noted before the acquirer is called
/// and deleted once its answer is recorded, so that an operation the acquirer applied while the ledger
/// died (or never heard its answer) is found and recorded by recovery.
package struct HoldIntentStore: PostgresStore {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// One noted operation (the engine's ``HoldIntent``).
    package typealias Intent = HoldIntent

    /// Notes `notes` and deletes the notes of `dropping`, in one statement (one commit): ``HoldIntentLog``'s flush, as
    /// if the deletions came first: a reference in both holds its new note afterwards. Otherwise the first note of a
    /// reference stays. (Absent keys and hashes travel as empty values, stored as NULL: a
    /// ledger key, a request hash and an Idempotency-Key are never empty.) Answered once committed
    /// (``DatabaseClient/committed(_:logger:)``): the acquirer is called only on a note that outlives a failover — a
    /// statement on its own cut short in its wait for the standby would be answered as done, the acquirer called, and
    /// the note, taken back by the failover, missing when recovery looks for it.
    package func write(noting notes: [Intent], dropping: [String]) async throws {
        var noted = Set<String>()
        let intents = notes.filter { noted.insert($0.modificationReference).inserted }  // the first note of a reference

        let statement: PostgresQuery = """
            WITH dropped AS (
                DELETE FROM ledger.hold_operation_intents WHERE modification_reference = ANY(\(dropping)::text[]) RETURNING 1
            )
            INSERT INTO ledger.hold_operation_intents
                (modification_reference, order_id, kind, ledger_key, request_hash, idempotency_key, actor, noted_at)
            SELECT reference, order_id, kind, NULLIF(ledger_key, ''), NULLIF(request_hash, ''::bytea), NULLIF(idempotency_key, ''),
                   actor, noted_at
            FROM unnest(\(intents.map(\.modificationReference))::text[], \(intents.map(\.orderID))::text[],
                \(intents.map(\.kind))::text[], \(intents.map { $0.ledgerKey ?? "" })::text[],
                \(intents.map { ByteBuffer(bytes: $0.requestHash ?? []) })::bytea[], \(intents.map { $0.idempotencyKey ?? "" })::text[],
                \(intents.map(\.actor))::text[], \(intents.map(\.notedAt))::timestamptz[])
                AS noted(reference, order_id, kind, ledger_key, request_hash, idempotency_key, actor, noted_at)
            -- Read first, so the deletions are done before a row is inserted (an unread CTE would run last).
            WHERE (SELECT count(*) FROM dropped) >= 0
            ON CONFLICT (modification_reference) DO NOTHING
            """
        // Deletions alone acknowledge nothing (a deletion a failover takes back leaves a note that recovery finds
        // recorded and deletes again): one statement, one round trip.
        if intents.isEmpty {
            try await client.query(statement, logger: logger)
        } else {
            try await client.committed(statement, logger: logger)
        }
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

/// The hot path's notes, written together: concurrent operations' notes (each must be committed before its call is
/// sent) and the deletions of notes whose answers are recorded go to the database as one statement, one commit, per
/// flush — a capture took three commits of its own (note, append, delete); under load the notes and deletions of many
/// share one.
///
/// ``note(_:)`` returns once its note is committed (or throws what the statement threw). ``drop(_:)`` returns at once:
/// the deletion rides with the next flush. A deletion lost with the process is harmless — recovery finds the note,
/// sees the modification recorded on the hold, and deletes it (``HoldIntentStore/due(before:limit:)``).
///
/// One flush runs at a time; whoever finds none running starts one, which repeats while anything is pending.
package final class HoldIntentLog: HoldIntents {
    private let store: HoldIntentStore
    private let state = Mutex(Pending())
    private let flushCount = Atomic<Int>(0)

    /// Statements written so far (for tests: fewer than notes under concurrency).
    package var flushes: Int { flushCount.load(ordering: .relaxed) }

    private struct Pending {
        var notes: [(HoldIntentStore.Intent, CheckedContinuation<Void, any Error>)] = []
        var drops: [String] = []
        var flushing = false
    }

    package init(store: HoldIntentStore) {
        self.store = store
    }

    /// Notes `intent`; returns once it is committed.
    package func note(_ intent: HoldIntentStore.Intent) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { pending in
                pending.notes.append((intent, continuation))
                return startFlush(&pending)
            }
            if start { flush() }
        }
    }

    /// Deletes the note of `modificationReference` now (recovery, once it resolved the note).
    package func delete(_ modificationReference: String) async throws { try await store.delete(modificationReference) }

    /// Notes made before `cutoff`, oldest first, at most `limit` (``HoldIntentStore/due(before:limit:)``).
    package func due(before cutoff: Date, limit: Int) async throws -> [HoldIntent] { try await store.due(before: cutoff, limit: limit) }

    /// Deletes the note of `modificationReference` with the next flush.
    package func drop(_ modificationReference: String) {
        let start = state.withLock { pending in
            pending.drops.append(modificationReference)
            return startFlush(&pending)
        }
        if start { flush() }
    }

    private func startFlush(_ pending: inout Pending) -> Bool {
        guard !pending.flushing else { return false }
        pending.flushing = true
        return true
    }

    private func flush() {
        Task {
            while true {
                let (notes, drops) = state.withLock { pending in
                    defer { (pending.notes, pending.drops) = ([], []) }
                    if pending.notes.isEmpty && pending.drops.isEmpty { pending.flushing = false }
                    return (pending.notes, pending.drops)
                }
                if notes.isEmpty && drops.isEmpty { return }
                flushCount.add(1, ordering: .relaxed)
                do {
                    try await store.write(noting: notes.map(\.0), dropping: drops)
                    for (_, waiting) in notes { waiting.resume() }
                } catch {
                    for (_, waiting) in notes { waiting.resume(throwing: error) }
                    if notes.isEmpty {
                        store.logger.debug("hold operation notes not deleted; recovery deletes them", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
    }
}
