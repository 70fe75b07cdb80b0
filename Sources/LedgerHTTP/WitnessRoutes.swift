import Hummingbird
import LedgerCore
import LedgerServices

/// The witness's HTTP interface (c2sp.org/tlog-witness): `POST /add-checkpoint` — 200 with the cosignature line;
/// 409 `text/x.tlog.size` with the size it last cosigned when the old size is stale; 409, 422, 403, 404 or 400
/// with the reason as text otherwise. The refusal is logged and counted by ``WitnessService``.
public struct WitnessRoutes<Context: RequestContext>: Sendable {
    let witness: WitnessService
    let metricsText: @Sendable () -> String

    public init(witness: WitnessService, metricsText: @escaping @Sendable () -> String) {
        self.witness = witness
        self.metricsText = metricsText
    }

    /// The largest body accepted: 63 proof lines and a checkpoint with its signatures fit many times over.
    static var maximumBody: Int { 64 * 1_024 }

    public func register(on router: Router<Context>) {
        router.post("/add-checkpoint") { request, _ -> Response in
            let body = try await request.body.collect(upTo: Self.maximumBody)
            switch await witness.addCheckpoint(body: String(buffer: body)) {
            case .success(let lines):
                return Self.text(lines, status: .ok)
            case .failure(let refusal):
                if let size = refusal.latestSize, refusal.code == .staleOldSize {
                    return Self.text("\(size)\n", status: .conflict, contentType: "text/x.tlog.size")
                }
                return Self.text(refusal.reason + "\n", status: HTTPResponse.Status(code: refusal.status))
            }
        }
        router.get("/key") { _, _ -> Response in Self.text(witness.verifierKey + "\n", status: .ok) }
        router.get("/metrics") { _, _ -> Response in
            Self.text(metricsText(), status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    static func text(_ text: String, status: HTTPResponse.Status, contentType: String = "text/plain; charset=utf-8") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
