import Foundation
import LedgerCore
import LedgerMacros

/// What a ``StreamCommand`` decided, as a value its caller switches on (issue 56: decisions are values, never thrown).
package enum StreamDecision<Signal: Sendable>: Sendable {
    /// Append `events` to the stream (none: nothing to append), expecting the version decided on; tell the caller `signal`.
    case append([any LedgerEventPayload], Signal)
    /// Append nothing: the decision is final.
    case nothing(Signal)
}

/// A command on one stream outside the domain's four aggregates — a settlement batch, a reconciliation record, an
/// erasure, the checkpoints, an Apple Pay token's refusal — run by the one runner (``AggregateStore``'s `run`):
/// the runner reads the stream, `decide` decides on its events, and what it decided is appended expecting the version
/// it was decided on. When another writer moved the stream first, the runner reads it again and decides again, so the
/// callers hold no load → decide → append → retry loop of their own. `decide` throws to reject the request itself (the
/// error reaches the caller as it is; nothing is appended).
@MemberwiseInit
package struct StreamCommand<Signal: Sendable>: Sendable {
    package var stream: StreamID
    /// The events' effective time (the caller's injected clock).
    package var now: Date
    package var metadata: EventMetadata
    /// False for a stream that only grows and whose decision needs none of its events (the checkpoints): `decide` gets
    /// none, and the append expects any version, so that two such commands never conflict.
    package var readsStream: Bool = true
    package var decide: @Sendable ([RecordedEvent]) throws -> StreamDecision<Signal>
}

/// A ``StreamCommand``'s answer: what it decided to tell, and the append (nil when it appended nothing).
package struct StreamOutcome<Signal: Sendable>: Sendable {
    package var signal: Signal
    package var result: AppendResult?
}

extension AggregateStore {
    /// Runs `command`: reads its stream, decides, appends what it decided expecting the version read; on a version
    /// conflict reads and decides again, at most ``maximumAttempts`` times (then ``Contended``). What `decide` threw,
    /// and any other ``AppendError`` (`.settlementItemsMismatch`: the database's membership rule refused a close), is
    /// thrown as it is.
    package func run<Signal: Sendable>(_ command: StreamCommand<Signal>) async throws -> StreamOutcome<Signal> {
        for _ in 0..<Self.maximumAttempts {
            let recorded = command.readsStream ? try await store.readStream(command.stream) : []
            switch try command.decide(recorded) {
            case .nothing(let signal):
                return StreamOutcome(signal: signal, result: nil)
            case .append(let payloads, let signal):
                guard !payloads.isEmpty else { return StreamOutcome(signal: signal, result: nil) }
                let events = try payloads.map { try NewEvent(eventID: writer.ids.next(), payload: $0, effectiveAt: command.now) }
                let expected = command.readsStream ? PlannedAppend.expectation(forVersion: recorded.last?.streamVersion ?? 0) : .any
                let request = AppendRequest(stream: command.stream, expectedVersion: expected, events: events, metadata: command.metadata)
                do {
                    return StreamOutcome(signal: signal, result: try await writer.append(request))
                } catch let error as AppendError where error == .versionConflict {
                    continue
                }
            }
        }
        throw Contended()
    }
}
