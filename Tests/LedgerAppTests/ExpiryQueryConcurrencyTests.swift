import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerTestSupport
import Synchronization
import Testing

/// The expiry sweep asks the acquirer about a page's open holds several at a time (issue 57): one after the other, a
/// page of 500 waited 500 round trips to the acquirer service. At most `HoldService.expiryQueriesInFlight` (16) at
/// once, and every due hold still expires.
@Suite(.machine(.shared)) struct ExpiryQueryConcurrencyTests {
    /// The most queries the acquirer saw at once.
    final class InFlight: Sendable {
        let counts = Mutex((now: 0, most: 0))
    }

    @Test func anExpiryPageAsksTheAcquirerAboutItsHoldsSeveralAtATime() async throws {
        let clock = SimulatedClock(Date(timeIntervalSince1970: 1_790_000_000))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        let inFlight = InFlight()
        let acquirer = InterposedAcquirer(
            model,
            before: { call in
                guard call == .query else { return }
                inFlight.counts.withLock {
                    $0.now += 1
                    $0.most = max($0.most, $0.now)
                }
                try? await Task.sleep(for: .milliseconds(50))
                inFlight.counts.withLock { $0.now -= 1 }
            }
        )
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            // Spread over the demo catalogue, within its stock (amounts with shipping and tax, as bench/payments.lua).
            let products = [("Clock", 5900), ("Pen", 3200), ("Pencil", 554), ("Stapler", 2120), ("Cup", 2660), ("Catpad", 1796)]
            for n in 0..<36 {
                let (product, amount) = products[n % products.count]
                _ = try await StorefrontDriver().placeOrder(client, product: product, amount: amount)
            }
            clock.advance(by: 8 * 86_400)
            #expect(try await services.holds.expireDue() == 36)
            let most = inFlight.counts.withLock { $0.most }
            #expect(most > 1 && most <= 16, "at most \(most) queries at once")
            #expect(try await services.eventCount(type: "HoldExpired") == 36)
        }
    }
}
