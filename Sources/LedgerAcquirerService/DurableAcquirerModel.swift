import LedgerAcquirer
import LedgerCore
import LedgerPostgres
import Logging
import PostgresNIO

import struct Foundation.Data
import struct Foundation.Date

/// The acquirer model made durable: the pure ``AcquirerModelState`` in memory, its journal in
/// PostgreSQL (``AcquirerJournal``), and the rule that no answer leaves before its command is committed.
///
/// Requests queue; a drain loop takes everything queued, applies it to the state in order, writes all
/// of it as one multi-row INSERT (one commit for many requests, as the ledger's writer does) and only
/// then answers. Reads go through the same queue, so nothing is ever answered from a state that is not
/// yet durable. If a commit fails, its requests are answered 503 (their outcome is unknown to the
/// client, which retries with the same key) and the state is rebuilt from the journal before anything
/// else runs: whatever did commit is then known, whatever did not is gone.
public actor DurableAcquirerModel {
    /// What a queued request asks for.
    public enum Operation: Sendable {
        /// A command to apply and journal; `psp`: the psp reference the request named, which must be
        /// the payment's; `items`: a settlement's items (read from the uploaded pages).
        case command(JournalCommand, psp: String?, items: [SettlementItem])
        case query(merchantReference: String)
        case reportLines(batchNumber: Int, from: Int, count: Int)
        case payout(batchNumber: Int)
        /// The dispute feed after a position (a read: the feed is decided by journalled settlements).
        case disputeNotifications(after: Int, limit: Int)
    }

    private struct Pending {
        let operation: Operation
        let key: String?
        let continuation: CheckedContinuation<AcquirerReply, Never>
    }

    private var state: AcquirerModelState
    private var lastSeq: Int64
    private let journal: AcquirerJournal
    private let clock: @Sendable () -> Date
    private let logger: Logger
    private let seed: UInt64
    private let configuration: AcquirerModelConfiguration
    private var pending: [Pending] = []
    private var draining = false
    private var needsReload = false
    /// The journal position of the newest snapshot (0: none).
    private var snapshotSeq: Int64
    private let snapshotEvery: Int64
    private let useSnapshots: Bool
    private var snapshotting = false

    /// Opens the journal in `client`'s database and replays it. The journal's recorded seed and
    /// configuration win over the given ones (replaying with others would give another state); a
    /// difference is logged.
    ///
    /// Boot cost is bounded by snapshots (acquirer 0002): the newest snapshot is loaded and only the
    /// journal after it replayed (`useSnapshots: false`: the whole journal, as a check). A snapshot is
    /// taken in the background once the journal has grown by `snapshotEvery` commands and by at least
    /// as many as the last snapshot covered, so replay after a start covers at most about half the
    /// journal (or `snapshotEvery` commands) while snapshots cost O(journal) in total. 0: never.
    public static func open(
        client: DatabaseClient,
        seed: UInt64,
        configuration: AcquirerModelConfiguration,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        snapshotEvery: Int64 = 100_000,
        useSnapshots: Bool = true
    ) async throws -> DurableAcquirerModel {
        let journal = AcquirerJournal(client: client, logger: logger)
        let recorded = try await journal.model(seed: seed, configuration: configuration)
        if recorded.seed != seed || recorded.configuration != configuration {
            logger.warning("the acquirer journal was started with another seed or configuration; using the journal's")
        }
        let (state, snapshotSeq, last) = try await Self.load(journal: journal, recorded: recorded, useSnapshots: useSnapshots, logger: logger)
        return DurableAcquirerModel(
            state: state,
            lastSeq: last,
            snapshotSeq: snapshotSeq,
            snapshotEvery: snapshotEvery,
            useSnapshots: useSnapshots,
            journal: journal,
            clock: clock,
            logger: logger,
            recorded: recorded
        )
    }

    /// The state as the newest snapshot and the journal after it give it (or the whole journal).
    private static func load(
        journal: AcquirerJournal,
        recorded: (seed: UInt64, configuration: AcquirerModelConfiguration),
        useSnapshots: Bool,
        logger: Logger
    ) async throws -> (state: AcquirerModelState, snapshotSeq: Int64, lastSeq: Int64) {
        var state = AcquirerModelState(seed: recorded.seed, configuration: recorded.configuration)
        var from: Int64 = 0
        if useSnapshots, let snapshot = try await journal.latestSnapshot() {
            state = try AcquirerModelState(snapshot: snapshot.data)
            from = snapshot.seq
        }
        let last = try await journal.replay(into: &state, after: from)
        logger.info("acquirer journal replayed", metadata: ["snapshot": "\(from)", "commands": "\(last - from)", "last": "\(last)"])
        return (state, from, last)
    }

    private init(
        state: AcquirerModelState,
        lastSeq: Int64,
        snapshotSeq: Int64,
        snapshotEvery: Int64,
        useSnapshots: Bool,
        journal: AcquirerJournal,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        recorded: (seed: UInt64, configuration: AcquirerModelConfiguration)
    ) {
        self.state = state
        self.lastSeq = lastSeq
        self.snapshotSeq = snapshotSeq
        self.snapshotEvery = snapshotEvery
        self.useSnapshots = useSnapshots
        self.journal = journal
        self.clock = clock
        self.logger = logger
        self.seed = recorded.seed
        self.configuration = recorded.configuration
    }

    /// The model's configuration (the journal's).
    public var modelConfiguration: AcquirerModelConfiguration { configuration }

    /// The whole state as canonical JSON (tests: same seed and requests → same bytes).
    public func snapshot() throws -> Data { try state.snapshot() }

    /// Commands journalled so far.
    public var journalLength: Int64 { lastSeq }

    /// The journal position of the newest snapshot taken or loaded (0: none).
    public var snapshotPosition: Int64 { snapshotSeq }

    /// Stores a snapshot of the state now (with its journal position) and waits for it.
    public func takeSnapshot() async throws {
        let (copy, seq) = (state, lastSeq)
        guard seq > snapshotSeq else { return }
        try await Self.write(copy, seq: seq, journal: journal)
        snapshotSeq = max(snapshotSeq, seq)
    }

    /// Encodes and stores `state` off the actor (the state is a value: the copy does not move).
    private static func write(_ state: AcquirerModelState, seq: Int64, journal: AcquirerJournal) async throws {
        let data = try await Task.detached { try state.snapshot() }.value
        try await journal.storeSnapshot(data, seq: seq)
    }

    /// Starts a background snapshot when the journal has grown enough since the last one.
    private func snapshotIfDue() {
        guard snapshotEvery > 0, !snapshotting, lastSeq - snapshotSeq >= max(snapshotEvery, snapshotSeq) else { return }
        snapshotting = true
        let (copy, seq, journal, logger) = (state, lastSeq, journal, logger)
        Task.detached {
            do {
                try await Self.write(copy, seq: seq, journal: journal)
                await self.snapshotDone(seq)
                logger.info("acquirer snapshot stored", metadata: ["seq": "\(seq)"])
            } catch {
                await self.snapshotDone(nil)
                logger.error("acquirer snapshot failed; the journal is still whole", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    private func snapshotDone(_ seq: Int64?) {
        snapshotting = false
        if let seq { snapshotSeq = max(snapshotSeq, seq) }
    }

    /// The resolved authorisation for `request` at the time it will be applied (no card number).
    public func resolve(_ request: AuthorizationRequest) -> AuthorizationCommand {
        state.command(for: request, now: Self.truncated(clock()))
    }

    /// Performs `operation` once it is durable; `key` is the client's idempotency key (commands only).
    public func perform(_ operation: Operation, key: String?) async -> AcquirerReply {
        await withCheckedContinuation { continuation in
            pending.append(Pending(operation: operation, key: key, continuation: continuation))
            if !draining {
                draining = true
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while !pending.isEmpty {
            let batch = pending
            pending = []
            if needsReload {
                do { try await reload() } catch {
                    logger.error("acquirer journal reload failed", metadata: ["error": "\(String(reflecting: error))"])
                    for request in batch { request.continuation.resume(returning: Self.unavailable) }
                    continue
                }
            }
            await run(batch)
            snapshotIfDue()
        }
        draining = false
    }

    private func run(_ batch: [Pending]) async {
        let keys = batch.compactMap { request -> String? in
            if case .command = request.operation { return request.key }
            return nil
        }
        let stored: [String: (command: JournalCommand, reply: AcquirerReply)]
        do { stored = try await journal.answers(for: keys) } catch {
            logger.error("acquirer journal lookup failed", metadata: ["error": "\(String(reflecting: error))"])
            for request in batch { request.continuation.resume(returning: Self.unavailable) }
            return
        }
        let micros = clock().epochMicroseconds
        let now = Date(epochMicroseconds: micros)
        var rows: [AcquirerJournal.Row] = []
        var replies: [AcquirerReply] = []
        var inBatch: [String: (fingerprint: String, reply: AcquirerReply)] = [:]
        func journalled(_ command: JournalCommand, key: String?, _ reply: AcquirerReply) {
            let text = (try? LedgerJSON.string(command)) ?? ""
            rows.append(
                .init(
                    seq: lastSeq + Int64(rows.count) + 1,
                    atMicros: micros,
                    key: key,
                    command: text,
                    status: reply.status,
                    response: String(decoding: reply.body, as: UTF8.self)
                )
            )
        }
        for request in batch {
            switch request.operation {
            case .command(let command, let psp, let items):
                if let key = request.key {
                    if let (earlier, reply) = stored[key] {
                        replies.append(earlier.fingerprint == command.fingerprint ? reply : Self.conflict(key))
                        continue
                    }
                    if let (fingerprint, reply) = inBatch[key] {
                        replies.append(fingerprint == command.fingerprint ? reply : Self.conflict(key))
                        continue
                    }
                }
                if let psp, let reference = command.authorizationReference, state.pspReference(of: reference) != psp {
                    replies.append(.refusal(AcquirerError(.unknownReference, reference: psp, "no payment \(psp) with reference \(reference)")))
                    continue
                }
                let reply = state.apply(command, items: items, now: now)
                journalled(command, key: request.key, reply)
                if let key = request.key { inBatch[key] = (command.fingerprint, reply) }
                replies.append(reply)
            case .query(let reference):
                if state.expiryDue(at: now) { journalled(.expire, key: nil, state.apply(.expire, items: [], now: now)) }
                replies.append(.answer(state.query(merchantReference: reference, now: now)))
            case .reportLines(let number, let from, let count):
                do throws(AcquirerError) {
                    replies.append(.answer(try state.reportLines(batchNumber: number, from: from, count: count)))
                } catch { replies.append(.refusal(error)) }
            case .payout(let number):
                do throws(AcquirerError) { replies.append(.answer(try state.payout(batchNumber: number))) } catch {
                    replies.append(.refusal(error))
                }
            case .disputeNotifications(let after, let limit):
                do throws(AcquirerError) {
                    replies.append(.answer(try state.disputeNotifications(after: after, limit: limit, now: now)))
                } catch { replies.append(.refusal(error)) }
            }
        }
        do {
            try await journal.append(rows)
            lastSeq += Int64(rows.count)
        } catch {
            logger.error("acquirer journal commit failed; rebuilding from the journal", metadata: ["error": "\(String(reflecting: error))"])
            needsReload = true
            for request in batch { request.continuation.resume(returning: Self.unavailable) }
            return
        }
        for (request, reply) in zip(batch, replies) { request.continuation.resume(returning: reply) }
    }

    private func reload() async throws {
        let loaded = try await Self.load(journal: journal, recorded: (seed, configuration), useSnapshots: useSnapshots, logger: logger)
        (state, lastSeq) = (loaded.state, loaded.lastSeq)
        snapshotSeq = max(snapshotSeq, loaded.snapshotSeq)
        needsReload = false
    }

    static func truncated(_ date: Date) -> Date { Date(epochMicroseconds: date.epochMicroseconds) }

    static let unavailable = AcquirerReply.refusal(AcquirerError(.unavailable, "the acquirer could not record the request; retry with the same key"))

    static func conflict(_ key: String) -> AcquirerReply {
        .refusal(AcquirerError(.duplicateReference, reference: key, "the idempotency key was used for a different request"))
    }
}

extension JournalCommand {
    /// Our authorization reference, for commands on an existing payment.
    var authorizationReference: String? {
        switch self {
        case .increment(let r): return r.authorizationReference
        case .capture(let r): return r.authorizationReference
        case .reverse(let r): return r.authorizationReference
        case .refund(let r): return r.authorizationReference
        case .authorize, .expire, .settle: return nil
        }
    }
}
