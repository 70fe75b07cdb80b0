import Foundation
import LedgerCore
import LedgerMacros

/// Commits decided plans: the append request with the read-model rows the plan implies, and the
/// states it produced remembered by the loader. The one way the services write domain events.
@MemberwiseInit
package struct DomainCommitter: Sendable {

    let writer: LedgerWriter
    let loader: AggregateLoader

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
