import Crypto
import LedgerCore
import Logging
import PostgresNIO

/// Verifies the hash chain, in Swift (independently of the database's own function) or by asking
/// the database to run `ledger.verify_chain`. Both follow the same rules and report the same
/// first bad position: a missing position, a `prev_hash` that is not the previous hash, a hash
/// that does not match the event's canonical bytes, or a head that disagrees with the last event.
public struct ChainVerifier: Sendable {
    private let store: EventStore
    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.store = EventStore(client: client, logger: logger)
        self.logger = logger
    }

    /// SHA-256(prev ‖ canonical bytes), the chain link of one event.
    public static func linkHash(prevHash: [UInt8], event: RecordedEvent) -> [UInt8] {
        Array(SHA256.hash(data: CanonicalEventLayout.hashInput(prevHash: prevHash, event: event)))
    }

    /// Recomputes the chain over [from, to] (to defaults to the head) in Swift.
    public func verify(from: Int64 = 1, to: Int64? = nil, pageSize: Int = 5_000,
                       progress: (@Sendable (Int64) -> Void)? = nil) async throws -> ChainReport {
        let from = max(from, 1)
        let head = try await store.head()
        let to = min(to ?? head.position, head.position)
        guard from <= to else { return ChainReport(ok: true, checked: 0) }

        var prev: [UInt8]
        if from == 1 {
            prev = CanonicalEventLayout.genesisHash
        } else if let hash = try await store.hash(at: from - 1) {
            prev = hash
        } else {
            return .bad(from - 1, checked: 0, "event is missing")
        }

        var expected = from
        var checked: Int64 = 0
        while expected <= to {
            let page = try await store.read(from: expected, through: to, limit: pageSize)
            if page.isEmpty { break }
            for event in page {
                if event.position != expected { return .bad(expected, checked: checked, "event is missing") }
                if event.prevHash != prev {
                    return .bad(event.position, checked: checked, "prev_hash is not the hash of the previous event")
                }
                if Self.linkHash(prevHash: prev, event: event) != event.hash {
                    return .bad(event.position, checked: checked, "hash does not match the event's contents")
                }
                prev = event.hash
                expected += 1
                checked += 1
            }
            progress?(checked)
        }
        if expected <= to { return .bad(expected, checked: checked, "event is missing") }
        if to == head.position && prev != head.hash {
            return .bad(head.position, checked: checked, "ledger head does not match the last event")
        }
        return ChainReport(ok: true, checked: checked)
    }

    /// Checks the log against a signed checkpoint: the chain verifies over [1, position] and the
    /// event at `position` still has `hash`. Catches a truncated tail whose head was moved back
    /// (the rest of the chain is intact) and a history rewritten with recomputed hashes. The same
    /// rules and reasons as `ledger.verify_prefix` (sql/0005).
    public func verifyPrefix(position: Int64, hash: [UInt8]) async throws -> ChainReport {
        let chain = try await verify(from: 1, to: position)
        guard chain.ok else { return chain }
        if chain.checked < position {
            let head = try await store.head().position
            return .bad(chain.checked + 1, checked: chain.checked,
                        "the log ends at position \(head) but the checkpoint covers \(position): events were removed")
        }
        guard try await store.hash(at: position) == hash else {
            return .bad(position, checked: chain.checked,
                        "the event at the checkpoint's position does not have the signed hash: history up to it was rewritten")
        }
        return chain
    }

    /// The same check by the database's own function, `ledger.verify_prefix(position, hash)`.
    public func verifyPrefixInDatabase(position: Int64, hash: [UInt8]) async throws -> ChainReport {
        let rows = try await client.query(
            "SELECT ok, checked, first_bad_position, reason FROM ledger.verify_prefix(\(position), \(ByteBuffer(bytes: hash)))",
            logger: logger)
        for try await (ok, checked, bad, reason) in rows.decode((Bool, Int64, Int64?, String?).self) {
            return ChainReport(ok: ok, checked: checked, firstBadPosition: bad, reason: reason)
        }
        throw AppendError.storageFailure("ledger.verify_prefix returned no row")
    }

    /// Runs the database's own verifier, `ledger.verify_chain(from, to)`.
    public func verifyInDatabase(from: Int64 = 1, to: Int64? = nil) async throws -> ChainReport {
        let rows = try await client.query(
            "SELECT ok, checked, first_bad_position, reason FROM ledger.verify_chain(\(from), \(to))", logger: logger)
        for try await (ok, checked, bad, reason) in rows.decode((Bool, Int64, Int64?, String?).self) {
            return ChainReport(ok: ok, checked: checked, firstBadPosition: bad, reason: reason)
        }
        throw AppendError.storageFailure("ledger.verify_chain returned no row")
    }
}
