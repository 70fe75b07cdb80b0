import LedgerCoreTestSupport
import Synchronization
import Testing
@testable import LedgerCore

/// The test helpers fail when they should: a spec whose expectation is wrong records an issue, and a seeded
/// test's failures name their seed.
struct DeciderSpecTests {
    let clock = pid("clock")
    var spec: DeciderSpec<ProductState?, ProductCommand, ProductEvent, ProductRejection> { .product(clock, context: ctx) }
    var listing: [ProductEvent] {
        [.listed(ProductListed(productID: clock, sku: "clock", name: "Clock", description: "", imageFile: "clock.png", price: usd("1.00"))),
         .stockReceived(StockReceived(productID: clock, quantity: 10))]
    }

    @Test func givenFoldsTheHistoryFromTheInitialState() {
        #expect(spec.given([]).state == nil)
        #expect(spec.given(listing).state?.onHand == 10)
        #expect(spec.given(listing).state?.version == 2)
    }

    @Test func aRightExpectationPasses() {
        spec.given(listing).when(.receiveStock(quantity: 5)).then([.stockReceived(StockReceived(productID: clock, quantity: 5))])
        spec.given([]).when(.receiveStock(quantity: 5)).thenRejects(.unknownProduct(clock))
    }

    @Test func everyWrongExpectationIsAnIssue() {
        withKnownIssue("other events") {
            spec.given(listing).when(.receiveStock(quantity: 5)).then([])
        }
        withKnownIssue("events where the command is rejected") {
            spec.given([]).when(.receiveStock(quantity: 5)).then([.stockReceived(StockReceived(productID: clock, quantity: 5))])
        }
        withKnownIssue("another rejection") {
            spec.given([]).when(.receiveStock(quantity: 5)).thenRejects(.alreadyListed(clock))
        }
        withKnownIssue("a rejection where the command is accepted") {
            spec.given(listing).when(.receiveStock(quantity: 5)).thenRejects(.nonPositiveQuantity(5))
        }
    }
}

struct PropertySeedTests {
    @Test(.seeded(by: "LEDGER_TEST_SEED_CHECK", default: 42)) func theSeedComesFromTheTrait() {
        #expect(PropertySeed.current == 42)
        var a = PropertySeed.generator(), b = PropertySeed.generator()
        #expect((0..<8).map { _ in a.next() } == (0..<8).map { _ in b.next() })
    }

    /// What an issue observer saw.
    final class Seen: Sendable {
        let comments = Mutex<[String]>([])
        let seed = Mutex<UInt64?>(nil)
    }

    @Test func everyFailureOfASeededTestNamesItsSeed() async throws {
        let seeded = PropertySeed.seeded(by: "LEDGER_TEST_SEED_CHECK", default: 7)
        let test = try #require(Test.current)
        let seen = Seen()
        // Outside the seeded scope: sees each issue as the seeded scope passes it on, and keeps it from failing this test.
        let observer = IssueHandlingTrait.filterIssues { issue in
            seen.comments.withLock { $0 += issue.comments.map(\.rawValue) }
            return false
        }
        try await observer.provideScope(for: test, testCase: Test.Case.current) {
            try await seeded.provideScope(for: test, testCase: Test.Case.current) {
                seen.seed.withLock { $0 = PropertySeed.current }
                Issue.record("a property failed")
            }
        }
        #expect(seen.seed.withLock { $0 } == 7)
        #expect(seen.comments.withLock { $0 } == ["a property failed", "seed 7 (replay with LEDGER_TEST_SEED_CHECK=7)"])
    }
}
