import Foundation
import LedgerCore

/// Commits decided plans: the append request with the read-model rows the plan implies, and the
/// states it produced remembered by the loader. The one way the services write domain events.
package struct DomainCommitter: Sendable {
    package init(writer: LedgerWriter, loader: AggregateLoader) {
        self.writer = writer
        self.loader = loader
    }

    let writer: LedgerWriter
    let loader: AggregateLoader

    /// Returns nil on a version conflict (another writer moved a stream first: decide again on fresh state).
    /// `alsoAppending`: streams outside the domain's aggregates (e.g. an Apple Pay marker) committed in the same append.
    package func commit(_ plan: AppendPlan, on states: AggregateStates, now: Date, metadata: EventMetadata,
                idempotency: IdempotencyKey? = nil, alsoAppending extra: [StreamAppend] = []) async throws -> AppendResult? {
        var (request, after) = try states.appendRequest(for: plan.appends, now: now, metadata: metadata, idempotency: idempotency)
        request.streams += extra
        do {
            let result = try await writer.append(request)
            if !result.replayed { loader.remember(after) }
            return result
        } catch let error as AppendError where error == .versionConflict {
            return nil
        }
    }
}
