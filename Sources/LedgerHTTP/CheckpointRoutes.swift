import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerMacros
import LedgerServices

/// Signed checkpoints:
/// - `POST /audit/checkpoints` (operator key) — sign the head now: 201 with the checkpoint file's
///   JSON (what `ledgerd audit verify --checkpoint FILE --public-key KEY` checks);
/// - `GET /audit/checkpoints?after=&limit=` (operator or auditor key) — the checkpoints recorded in
///   the log (`CheckpointSigned` events), oldest first, cursor-paged like the feed.
@MemberwiseInit
public struct CheckpointRoutes: Sendable {
    let signer: (CheckpointService)?
    let reader: any LedgerReader

    public func registerReads(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/audit/checkpoints") { request, _ -> Response in
            let query = request.uri.queryParameters
            let after = try AuditRoutes.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
            let limit = try AuditRoutes.integer(
                query["limit"].map(String.init),
                name: "limit",
                default: 100,
                range: 1...Int64(AuditRoutes.maximumPageSize)
            )
            let events = try await reader.events(
                after: after,
                matching: EventFilter(types: [CheckpointSigned.eventType]),
                limit: Int(limit)
            )
            return jsonResponse(AuditRoutes.page("checkpoints", events, limit: limit))
        }
    }

    public func registerChanges(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/audit/checkpoints") { _, context -> Response in
            guard let signer else {
                throw APIError.conflict("checkpoint_key_missing", "no signing key is configured (LEDGERD_CHECKPOINT_KEY)")
            }
            let checkpoint = try await signer.signCheckpoint(actor: context.actor)
            // The reply is the checkpoint file itself (``CheckpointFile``, pretty-printed as on disk).
            return jsonResponse(RawJSON(stored: try CheckpointService.fileJSON(checkpoint)), status: .created)
        }
    }
}
