import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerTestSupport
import Synchronization
import Testing

/// The expiry sweep asks the acquirer about a page's open holds in one call (issue 57): one request per hold, even 16
/// at a time, made the sweep as much work as the payments during a day at the machine's maximum. A page of 36 due
/// holds: one `query(merchantReferences:)` naming each open hold once, no query one at a time, and every hold expires.
@Suite(.machine(.shared)) struct ExpiryQueryTests {
    @Test func anExpiryPageAsksTheAcquirerAboutItsHoldsInOneCall() async throws {
        let clock = SimulatedClock(Date(timeIntervalSince1970: 1_790_000_000))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        let calls = Mutex<[InterposedAcquirer.Call: Int]>([:])
        let acquirer = InterposedAcquirer(model, before: { call in calls.withLock { $0[call, default: 0] += 1 } })
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            // Spread over the demo catalogue, within its stock (amounts with shipping and tax, as bench/payments.lua).
            let products = [("Clock", 5900), ("Pen", 3200), ("Pencil", 554), ("Stapler", 2120), ("Cup", 2660), ("Catpad", 1796)]
            for n in 0..<36 {
                let (product, amount) = products[n % products.count]
                _ = try await StorefrontDriver().placeOrder(client, product: product, amount: amount)
            }
            calls.withLock { $0 = [:] }
            clock.advance(by: 8 * 86_400)
            #expect(try await services.holds.expireDue() == 36)
            let seen = calls.withLock { $0 }
            #expect(seen[.queries] == 1, "\(seen)")
            #expect(seen[.query] == nil, "\(seen)")
            #expect(try await services.eventCount(type: "HoldExpired") == 36)
        }
    }
}
