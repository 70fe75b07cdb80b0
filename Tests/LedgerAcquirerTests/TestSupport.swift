import Foundation
import LedgerAcquirer
import LedgerCore

/// US dollars from minor units (test literals).
func usd(_ minorUnits: Int64) -> Money { Money(minorUnits: minorUnits, currency: .usd) }

/// An instant given as a UTC calendar day and time of day.
func at(_ day: String, _ hour: Int64 = 0, _ minute: Int64 = 0, _ second: Int64 = 0) -> Date {
    let days = BusinessDate(day)?.daysSinceEpoch ?? 0
    return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
}

func date(_ text: String) -> BusinessDate {
    guard let date = BusinessDate(text) else { fatalError("bad test date \(text)") }
    return date
}

/// Monday 2025-01-06 10:00 UTC: the tests' usual start.
let monday = at("2025-01-06", 10)
let hour: Int64 = 3600
let day: Int64 = 86_400

func authorization(
    _ reference: String,
    _ amount: Money,
    token: String = "tok_visa",
    intent: CaptureIntent = .manual,
    initiator: TransactionInitiator = .customer,
    type: AuthorizationType = .final
) -> AuthorizationRequest {
    AuthorizationRequest(
        merchantReference: reference,
        amount: amount,
        paymentMethod: .token(token),
        captureIntent: intent,
        initiator: initiator,
        authorizationType: type
    )
}

/// The error code an operation throws, or nil when it succeeds.
func errorCode<T>(_ body: () throws -> T) -> AcquirerError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as AcquirerError {
        return error.code
    } catch {
        return nil
    }
}

extension AcquirerModelState {
    /// Authorizes and expects an approval, returning the response.
    mutating func approve(
        _ reference: String,
        _ amount: Money,
        token: String = "tok_visa",
        now: Date = monday,
        type: AuthorizationType = .final
    ) throws -> AuthorizationResponse {
        let response = try authorize(authorization(reference, amount, token: token, type: type), now: now)
        guard response.responseCode.isApproved else { throw TestFailure("expected approval, got \(response.responseCode)") }
        return response
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reads a UInt64 / Int from the environment (for property-test overrides).
func environmentInteger<T: FixedWidthInteger>(_ name: String) -> T? {
    ProcessInfo.processInfo.environment[name].flatMap { T($0) }
}
