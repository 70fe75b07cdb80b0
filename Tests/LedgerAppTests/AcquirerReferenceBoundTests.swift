import LedgerAcquirer
import LedgerAcquirerClient
import LedgerApp
import LedgerCore
import LedgerTestSupport
import Testing

/// Issue 57: the ledger's adapter remembered every payment's psp reference and emptied the whole map at 50,000, so
/// right after that every open payment's next capture, refund or void paid a status inquiry first. Bounded now
/// (`LEDGERD_ACQUIRER_REFERENCE_ENTRIES`), it forgets one reference per new one, the least recently used, and a
/// forgotten one is asked for again: answers stay right past the bound.
@Suite("The adapter's psp references are bounded", .machine(.shared))
struct AcquirerReferenceBoundTests {
    /// Status inquiries the adapter sent so far.
    static func inquiries(_ metrics: LedgerMetrics) -> Int {
        HTTPAcquirerBreakerTests.value(metrics, #"ledger_acquirer_request_seconds_count{operation="query"}"#) ?? 0
    }

    @Test func pastTheBoundOneReferenceIsForgottenAtATimeAndAForgottenOneIsAskedFor() async throws {
        let database = try await TestDatabase.fresh()
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let metrics = LedgerMetrics()
        let bound = 4
        let payments = 6
        @Sendable func usd(_ cents: Int64) -> Money { Money(minorUnits: cents, currency: .usd) }
        try await AcquirerHarness.withService(
            database: database,
            clock: clock.reading,
            metrics: metrics,
            rememberedReferences: bound
        ) { acquirer, _ in
            var psp: [String] = []
            for index in 0..<payments {
                let answer = try await acquirer.authorize(
                    AuthorizationRequest(merchantReference: "rb-\(index)", amount: usd(1_000), paymentMethod: .token("tok_visa"))
                )
                psp.append(try #require(answer.pspReference))
            }
            #expect(acquirer.referenceCacheStatistics.entries == bound)
            #expect(acquirer.referenceCacheStatistics.evictions == payments - bound)
            // The newest `bound` payments are remembered: captured by their psp reference without an inquiry.
            for index in (payments - bound)..<payments {
                let capture = try await acquirer.capture(
                    CaptureRequest(authorizationReference: "rb-\(index)", modificationReference: "rb-\(index)-c", amount: usd(400), isFinal: false)
                )
                #expect(capture.responseCode == .approved && capture.pspReference == psp[index])
            }
            #expect(Self.inquiries(metrics) == 0, "remembered references were asked for")
            // The oldest were forgotten: each costs one inquiry, and the capture still reaches its payment.
            for index in 0..<(payments - bound) {
                let capture = try await acquirer.capture(
                    CaptureRequest(authorizationReference: "rb-\(index)", modificationReference: "rb-\(index)-c", amount: usd(400), isFinal: false)
                )
                #expect(capture.responseCode == .approved && capture.pspReference == psp[index])
            }
            #expect(Self.inquiries(metrics) == payments - bound)
            #expect(acquirer.referenceCacheStatistics.entries == bound)
        }
    }
}
