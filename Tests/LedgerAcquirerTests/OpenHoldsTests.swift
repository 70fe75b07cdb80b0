import Foundation
import LedgerAcquirer
import LedgerCore
import Testing

/// The open-hold index (``OpenHolds``, issue 57): a close is a hash removal and an expiry pass takes only the due holds
/// off a queue by expiry, while equality and the snapshot still see the open references in authorization order, as
/// the array it replaced did (so a snapshot's bytes are what they were, and a restored state equals the live one).
struct OpenHoldsTests {
    /// h1 (Discover, 10 days) and h2 … h6 (Visa, 7 days), authorized a second apart: h1 is first in authorization order
    /// and last to expire. h2 is captured in full and h4 reversed, so both close before their expiry.
    func openedDay() throws -> AcquirerModelState {
        var state = AcquirerModelState(seed: 3)
        for i in 1...6 {
            _ = try state.authorize(authorization("h\(i)", usd(1_000), token: i == 1 ? "tok_discover" : "tok_visa"), now: monday + Double(i))
        }
        _ = try state.capture(
            CaptureRequest(authorizationReference: "h2", modificationReference: "c2", amount: usd(1_000), isFinal: true),
            now: monday + 10
        )
        _ = try state.reverse(ReversalRequest(authorizationReference: "h4", modificationReference: "r4", amount: nil), now: monday + 11)
        return state
    }

    @Test func closedHoldsLeaveTheIndexAndTheSnapshotListsTheOpenOnesInAuthorizationOrder() throws {
        let state = try openedDay()
        #expect(state.invariantViolations() == [])
        let lines = String(decoding: try state.snapshot(), as: UTF8.self).split(separator: "\n")
        #expect(lines[1].contains(#""openHolds":["h1","h3","h5","h6"]"#), "\(lines[1])")
        #expect(try AcquirerModelState(snapshot: state.snapshot()) == state)
    }

    @Test func anExpiryPassExpiresTheDueOpenHoldsOnlyAndARestoredStateExpiresTheSame() throws {
        var live = try openedDay()
        var restored = try AcquirerModelState(snapshot: live.snapshot())
        // Visa's 7 days after h3's authorization: h3 is due (h2 and h4, due earlier, are closed); h5, h6 and h1 are not.
        let now = monday + Double(7 * 86_400 + 3)
        live.expireHolds(now: now)
        restored.expireHolds(now: now)
        #expect(live.balance(of: "h3")?.expired == usd(1_000) && live.balance(of: "h3")?.open == usd(0))
        #expect(live.balance(of: "h2")?.expired == usd(0) && live.balance(of: "h4")?.expired == usd(0))
        for open in ["h1", "h5", "h6"] { #expect(live.balance(of: open)?.open == usd(1_000), "\(open)") }
        #expect(live.expiryDue(at: now) == false && live.expiryDue(at: monday + Double(7 * 86_400 + 5)))
        #expect(live.invariantViolations() == [])
        #expect(live == restored)
        #expect(try live.snapshot() == restored.snapshot())
        // Past every expiry, h1 last: nothing is open any more.
        live.expireHolds(now: monday + Double(10 * 86_400 + 1))
        for reference in ["h1", "h3", "h5", "h6"] { #expect(live.balance(of: reference)?.open == usd(0), "\(reference)") }
        #expect(live.expiryDue(at: monday + Double(100 * 86_400)) == false)
        #expect(live.invariantViolations() == [])
    }
}
