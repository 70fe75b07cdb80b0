import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

/// The transparency log under `/log/` (auditor key by default; `LEDGERD_LOG_PUBLIC=true` serves it to anyone):
///
/// - `GET /log/checkpoint` — the C2SP checkpoint of the current tree, signed (and cosigned by the witnesses
///   that answered), `text/plain; charset=utf-8`, cacheable for a second at most;
/// - `GET /log/key` — the verifier key (`<origin>+<key ID>+<base64 key>`) as text;
/// - `GET /log/tile/<L>/<N>[.p/<W>]` and `GET /log/tile/entries/<N>[.p/<W>]` — C2SP tlog-tiles hash tiles and
///   entry bundles; full ones are immutable and say so in `Cache-Control`;
/// - `GET /log/proof/inclusion?position=&size=` and `GET /log/proof/consistency?from=&to=` — proofs as JSON
///   (``InclusionProofFile``, ``ConsistencyProofFile``), what `ledgerd audit verify-proof` checks offline.
public struct TransparencyRoutes: Sendable {
    let log: TransparencyLog
    /// Served without a key (`LEDGERD_LOG_PUBLIC`): full tiles may then be kept by shared caches; behind a key they are
    /// `private` (a shared cache would otherwise keep and hand out an authenticated reply, RFC 9111 §3.5).
    let isPublic: Bool

    public init(log: TransparencyLog, isPublic: Bool = false) {
        self.log = log
        self.isPublic = isPublic
    }

    public func register<Routes: RouterMethods>(on routes: Routes) where Routes.Context == LedgerRequestContext {
        routes.get("/log/checkpoint") { _, _ -> Response in
            let note = try await log.checkpoint()
            return Self.text(note.serialized, cache: "no-cache, max-age=1")
        }
        routes.get("/log/key") { _, _ -> Response in
            guard let key = log.verifierKey else {
                throw APIError.conflict("checkpoint_key_missing", "no signing key is configured (LEDGERD_CHECKPOINT_KEY)")
            }
            return Self.text(key + "\n", cache: "no-cache")
        }
        routes.get("/log/tile/**") { request, _ -> Response in
            // Percent-decoded, so that a client that encodes the path as one segment (`0%2F000`, as OpenAPI tools do
            // for a path parameter) names the same tile; what is left must still be the tile grammar below.
            let raw = String(request.uri.path.dropFirst("/log/tile/".count))
            let path = Substring(raw.removingPercentEncoding ?? raw)
            if path.hasPrefix("entries/") {
                guard let bundle = LogTile.parseIndex(path.dropFirst("entries/".count)) else {
                    throw APIError.badRequest("invalid_tile_path", "an entry bundle is tile/entries/<N>[.p/<W>]", field: "path")
                }
                return Self.bytes(
                    try await log.entryBundle(index: bundle.index, width: bundle.width),
                    immutable: bundle.width == LogTile.fullWidth,
                    isPublic: isPublic
                )
            }
            guard let slash = path.firstIndex(of: "/"), let level = Int(path[..<slash]), (0...7).contains(level),
                String(level) == path[..<slash], let parsed = LogTile.parseIndex(path[path.index(after: slash)...])
            else {
                throw APIError.badRequest("invalid_tile_path", "a tile is tile/<L>/<N>[.p/<W>] (L from 0 to 7)", field: "path")
            }
            let tile = LogTile(level: level, index: parsed.index, width: parsed.width)
            return Self.bytes(try await log.tile(tile), immutable: tile.isFull, isPublic: isPublic)
        }
        routes.get("/log/proof/inclusion") { request, _ -> Response in
            let query = request.uri.queryParameters
            guard query["position"] != nil else { throw APIError.badRequest("missing_parameter", "position is required", field: "position") }
            let position = try AuditRoutes.integer(query["position"].map(String.init), name: "position", default: 0, range: 1...Int64.max)
            let size = try query["size"].map {
                UInt64(try AuditRoutes.integer(String($0), name: "size", default: 0, range: 1...Int64.max))
            }
            let proof = try await log.inclusionProof(position: position, size: size)
            // The checkpoint signed last goes with a proof of its size, so the file checks offline by itself.
            let note = await log.latestCheckpoint()
            let checkpoint = note.flatMap { note in (try? LogCheckpoint(text: note.text))?.size == proof.size ? note.serialized : nil }
            return try jsonResponse(
                InclusionProofFile(
                    position: proof.position,
                    treeSize: proof.size,
                    leafData: proof.leafData,
                    proof: proof.proof,
                    rootHash: proof.root,
                    checkpoint: checkpoint
                )
            )
        }
        routes.get("/log/proof/consistency") { request, _ -> Response in
            let query = request.uri.queryParameters
            for name in ["from", "to"] where query[name[...]] == nil {
                throw APIError.badRequest("missing_parameter", "\(name) is required", field: name)
            }
            let from = try AuditRoutes.integer(query["from"].map(String.init), name: "from", default: 0, range: 0...Int64.max)
            let to = try AuditRoutes.integer(query["to"].map(String.init), name: "to", default: 0, range: 0...Int64.max)
            let proof = try await log.consistencyProof(from: UInt64(from), to: UInt64(to))
            return try jsonResponse(
                ConsistencyProofFile(from: proof.from, to: proof.to, proof: proof.proof, fromRoot: proof.fromRoot, toRoot: proof.toRoot)
            )
        }
    }

    static func text(_ text: String, cache: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = cache
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func bytes(_ bytes: [UInt8], immutable: Bool, isPublic: Bool) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        // Full tiles never change; a partial one is replaced by a wider one as the log grows.
        headers[.cacheControl] = immutable ? "\(isPublic ? "public" : "private"), max-age=31536000, immutable" : "no-cache, max-age=1"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
