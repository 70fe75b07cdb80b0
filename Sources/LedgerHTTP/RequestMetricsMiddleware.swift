import Hummingbird
import LedgerCore
import LedgerMacros
import LedgerServices
import Metrics

/// Counts HTTP requests by route (the matched route pattern, not the raw path, so ids do not
/// explode the label set), method and status, and times them. Metrics go to an injected
/// factory so each application (and each test) has its own registry.
@MemberwiseInit
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let factory: any MetricsFactory

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let status: HTTPResponse.Status
        do {
            let response = try await next(request, context)
            status = response.status
            record(request: request, context: context, status: status, started: started)
            return response
        } catch let error as any HTTPResponseError {
            record(request: request, context: context, status: error.status, started: started)
            throw error
        } catch {
            record(request: request, context: context, status: .internalServerError, started: started)
            throw error
        }
    }

    private func record(request: Request, context: Context, status: HTTPResponse.Status, started: ContinuousClock.Instant) {
        let route = context.endpointPath ?? "unmatched"
        let dimensions = [("route", route), ("method", request.method.rawValue), ("status", String(status.code))]
        Counter(label: "http_requests_total", dimensions: dimensions, factory: factory).increment()
        let elapsed = ContinuousClock.now - started
        let (seconds, attoseconds) = elapsed.components
        Metrics.Timer(label: "http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
