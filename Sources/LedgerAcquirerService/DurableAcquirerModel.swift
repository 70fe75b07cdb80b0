import LedgerAcquirer
import LedgerCore
import LedgerPostgres
import LedgerServices
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
        /// the payment's. A settlement reads its items from the uploaded pages, a page at a time.
        case command(JournalCommand, psp: String?)
        case query(merchantReference: String)
        /// The answers to several queries, in their order (one reply: a JSON array).
        case queries(merchantReferences: [String])
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
    /// True once any finished payment is stored (acquirer 0004): only then can a name the state does not
    /// know be one to put back.
    private var finishedStored = false
    /// While the journal is replayed: told the position reached after each chunk of commands, and after each page of a
    /// settlement replayed (a night's batch is one command of minutes).
    private var replayProgress: (@Sendable (Int64) -> Void)?
    /// Closed payments (not open: captured, reversed or expired; and declined authorizations) kept in memory; past it they are stored (acquirer
    /// 0004, as versions at the journal's position) and taken out of the state, down to half of it (issue 57: a day
    /// of a million captures held 2.2 GB). The state then holds the open holds and at most this many others.
    private let residentPayments: Int

    /// Opens the journal in `client`'s database and replays it. The journal's recorded seed and
    /// configuration win over the given ones (replaying with others would give another state); a
    /// difference is logged.
    ///
    /// Boot cost is bounded by snapshots (acquirer 0002): the newest snapshot is loaded and only the
    /// journal after it replayed (`useSnapshots: false`: the whole journal, as a check). A snapshot is
    /// taken in the background once the journal has grown by `snapshotEvery` commands and by at least
    /// as many as the last snapshot covered, so replay after a start covers at most about half the
    /// journal (or `snapshotEvery` commands) while snapshots cost O(journal) in total. 0: never.
    ///
    /// `replayed` is told the journal position reached after each chunk of the replay (``replayChunk`` commands) and
    /// after each page of a settlement replayed: a replay after a long day takes minutes, and a supervisor that waits
    /// for the service tells it from a hang by that.
    public static func open(
        client: DatabaseClient,
        seed: UInt64,
        configuration: AcquirerModelConfiguration,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        snapshotEvery: Int64 = 100_000,
        useSnapshots: Bool = true,
        residentPayments: Int = DurableAcquirerModel.defaultResidentPayments,
        replayed: @escaping @Sendable (Int64) -> Void = { _ in }
    ) async throws -> DurableAcquirerModel {
        let journal = AcquirerJournal(client: client, logger: logger)
        let recorded = try await journal.model(seed: seed, configuration: configuration)
        // What is read from here on is durable (acquirer 0005): no row a failover could still take back is replayed.
        try await journal.barrier()
        if recorded.seed != seed || recorded.configuration != configuration {
            logger.warning("the acquirer journal was started with another seed or configuration; using the journal's")
        }
        let (state, snapshotSeq) = try await Self.load(journal: journal, recorded: recorded, useSnapshots: useSnapshots)
        let model = DurableAcquirerModel(
            state: state,
            lastSeq: snapshotSeq,
            snapshotSeq: snapshotSeq,
            snapshotEvery: snapshotEvery,
            useSnapshots: useSnapshots,
            residentPayments: max(2, residentPayments),
            journal: journal,
            clock: clock,
            logger: logger,
            recorded: recorded
        )
        try await model.replayJournal(finishedStored: try await journal.hasFinishedPayments(), replayed: replayed)
        return model
    }

    /// The state the newest snapshot gives (or the initial one), with its journal position.
    private static func load(
        journal: AcquirerJournal,
        recorded: (seed: UInt64, configuration: AcquirerModelConfiguration),
        useSnapshots: Bool
    ) async throws -> (state: AcquirerModelState, snapshotSeq: Int64) {
        if useSnapshots, let snapshot = try await journal.latestSnapshot() {
            return (snapshot.state, snapshot.seq)
        }
        return (AcquirerModelState(seed: recorded.seed, configuration: recorded.configuration), 0)
    }

    /// Commands read per replay query.
    static let replayChunk = 10_000

    /// The default of `residentPayments`: closed payments kept in memory (a few hundred bytes to 2 KB each).
    public static let defaultResidentPayments = 20_000

    /// Closed payments stored and taken out per transaction, and at most per batch of requests served (the requests
    /// queued meanwhile wait for it: a short pause often rather than a long one now and then).
    static let evictionChunk = 1_000

    /// Applies the journal after `lastSeq` to the state, in order, at the recorded times; a settlement
    /// page by page as it was applied live (its report lines are stored already, unless the journal
    /// predates acquirer 0003).
    private func replayJournal(finishedStored: Bool, replayed: @escaping @Sendable (Int64) -> Void = { _ in }) async throws {
        self.finishedStored = finishedStored
        replayProgress = replayed
        defer { replayProgress = nil }
        let from = lastSeq
        while true {
            let commands = try await journal.commands(after: lastSeq, limit: Self.replayChunk)
            var restoredUpTo = 0
            for (index, (seq, at, command)) in commands.enumerated() {
                guard seq == lastSeq + 1 else { throw JournalError("acquirer.journal has a gap before \(seq)") }
                if index >= restoredUpTo {
                    // The payments the commands up to the next settlement name, as they were before this one.
                    restoredUpTo = commands[index...].firstIndex { $0.command.isSettlement }.map { $0 + 1 } ?? commands.count
                    try await restoreNamed(commands[index..<restoredUpTo].map { $0.command.named }, before: seq, on: nil)
                }
                if case .settle(let header, let pages) = command {
                    _ = try await settle(header, pages: pages, now: at, seq: seq, storingOn: nil)
                } else {
                    _ = state.apply(command, now: at)
                }
                lastSeq = seq
                // Only where no payment put back for a later command is waiting for it.
                if index + 1 >= restoredUpTo { try await storeClosedPayments(atMost: .max) }
            }
            if commands.count < Self.replayChunk { break }
            replayed(lastSeq)
        }
        logger.info("acquirer journal replayed", metadata: ["snapshot": "\(from)", "commands": "\(lastSeq - from)", "last": "\(lastSeq)"])
    }

    /// Puts back the finished payments `names` name that the state does not hold: their newest versions
    /// before journal row `seq` (on `connection` inside a transaction, which sees its own rows).
    /// Returns the references put back.
    @discardableResult
    private func restoreNamed(
        _ names: [(payments: [String], modifications: [String])],
        before seq: Int64,
        on connection: PostgresConnection?
    ) async throws -> [String] {
        guard finishedStored else { return [] }
        let payments = names.flatMap(\.payments).filter { !state.knows(payment: $0) }
        let modifications = names.flatMap(\.modifications).filter { !state.knows(modification: $0) }
        guard !payments.isEmpty || !modifications.isEmpty else { return [] }
        var restored: [String] = []
        for payment in try await journal.finishedPayments(references: payments, modifications: modifications, before: seq, on: connection)
        where !state.knows(payment: payment.reference) {
            state.restore(payment)
            restored.append(payment.reference)
        }
        return restored
    }

    /// Stores the closed payments past `residentPayments` (acquirer 0004, as versions at `lastSeq`: the state after
    /// that journal row, which is committed) and only then takes them out of the state, down to half the bound, at
    /// most `atMost` of them, in chunks of one transaction each. A version is the payment as it is after that row
    /// whichever run stores it (the live model or a replay), so a later command that names the payment puts back
    /// exactly what it was. A failed store leaves the payments in memory (logged; tried again after the next batch).
    private func storeClosedPayments(atMost: Int) async throws {
        guard lastSeq > 0, state.closedResidentCount > residentPayments else { return }
        let references = state.closedPaymentReferences(limit: min(atMost, state.closedResidentCount - residentPayments / 2))
        let seq = lastSeq
        for start in stride(from: 0, to: references.count, by: Self.evictionChunk) {
            let chunk = references[start..<min(references.count, start + Self.evictionChunk)]
            let payments = state.payments(chunk)
            try await journal.client.withTransaction(logger: logger) { connection in
                try await self.journal.insertFinished(payments, seq: seq, on: connection)
            }
            _ = state.takeFinishedPayments(chunk)
            finishedStored = true
        }
        // A chunk's freed records are reused by the next payments; many at once (a replay) are handed back.
        if references.count > Self.evictionChunk {
            state.compactStorage()
            Self.returnFreedMemory()
        }
    }

    /// Settles the batch `header` names from its uploaded pages `0 ..< pages`: live on `connection` (the transaction
    /// that journals the settlement), or replaying (nil) in a transaction of its own. A thrown error leaves the state
    /// part-way (the caller reloads).
    ///
    /// A batch settled before under its reference: its pages are compared with that batch's (nothing looked up) and it is
    /// answered or refused as then. A new batch is settled in **one pass** (issue 57: checking every page first read
    /// each page twice and put every payment out of memory back twice, and that was most of a night's settlement): a
    /// page at a time, its payments put back, checked and settled (``AcquirerModelState/checkAndSettlePage(_:in:)``),
    /// its report lines and the payments it finished stored and taken out. A refusal on a later page is undone whole:
    /// the state goes back to what it was when the settlement began and the rows to a savepoint taken then, so a
    /// refused batch changes nothing but the expiries due, as when every page was checked first; replay takes the same
    /// path, so it ends in the same state.
    private func settle(
        _ header: SettlementBatchHeader,
        pages: Int,
        now: Date,
        seq: Int64,
        storingOn connection: PostgresConnection?
    ) async throws -> AcquirerReply {
        var settlement: BatchSettlement
        do throws(AcquirerError) { settlement = try state.beginSettlement(header, now: now) } catch { return .refusal(error) }
        if settlement.repeatsABatch {
            for index in 0..<pages {
                let items = try await journal.page(index, of: header.batchReference)
                do throws(AcquirerError) { try state.check(items, in: &settlement) } catch { return .refusal(error) }
            }
            do throws(AcquirerError) {
                guard case .settledBefore(let receipt) = try state.startSettling(&settlement) else {
                    return .refusal(AcquirerError(.invalidRequest, reference: header.batchReference, "a repeated batch did not settle as before"))
                }
                return .answer(receipt)
            } catch { return .refusal(error) }
        }
        if let connection { return try await settleNew(settlement, pages: pages, seq: seq, on: connection, replaying: false) }
        return try await journal.client.withTransaction(logger: logger) { [settlement] connection in
            try await self.settleNew(settlement, pages: pages, seq: seq, on: connection, replaying: true)
        }
    }

    /// ``settle(_:pages:now:seq:storingOn:)`` of a new batch, in one pass on `connection` (inside a transaction), between
    /// a savepoint and its release, or back to it on a refusal. Replaying, what the live settlement stored is inserted
    /// only where absent: report lines when the batch has none stored (a journal written before acquirer 0003), finished
    /// payments when none was stored at `seq` (before acquirer 0004).
    private func settleNew(
        _ settlement: BatchSettlement,
        pages: Int,
        seq: Int64,
        on connection: PostgresConnection,
        replaying: Bool
    ) async throws -> AcquirerReply {
        try await connection.query("SAVEPOINT acquirer_settlement", logger: logger)
        let before = (state: state, finishedStored: finishedStored)
        var settlement = settlement
        var carried: [SettlementReportLine] = []
        var refusal: AcquirerError?
        do throws(AcquirerError) {
            // A new batch is never settled before: startSettling answers with its carried-over lines.
            if case .settling(let lines) = try state.startSettling(&settlement) { carried = lines }
        } catch { refusal = error }
        if let refusal { return try await undo(to: before, refusal, on: connection) }
        let number = settlement.batchNumber
        var storeLines = !replaying
        if !storeLines { storeLines = try await journal.reportLineCount(batchNumber: number) == 0 }
        var storeFinished = !replaying
        if !storeFinished { storeFinished = try await !journal.hasFinishedPayments(at: seq) }
        var stored = try await keep(carried, batchNumber: number, first: 0, storing: storeLines, replaying: replaying, on: connection)
        for index in 0..<pages {
            let items = try await journal.page(index, of: settlement.header.batchReference)
            try await restoreNamed([(items.map(\.authorizationReference), items.map(\.modificationReference))], before: seq, on: connection)
            var lines: [SettlementReportLine] = []
            do throws(AcquirerError) { lines = try state.checkAndSettlePage(items, in: &settlement) } catch { refusal = error }
            if let refusal { return try await undo(to: before, refusal, on: connection) }
            stored = try await keep(lines, batchNumber: number, first: stored, storing: storeLines, replaying: replaying, on: connection)
            // A payment this page finished cannot change again in this batch (each item is listed once): stored and
            // taken out now, as at the end, so that the batch's payments are never all in memory.
            var seen = Set<String>()
            let finished = items.map(\.authorizationReference).filter { seen.insert($0).inserted && state.isFinished($0) }
            try await takeFinishedPayments(finished.sorted(), seq: seq, storing: storeFinished, on: connection)
            if replaying { replayProgress?(lastSeq) }
        }
        let (receipt, payoutLine) = state.finishSettling(settlement, keeping: nil)
        _ = try await keep([payoutLine], batchNumber: number, first: stored, storing: storeLines, replaying: replaying, on: connection)
        try await takeFinishedPayments(state.finishedPaymentReferences(), seq: seq, storing: storeFinished, on: connection)
        try await connection.query("RELEASE SAVEPOINT acquirer_settlement", logger: logger)
        state.compactStorage()
        Self.returnFreedMemory()
        return .answer(receipt)
    }

    /// A refused settlement undone: its rows back to the savepoint taken when it began, the state back to `before`.
    private func undo(
        to before: (state: AcquirerModelState, finishedStored: Bool),
        _ refusal: AcquirerError,
        on connection: PostgresConnection
    ) async throws -> AcquirerReply {
        try await connection.query("ROLLBACK TO SAVEPOINT acquirer_settlement", logger: logger)
        (state, finishedStored) = before
        return .refusal(refusal)
    }

    /// Inserts `lines` as report lines `first ...` of batch `batchNumber` on `connection` when `storing` (replaying: where
    /// absent); returns the number of the line after them.
    private func keep(
        _ lines: [SettlementReportLine],
        batchNumber: Int,
        first: Int,
        storing: Bool,
        replaying: Bool,
        on connection: PostgresConnection
    ) async throws -> Int {
        guard storing, !lines.isEmpty else { return first + lines.count }
        if replaying {
            try await journal.insertReportLinesIfAbsent(lines, batchNumber: batchNumber, first: first, on: connection)
        } else {
            try await journal.insertReportLines(lines, batchNumber: batchNumber, first: first, on: connection)
        }
        return first + lines.count
    }

    /// Takes these finished payments out of the state during the settlement journalled at `seq` and, when
    /// `storing`, stores them (acquirer 0004) on `connection` (its transaction), or, replaying (nil), on their own.
    private func takeFinishedPayments(_ references: [String], seq: Int64, storing: Bool, on connection: PostgresConnection?) async throws {
        guard !references.isEmpty else { return }
        for start in stride(from: 0, to: references.count, by: 10_000) {
            let taken = state.takeFinishedPayments(references[start..<min(references.count, start + 10_000)])
            if storing { try await journal.insertFinished(taken, seq: seq, on: connection) }
        }
        finishedStored = true
    }

    private init(
        state: AcquirerModelState,
        lastSeq: Int64,
        snapshotSeq: Int64,
        snapshotEvery: Int64,
        useSnapshots: Bool,
        residentPayments: Int,
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
        self.residentPayments = residentPayments
        self.journal = journal
        self.clock = clock
        self.logger = logger
        self.seed = recorded.seed
        self.configuration = recorded.configuration
    }

    /// The model's configuration (the journal's).
    public var modelConfiguration: AcquirerModelConfiguration { configuration }

    /// The whole state as canonical JSON (tests: same seed and requests → same bytes), the finished
    /// payments and the report lines read back from their tables into it: what the in-process model,
    /// which keeps them, would give.
    public func snapshot() async throws -> Data {
        var whole = state
        for payment in try await journal.allFinishedPayments() { whole.restore(payment) }
        for number in whole.batchesWithReleasedLines {
            whole.restoreReportLines(batchNumber: number, try await journal.reportLines(batchNumber: number, from: 0, count: Int(Int32.max)))
        }
        return try whole.snapshot()
    }

    /// How many payments (placed holds), modifications and declined authorizations the state holds in memory, and
    /// report lines.
    public var resident: (holds: Int, modifications: Int, reportLines: Int, declined: Int) {
        let counts = state.residentCounts
        return (counts.holds, counts.modifications, state.reportLinesHeld, counts.declined)
    }

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

    /// Encodes and stores `state` off the actor (the state is a value: the copy does not move), a part
    /// at a time.
    private static func write(_ state: AcquirerModelState, seq: Int64, journal: AcquirerJournal) async throws {
        try await Task.detached { try await journal.storeSnapshot(of: state, seq: seq) }.value
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
            if !needsReload {
                do { try await storeClosedPayments(atMost: Self.evictionChunk) } catch {
                    logger.error(
                        "closed acquirer payments could not be stored; they stay in memory",
                        metadata: ["error": "\(String(reflecting: error))"]
                    )
                }
            }
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
        do {
            stored = try await journal.answers(for: keys)
            // A retry answered from a stored row is answered only once that row is durable (acquirer 0005): the first
            // attempt's INSERT may have failed after committing on the primary alone.
            if !stored.isEmpty { try await journal.barrier() }
        } catch {
            logger.error("acquirer journal lookup failed", metadata: ["error": "\(String(reflecting: error))"])
            for request in batch { request.continuation.resume(returning: Self.unavailable) }
            return
        }
        let settles = batch.contains { request in
            if case .command(.settle, _) = request.operation { return true }
            return false
        }
        let replies: [AcquirerReply]
        do {
            if settles {
                // A settlement's report lines are inserted in the transaction that journals it.
                replies = try await journal.client.withTransaction(logger: logger) { connection in
                    let (rows, replies) = try await self.apply(batch, stored: stored, connection: connection)
                    try await self.journal.append(rows, on: connection)
                    self.lastSeq += Int64(rows.count)
                    return replies
                }
            } else {
                let (rows, answers) = try await apply(batch, stored: stored, connection: nil)
                try await journal.append(rows)
                lastSeq += Int64(rows.count)
                replies = answers
            }
        } catch {
            logger.error("acquirer journal commit failed; rebuilding from the journal", metadata: ["error": "\(String(reflecting: error))"])
            needsReload = true
            for request in batch { request.continuation.resume(returning: Self.unavailable) }
            return
        }
        for (request, reply) in zip(batch, replies) { request.continuation.resume(returning: reply) }
    }

    /// Applies `batch` to the state in order: its journal rows and its replies. `connection`: the
    /// transaction a settlement's report lines go into (nil when the batch has none).
    private func apply(
        _ batch: [Pending],
        stored: [String: (command: JournalCommand, reply: AcquirerReply)],
        connection: PostgresConnection?
    ) async throws -> (rows: [AcquirerJournal.Row], replies: [AcquirerReply]) {
        let micros = clock().epochMicroseconds
        let now = Date(epochMicroseconds: micros)
        var rows: [AcquirerJournal.Row] = []
        var replies: [AcquirerReply] = []
        var inBatch: [String: (fingerprint: String, reply: AcquirerReply)] = [:]
        let first = lastSeq
        let operations = batch.map(\.operation)
        /// Puts back what the operations from `index` up to the next settlement name.
        func restore(from index: Int, before seq: Int64) async throws {
            guard index < operations.count else { return }
            let end = operations[index...].firstIndex { $0.isSettlement }.map { $0 + 1 } ?? operations.count
            try await restoreNamed(operations[index..<end].map(\.named), before: seq, on: connection)
        }
        try await restore(from: 0, before: first + 1)
        func journalled(_ command: JournalCommand, key: String?, _ reply: AcquirerReply) {
            let text = (try? LedgerJSON.string(command)) ?? ""
            rows.append(
                .init(
                    seq: first + Int64(rows.count) + 1,
                    atMicros: micros,
                    key: key,
                    command: text,
                    status: reply.status,
                    response: String(decoding: reply.body, as: UTF8.self)
                )
            )
        }
        for (index, request) in batch.enumerated() {
            switch request.operation {
            case .command(let command, let psp):
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
                let reply: AcquirerReply
                if case .settle(let header, let pages) = command, let connection {
                    let seq = first + Int64(rows.count) + 1
                    reply = try await settle(header, pages: pages, now: now, seq: seq, storingOn: connection)
                    try await restore(from: index + 1, before: seq + 1)
                } else {
                    reply = state.apply(command, now: now)
                }
                journalled(command, key: request.key, reply)
                if let key = request.key { inBatch[key] = (command.fingerprint, reply) }
                replies.append(reply)
            case .query(let reference):
                if state.expiryDue(at: now) { journalled(.expire, key: nil, state.apply(.expire, now: now)) }
                replies.append(.answer(state.query(merchantReference: reference, now: now)))
            case .queries(let references):
                if state.expiryDue(at: now) { journalled(.expire, key: nil, state.apply(.expire, now: now)) }
                replies.append(.answer(references.map { state.query(merchantReference: $0, now: now) }))
            case .reportLines(let number, let from, let count):
                replies.append(await reportLines(batchNumber: number, from: from, count: count))
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
        return (rows, replies)
    }

    /// Report lines of a settled batch: from the state, or from acquirer.report_lines when the state
    /// keeps only their count (every batch the service settled since acquirer 0003).
    private func reportLines(batchNumber: Int, from: Int, count: Int) async -> AcquirerReply {
        do throws(AcquirerError) {
            guard state.reportLinesReleased(batchNumber: batchNumber) == true, from >= 0, count >= 0 else {
                return .answer(try state.reportLines(batchNumber: batchNumber, from: from, count: count))
            }
        } catch { return .refusal(error) }
        // The stored bodies are each line's canonical JSON, and the canonical JSON of the page is them in an array: sent
        // as stored, not decoded and encoded again (issue 57: a million lines twice over per settlement).
        do { return AcquirerReply(status: 200, body: try await journal.reportLinesJSON(batchNumber: batchNumber, from: from, count: count)) } catch {
            logger.error("acquirer report lines unreadable", metadata: ["error": "\(String(reflecting: error))"])
            return Self.unavailable
        }
    }

    /// Rebuilds the model from the journal after a failed append. The barrier first (acquirer 0005): the failed INSERT
    /// may have committed on the primary alone, visible here though no standby has it, and a failover would lose it;
    /// replaying it would put into the model a command the journal may later not hold, and the next row would leave a gap.
    private func reload() async throws {
        try await journal.barrier()
        let loaded = try await Self.load(journal: journal, recorded: (seed, configuration), useSnapshots: useSnapshots)
        (state, lastSeq) = (loaded.state, loaded.snapshotSeq)
        try await replayJournal(finishedStored: finishedStored)
        snapshotSeq = max(snapshotSeq, loaded.snapshotSeq)
        needsReload = false
    }

    /// Hands the allocator's free pages back to the system (glibc keeps freed small blocks — a million
    /// finished payments' records — in its arenas otherwise, and the resident set would not shrink).
    static func returnFreedMemory() { MemoryReturn.trimNow() }

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

extension DurableAcquirerModel.Operation {
    var isSettlement: Bool {
        if case .command(let command, _) = self { return command.isSettlement }
        return false
    }

    /// The payments and modifications the operation names (to be in the state before it is applied).
    var named: (payments: [String], modifications: [String]) {
        switch self {
        case .command(let command, _): return command.named
        case .query(let reference): return ([reference], [])
        case .queries(let references): return (references, [])
        case .reportLines, .payout, .disputeNotifications: return ([], [])
        }
    }
}

extension JournalCommand {
    var isSettlement: Bool {
        if case .settle = self { return true }
        return false
    }

    /// The payments and modifications the command names; a settlement's items are read with its pages.
    var named: (payments: [String], modifications: [String]) {
        switch self {
        // A sale captures under the payment's reference.
        case .authorize(let c): return ([c.merchantReference], [c.merchantReference])
        case .increment(let r): return ([r.authorizationReference], [r.modificationReference])
        case .capture(let r): return ([r.authorizationReference], [r.modificationReference])
        case .reverse(let r): return ([r.authorizationReference], [r.modificationReference])
        case .refund(let r): return ([r.authorizationReference], [r.modificationReference])
        case .expire, .settle: return ([], [])
        }
    }
}
