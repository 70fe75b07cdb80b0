import Foundation
import LedgerAcquirer
import LedgerCore
import Testing

struct HoldLifecycleTests {
    func capture(_ amount: Int64, _ ref: String, final: Bool = false, of hold: String = "h") -> CaptureRequest {
        CaptureRequest(authorizationReference: hold, modificationReference: ref, amount: usd(amount), isFinal: final)
    }

    @Test("several partial captures, then a final one releasing the rest")
    func partialMultipleFinalCaptures() throws {
        var state = AcquirerModelState(seed: 11)
        _ = try state.approve("h", usd(10_000))
        let first = try state.capture(capture(3000, "c1"), now: monday)
        #expect(first.responseCode == .approved && first.balance.open == usd(7000) && first.balance.captured == usd(3000))
        let second = try state.capture(capture(2000, "c2"), now: monday + 60)
        #expect(second.balance.open == usd(5000) && second.balance.captured == usd(5000))
        #expect(first.modificationPSPReference != second.modificationPSPReference)
        let last = try state.capture(capture(1000, "c3", final: true), now: monday + 120)
        #expect(last.balance.captured == usd(6000) && last.balance.reversed == usd(4000) && last.balance.open == usd(0))
        #expect(last.balance.satisfiesIdentity)
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000 - 6000))
        #expect(errorCode { try state.capture(capture(1, "c4"), now: monday) } == .holdClosed)
        #expect(state.invariantViolations().isEmpty)
    }

    @Test("capturing exactly the open amount closes the hold; above it is refused")
    func captureBounds() throws {
        var state = AcquirerModelState(seed: 11)
        _ = try state.approve("h", usd(10_000))
        let before = state
        #expect(errorCode { try state.capture(capture(10_001, "c1"), now: monday) } == .amountExceedsOpen)
        #expect(state == before)
        #expect(errorCode { try state.capture(capture(0, "c1"), now: monday) } == .invalidAmount)
        #expect(
            errorCode {
                try state.capture(
                    CaptureRequest(
                        authorizationReference: "h",
                        modificationReference: "c1",
                        amount: Money(minorUnits: 100, currency: .eur),
                        isFinal: false
                    ),
                    now: monday
                )
            } == .currencyMismatch
        )
        #expect(errorCode { try state.capture(capture(100, "c1", of: "nope"), now: monday) } == .unknownReference)
        #expect(state == before)
        let all = try state.capture(capture(10_000, "c1"), now: monday)
        #expect(all.balance.open == usd(0))
        guard case .found(let details) = state.query(merchantReference: "h", now: monday) else {
            Issue.record("the hold is not found")
            return
        }
        #expect(details.status == .closed)
    }

    @Test("modifications are idempotent by modification reference")
    func idempotentModifications() throws {
        var state = AcquirerModelState(seed: 11)
        _ = try state.approve("h", usd(10_000))
        let first = try state.capture(capture(3000, "c1"), now: monday)
        let again = try state.capture(capture(3000, "c1"), now: monday + 5)
        #expect(first == again)
        #expect(state.balance(of: "h")?.captured == usd(3000))
        #expect(errorCode { try state.capture(capture(3001, "c1"), now: monday) } == .duplicateReference)
    }

    @Test("increments: approved within open-to-buy, declined with 51 beyond it (nothing changes)")
    func increments() throws {
        let config = AcquirerModelConfiguration(creditLimits: [CreditLimit(token: "tok_visa", limit: usd(20_000))])
        var state = AcquirerModelState(seed: 11, configuration: config)
        _ = try state.approve("h", usd(10_000), type: .preAuthorization)
        let up = try state.increment(IncrementRequest(authorizationReference: "h", modificationReference: "i1", amount: usd(5000)), now: monday)
        #expect(up.responseCode == .approved && up.balance.incremented == usd(5000) && up.balance.open == usd(15_000))
        #expect(state.openToBuy(token: "tok_visa") == usd(5000))
        let before = state.balance(of: "h")
        let declined = try state.increment(IncrementRequest(authorizationReference: "h", modificationReference: "i2", amount: usd(5001)), now: monday)
        #expect(declined.responseCode == .insufficientFunds)
        #expect(declined.balance == before)
        #expect(state.balance(of: "h") == before && state.openToBuy(token: "tok_visa") == usd(5000))
        // The whole incremented amount can be captured.
        let captured = try state.capture(capture(15_000, "c1"), now: monday)
        #expect(captured.balance.captured == usd(15_000) && captured.balance.satisfiesIdentity)
        #expect(
            errorCode { try state.increment(IncrementRequest(authorizationReference: "h", modificationReference: "i3", amount: usd(1)), now: monday) }
                == .holdClosed
        )
    }

    @Test("partial void, then full void of the rest")
    func voids() throws {
        var state = AcquirerModelState(seed: 11)
        _ = try state.approve("h", usd(10_000))
        _ = try state.capture(capture(2000, "c1"), now: monday)
        let partial = try state.reverse(ReversalRequest(authorizationReference: "h", modificationReference: "v1", amount: usd(3000)), now: monday)
        #expect(partial.balance.reversed == usd(3000) && partial.balance.open == usd(5000))
        #expect(
            errorCode { try state.reverse(ReversalRequest(authorizationReference: "h", modificationReference: "v2", amount: usd(5001)), now: monday) }
                == .amountExceedsOpen
        )
        let full = try state.reverse(ReversalRequest(authorizationReference: "h", modificationReference: "v2"), now: monday)
        #expect(full.amount == usd(5000) && full.balance.open == usd(0) && full.balance.reversed == usd(8000))
        #expect(full.balance.satisfiesIdentity)
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000 - 2000))
        #expect(
            errorCode { try state.reverse(ReversalRequest(authorizationReference: "h", modificationReference: "v3"), now: monday) } == .holdClosed
        )
        #expect(state.invariantViolations().isEmpty)
    }

    @Test("refunds are bounded by captured − refunded, also after the hold closed")
    func refunds() throws {
        var state = AcquirerModelState(seed: 11)
        _ = try state.approve("h", usd(10_000))
        #expect(
            errorCode { try state.refund(RefundRequest(authorizationReference: "h", modificationReference: "r0", amount: usd(1)), now: monday) }
                == .refundExceedsCaptured
        )
        _ = try state.capture(capture(4000, "c1", final: true), now: monday)
        let r1 = try state.refund(RefundRequest(authorizationReference: "h", modificationReference: "r1", amount: usd(1500)), now: monday)
        #expect(r1.balance.refunded == usd(1500))
        #expect(
            errorCode { try state.refund(RefundRequest(authorizationReference: "h", modificationReference: "r2", amount: usd(2501)), now: monday) }
                == .refundExceedsCaptured
        )
        let r2 = try state.refund(RefundRequest(authorizationReference: "h", modificationReference: "r2", amount: usd(2500)), now: monday)
        #expect(r2.balance.refunded == usd(4000))
        #expect(
            errorCode { try state.refund(RefundRequest(authorizationReference: "h", modificationReference: "r3", amount: usd(1)), now: monday) }
                == .refundExceedsCaptured
        )
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000))
        #expect(state.invariantViolations().isEmpty)
    }

    @Test("a hold expires once at authorization + lifetime; its open amount is released exactly once")
    func expiryExactlyOnce() throws {
        var state = AcquirerModelState(seed: 11)
        let response = try state.approve("h", usd(10_000))
        #expect(response.holdExpiresAt == monday + Double(7 * day))
        _ = try state.capture(capture(2500, "c1"), now: monday + Double(day))
        // One second before the end it is still open.
        state.expireHolds(now: monday + Double(7 * day - 1))
        #expect(state.balance(of: "h")?.open == usd(7500))
        state.expireHolds(now: monday + Double(7 * day))
        let expired = try #require(state.balance(of: "h"))
        #expect(expired.expired == usd(7500) && expired.open == usd(0) && expired.satisfiesIdentity)
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000 - 2500))
        // Again, later, or lazily through another call: nothing more is released.
        state.expireHolds(now: monday + Double(30 * day))
        _ = state.query(merchantReference: "h", now: monday + Double(31 * day))
        #expect(state.balance(of: "h") == expired)
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000 - 2500))
        // Captures, increments and voids on an expired hold are refused; refunds of what was captured are not.
        let later = monday + Double(8 * day)
        #expect(errorCode { try state.capture(capture(1, "c2"), now: later) } == .holdExpired)
        #expect(
            errorCode { try state.increment(IncrementRequest(authorizationReference: "h", modificationReference: "i", amount: usd(1)), now: later) }
                == .holdExpired
        )
        #expect(errorCode { try state.reverse(ReversalRequest(authorizationReference: "h", modificationReference: "v"), now: later) } == .holdExpired)
        _ = try state.refund(RefundRequest(authorizationReference: "h", modificationReference: "r", amount: usd(2500)), now: later)
        guard case .found(let details) = state.query(merchantReference: "h", now: later) else {
            Issue.record("the hold is not found")
            return
        }
        #expect(details.status == .expired)
        #expect(state.invariantViolations().isEmpty)
    }

    @Test("a capture arriving after the expiry time is refused even without an explicit expireHolds")
    func lazyExpiry() throws {
        var state = AcquirerModelState(seed: 11)
        _ = try state.approve("h", usd(10_000))
        #expect(errorCode { try state.capture(capture(100, "c1"), now: monday + Double(7 * day)) } == .holdExpired)
        #expect(state.balance(of: "h")?.expired == usd(10_000))
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000))
    }

    @Test(
        "hold lifetimes come from configuration per network, initiator and type",
        arguments: [
            ("tok_visa", TransactionInitiator.customer, AuthorizationType.final, 7 * day),
            ("tok_visa", .merchant, .final, 4 * day + 18 * hour),
            ("tok_mastercard", .customer, .final, 7 * day),
            ("tok_mastercard", .customer, .preAuthorization, 30 * day),
            ("tok_discover", .customer, .final, 10 * day),
            ("tok_amex", .merchant, .preAuthorization, 7 * day),
        ]
    )
    func lifetimes(token: String, initiator: TransactionInitiator, type: AuthorizationType, seconds: Int64) throws {
        var state = AcquirerModelState(seed: 1)
        let response = try state.authorize(authorization("h", usd(100), token: token, initiator: initiator, type: type), now: monday)
        #expect(response.holdExpiresAt == monday + Double(seconds))
        let custom = AcquirerModelConfiguration(holdLifetimes: [HoldLifetimeRule(lifetimeSeconds: 3600)])
        var short = AcquirerModelState(seed: 1, configuration: custom)
        let shortResponse = try short.authorize(authorization("h", usd(100), token: token, initiator: initiator, type: type), now: monday)
        #expect(shortResponse.holdExpiresAt == monday + 3600)
    }
}
