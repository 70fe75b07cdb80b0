import Hummingbird
import LedgerCore
import LedgerServices

/// The one place where the services' errors become HTTP answers: the kind picks the status, the code,
/// message and field pass through unchanged (`{"error": {"code", "message", "field"?}}`) — except for our
/// own failures, whose detail goes to the log only: the caller gets the opaque ``internalFailure``.
extension APIError {
    public init(_ error: ServiceError) {
        if error.kind == .internalFailure {
            self = .internalFailure
            return
        }
        self.init(status: Self.status(of: error.kind), code: error.code, message: error.message, field: error.field)
    }

    static func status(of kind: ServiceError.Kind) -> HTTPResponse.Status {
        switch kind {
        case .malformedRequest: .badRequest
        case .invalidInput: .unprocessableContent
        case .notFound: .notFound
        case .conflict: .conflict
        case .gone: .gone
        case .dependencyFailed: .badGateway
        case .unavailable: .serviceUnavailable
        default: .internalServerError
        }
    }
}

extension PaymentAnswer.Result {
    /// 200 approved; 402 declined (an answer, not an error); 502 the issuer could not be reached.
    var status: HTTPResponse.Status {
        switch self {
        case .succeeded: .ok
        case .declined: HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required")
        case .acquirerUnreachable: .badGateway
        }
    }
}

extension HoldOperationOutcome.Result {
    /// 200 applied or replayed; 402 for an increment the issuer declined.
    var status: HTTPResponse.Status {
        self == .declined ? HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required") : .ok
    }
}
