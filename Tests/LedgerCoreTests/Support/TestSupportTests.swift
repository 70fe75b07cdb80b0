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
        [
            .listed(ProductListed(productID: clock, sku: "clock", name: "Clock", description: "", imageFile: "clock.png", price: usd("1.00"))),
            .stockReceived(StockReceived(productID: clock, quantity: 10)),
        ]
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

    @Test func everyWrongExpectationIsAnIssue() async throws {
        let wrong: [(String, @Sendable () -> Void)] = [
            ("other events", { spec.given(listing).when(.receiveStock(quantity: 5)).then([]) }),
            (
                "events where the command is rejected",
                {
                    spec.given([]).when(.receiveStock(quantity: 5)).then([.stockReceived(StockReceived(productID: clock, quantity: 5))])
                }
            ),
            ("another rejection", { spec.given([]).when(.receiveStock(quantity: 5)).thenRejects(.alreadyListed(clock)) }),
            (
                "a rejection where the command is accepted",
                {
                    spec.given(listing).when(.receiveStock(quantity: 5)).thenRejects(.nonPositiveQuantity(5))
                }
            ),
        ]
        for (name, body) in wrong {
            #expect(try await issues(of: body).count == 1, "\(name)")
        }
    }
}

/// The issues `body` records, kept from failing the running test.
private func issues(of body: @Sendable () async throws -> Void) async throws -> [Issue] {
    let seen = Seen()
    let observer = IssueHandlingTrait.filterIssues { issue in
        seen.issues.withLock { $0.append(issue) }
        return false
    }
    try await observer.provideScope(for: try #require(Test.current), testCase: Test.Case.current, performing: body)
    return seen.issues.withLock { $0 }
}

/// What an issue observer saw.
private final class Seen: Sendable {
    let issues = Mutex<[Issue]>([])
    let seed = Mutex<UInt64?>(nil)
}

struct PropertySeedTests {
    @Test(.seeded(by: "LEDGER_TEST_SEED_CHECK", default: 42)) func theSeedComesFromTheTrait() {
        #expect(PropertySeed.current == 42)
        var a = PropertySeed.generator()
        var b = PropertySeed.generator()
        #expect((0..<8).map { _ in a.next() } == (0..<8).map { _ in b.next() })
    }

    @Test func everyFailureOfASeededTestNamesItsSeed() async throws {
        let seeded = PropertySeed.seeded(by: "LEDGER_TEST_SEED_CHECK", default: 7)
        let test = try #require(Test.current)
        let seen = Seen()
        // The observer is outside the seeded scope: it sees each issue as the seeded scope passes it on.
        let recorded = try await issues {
            try await seeded.provideScope(for: test, testCase: Test.Case.current) {
                seen.seed.withLock { $0 = PropertySeed.current }
                Issue.record("a property failed")
            }
        }
        #expect(seen.seed.withLock { $0 } == 7)
        #expect(recorded.map { $0.comments.map(\.rawValue) } == [["a property failed", "seed 7 (replay with LEDGER_TEST_SEED_CHECK=7)"]])
    }
}
