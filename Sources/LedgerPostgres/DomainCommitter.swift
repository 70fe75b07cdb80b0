import Foundation
import LedgerCore
import LedgerMacros

/// The one way the services write domain events: commands the writer decides inside its batch (``run(_:beforeRetry:)``),
/// and plans decided outside it (``commit(_:on:now:metadata:idempotency:alsoAppending:)``), each appended with the
/// read-model rows it implies and the states it produced remembered by the loader.
@MemberwiseInit
package struct DomainCommitter: Sendable {

    package let writer: LedgerWriter
    package let loader: AggregateLoader

    /// What an append of a plan left behind.
    package struct Committed: Sendable {
        /// The writer's answer (positions, or the replayed original result).
        package let result: AppendResult
        /// The states after the append, as the plan's events made them: what the caller answers
        /// from, so that it need not load again what it just wrote. Nil when the append was a replay
        /// of an earlier request (same idempotency key): this plan's events were not appended, so
        /// the states it implies are not the ledger's.
        package let states: AggregateStates?
    }

    /// Most decisions of one command: a command is decided again when another process moved a stream under it
    /// (or a request ahead of it in its batch did).
    package static let maximumAttempts = 20

    /// Too many decisions of one command met a moved stream (a product others keep writing from other processes).
    package struct Contended: Error, Sendable {
        package init() {}
    }

    /// Runs `command` through the writer (``LedgerWriter/decide(_:states:)``), deciding it again on a version
    /// conflict, at most ``maximumAttempts`` times (then ``Contended``); `beforeRetry` may end it first by throwing
    /// (an Apple Pay token whose marker another payment took). Refusals are `decide`'s errors, as thrown.
    package func run(_ command: LedgerCommand, beforeRetry: (@Sendable () async throws -> Void)? = nil) async throws -> CommandOutcome {
        for _ in 0..<Self.maximumAttempts {
            do {
                return try await writer.decide(command, states: loader)
            } catch let error as AppendError where error == .versionConflict {
                try await beforeRetry?()
            }
        }
        throw Contended()
    }

    /// Returns nil on a version conflict (another writer moved a stream first: decide again on fresh state).
    /// `alsoAppending`: streams outside the domain's aggregates (e.g. an Apple Pay marker) committed in the same append.
    package func commit(
        _ plan: AppendPlan,
        on states: AggregateStates,
        now: Date,
        metadata: EventMetadata,
        idempotency: IdempotencyKey? = nil,
        alsoAppending extra: [StreamAppend] = []
    ) async throws -> Committed? {
        var (request, after) = try states.appendRequest(for: plan.appends, now: now, metadata: metadata, idempotency: idempotency)
        request.streams += extra
        do {
            let result = try await writer.append(request)
            guard !result.replayed else { return Committed(result: result, states: nil) }
            loader.remember(after)
            return Committed(result: result, states: after)
        } catch let error as AppendError where error == .versionConflict {
            return nil
        }
    }
}
