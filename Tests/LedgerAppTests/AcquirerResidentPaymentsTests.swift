import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerService
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

/// Issue 57: the acquirer service held every payment of the day in memory (2.2 GB before a 1,000,000-capture
/// settlement). Past its bound of closed payments it stores them (acquirer 0004) and takes them out; every answer —
/// a repeated authorization or capture, a status inquiry, a refund, a reused reference refused, the settlement of
/// all of them in pages — is the in-process model's, byte for byte, and so is the state after a restart.
@Suite("The acquirer service's memory is bounded by its open holds", .machine(.shared))
struct AcquirerResidentPaymentsTests {
    /// Issue 57: declined authorizations stayed in the service's memory for its whole life (kept for a retry's answer
    /// and a status inquiry). Past the bound they are stored and taken out like closed payments; a repeated request, a
    /// reuse of the reference for another request, a modification and an inquiry answer as the model does, and so does
    /// the state after a restart.
    @Test func declinedAuthorizationsPastTheBoundLeaveMemoryAndAnswerTheSame() async throws {
        let start = TestApp.instant("2026-06-17T10:00:00Z")
        let clock = SimulatedClock(start)
        let serviceClock = SimulatedClock(start)
        let reference = AcquirerModel(seed: 7, clock: clock.reading)
        let database = try await TestDatabase.fresh()
        let bound = 4
        let payments = 24
        @Sendable func usd(_ cents: Int64) -> Money { Money(minorUnits: cents, currency: .usd) }
        /// Two in three are declined; the others captured in full (closed).
        @Sendable func isDeclined(_ index: Int) -> Bool { index % 3 != 0 }
        @Sendable func authorization(_ index: Int, cents: Int64 = 5_000) -> AuthorizationRequest {
            AuthorizationRequest(
                merchantReference: "dp-\(index)",
                amount: usd(cents + Int64(index)),
                paymentMethod: .token(isDeclined(index) ? "tok_chargeDeclined" : "tok_visa")
            )
        }
        let declined = (0..<payments).filter(isDeclined).count
        try await AcquirerHarness.withService(database: database, clock: serviceClock.reading, residentPayments: bound) { acquirer, model in
            @Sendable func both<T: Equatable & Sendable>(_ step: @Sendable (any Acquirer) async throws -> T) async throws {
                try await AcquirerHarness.both(reference, acquirer, step)
            }
            for index in 0..<payments {
                try await both { try await $0.authorize(authorization(index)) }
                if !isDeclined(index) {
                    try await both {
                        try await $0.capture(
                            CaptureRequest(
                                authorizationReference: "dp-\(index)",
                                modificationReference: "dp-\(index)-c",
                                amount: usd(5_000 + Int64(index)),
                                isFinal: true
                            )
                        )
                    }
                }
                clock.advance(by: 2)
                serviceClock.advance(by: 2)
            }
            let filled = await model.resident
            #expect(
                filled.declined + filled.holds <= bound + 1,
                "\(filled.declined) declined and \(filled.holds) closed payments in memory of \(declined) declined, bound \(bound)"
            )
            // The first declines left memory long ago: asked again, they answer as the first time.
            for index in [1, 2, 4] {
                try await both { try await $0.authorize(authorization(index)) }
                try await both { try await $0.query(merchantReference: "dp-\(index)") }
                // The reference reused for another request is refused; a capture finds no hold.
                try await both { try await $0.authorize(authorization(index, cents: 7_000)) }
                try await both {
                    try await $0.capture(
                        CaptureRequest(authorizationReference: "dp-\(index)", modificationReference: "dp-\(index)-c", amount: usd(1), isFinal: true)
                    )
                }
            }
            let replayed = await model.resident
            #expect(replayed.declined + replayed.holds <= bound + 1, "\(replayed) in memory after the replays")
            #expect(try await model.snapshot() == (try await reference.snapshot()))
        }
        // A restart replays the journal within the same bound, to the same state.
        try await database.withOwner { client in
            let replayed = try await AcquirerHarness.reopen(client, clock: serviceClock.reading, residentPayments: bound)
            let resident = await replayed.resident
            #expect(resident.declined + resident.holds <= bound, "\(resident) in memory after the restart")
            #expect(try await replayed.snapshot() == (try await reference.snapshot()))
        }
    }

    @Test func closedPaymentsPastTheBoundLeaveMemoryAndAnswerTheSame() async throws {
        let start = TestApp.instant("2026-06-17T10:00:00Z")
        let clock = SimulatedClock(start)
        let serviceClock = SimulatedClock(start)
        let reference = AcquirerModel(seed: 7, clock: clock.reading)
        let database = try await TestDatabase.fresh()
        let bound = 4
        let payments = 30
        @Sendable func usd(_ cents: Int64) -> Money { Money(minorUnits: cents, currency: .usd) }
        /// Every third payment is captured in part and stays open; the others are captured in full (closed), every
        /// fourth of them refunded in part.
        @Sendable func isOpen(_ index: Int) -> Bool { index % 3 == 0 }
        @Sendable func isRefunded(_ index: Int) -> Bool { !isOpen(index) && index % 4 == 1 }
        @Sendable func both<T: Equatable & Sendable>(_ acquirer: any Acquirer, _ step: @Sendable (any Acquirer) async throws -> T) async throws {
            try await AcquirerHarness.both(reference, acquirer, step)
        }
        @Sendable func authorization(_ index: Int) -> AuthorizationRequest {
            AuthorizationRequest(merchantReference: "rp-\(index)", amount: usd(5_000 + Int64(index)), paymentMethod: .token("tok_visa"))
        }
        @Sendable func capture(_ index: Int) -> CaptureRequest {
            CaptureRequest(
                authorizationReference: "rp-\(index)",
                modificationReference: "rp-\(index)-c",
                amount: usd(isOpen(index) ? 2_000 : 5_000 + Int64(index)),
                isFinal: !isOpen(index)
            )
        }
        @Sendable func refund(_ index: Int) -> RefundRequest {
            RefundRequest(authorizationReference: "rp-\(index)", modificationReference: "rp-\(index)-r", amount: usd(300))
        }
        let opens = (0..<payments).filter(isOpen).count
        let items: [SettlementItem] = (0..<payments).flatMap { index in
            let request = capture(index)
            var items = [
                SettlementItem(
                    kind: .capture,
                    authorizationReference: request.authorizationReference,
                    modificationReference: request.modificationReference,
                    amount: request.amount
                )
            ]
            if isRefunded(index) {
                items.append(
                    SettlementItem(kind: .refund, authorizationReference: "rp-\(index)", modificationReference: "rp-\(index)-r", amount: usd(300))
                )
            }
            return items
        }
        try await AcquirerHarness.withService(database: database, clock: serviceClock.reading, residentPayments: bound) { acquirer, model in
            for index in 0..<payments {
                try await both(acquirer) { try await $0.authorize(authorization(index)) }
                try await both(acquirer) { try await $0.capture(capture(index)) }
                if isRefunded(index) { try await both(acquirer) { try await $0.refund(refund(index)) } }
                clock.advance(by: 2)
                serviceClock.advance(by: 2)
            }
            // The payments leave memory after their batch is answered: one request at a time, at most one over the bound.
            let filled = await model.resident
            #expect(filled.holds <= opens + bound + 1, "\(filled.holds) payments in memory, \(opens) of them open, bound \(bound)")
            // The first payments left memory long ago: their requests again get the first answers.
            for index in [1, 2, 4, 5] {
                try await both(acquirer) { try await $0.authorize(authorization(index)) }
                try await both(acquirer) { try await $0.capture(capture(index)) }
                try await both(acquirer) { try await $0.query(merchantReference: "rp-\(index)") }
            }
            // A reference reused for another request is still refused; a closed hold still takes no capture.
            try await both(acquirer) {
                try await $0.capture(CaptureRequest(authorizationReference: "rp-2", modificationReference: "rp-2-c", amount: usd(1), isFinal: true))
            }
            try await both(acquirer) {
                try await $0.capture(CaptureRequest(authorizationReference: "rp-2", modificationReference: "rp-2-c2", amount: usd(1), isFinal: true))
            }
            // Every capture and refund settled in pages of 7 items, the payments put back a page at a time.
            let pages: @Sendable (Int) async throws -> [SettlementItem]? = { page in
                page * 7 < items.count ? Array(items[(page * 7)..<min(items.count, page * 7 + 7)]) : nil
            }
            // The same items and one unknown capture on the last page, under another batch reference: refused after the
            // service settled the pages before it in its one pass, and undone whole — the state, the report lines and
            // the stored payments as before — so the batch that follows settles every item under the same batch number.
            let refusedItems =
                items + [
                    SettlementItem(kind: .capture, authorizationReference: "rp-1", modificationReference: "rp-unknown", amount: usd(100))
                ]
            try await both(acquirer) { acquirer in
                try await acquirer.submitBatch(SettlementBatchHeader(batchReference: "B-refused", currency: .usd)) { page in
                    page * 7 < refusedItems.count ? Array(refusedItems[(page * 7)..<min(refusedItems.count, page * 7 + 7)]) : nil
                }
            }
            #expect(try await model.snapshot() == (try await reference.snapshot()))
            try await both(acquirer) { try await $0.submitBatch(SettlementBatchHeader(batchReference: "B-resident", currency: .usd), pages: pages) }
            // The report's lines, sent as stored: the bytes the model's lines encode to.
            let receipt = try await acquirer.submitBatch(SettlementBatchHeader(batchReference: "B-resident", currency: .usd), pages: pages)
            let lines = try await reference.reportLines(batchNumber: receipt.batchNumber, from: 0, count: 1_000)
            #expect(lines.count == receipt.lineCount)
            let page = await model.perform(.reportLines(batchNumber: receipt.batchNumber, from: 0, count: 1_000), key: nil)
            let encoded = try LedgerJSON.encode(lines)
            #expect(page.status == 200 && page.body == encoded)
            // An item settled already is refused, from the stored payment; a refund after the settlement is taken.
            try await both(acquirer) { acquirer in
                try await acquirer.submitBatch(SettlementBatchHeader(batchReference: "B-again", currency: .usd)) { $0 == 0 ? [items[1]] : nil }
            }
            try await both(acquirer) {
                try await $0.refund(RefundRequest(authorizationReference: "rp-2", modificationReference: "rp-2-r2", amount: usd(100)))
            }
            let settled = await model.resident
            #expect(settled.holds <= opens + bound + 1, "\(settled.holds) payments in memory after the settlement")
            #expect(try await model.snapshot() == (try await reference.snapshot()))
        }
        // A restart replays the journal within the same bound, to the same state, and says how far it got after each
        // settlement page it replays (a supervisor waiting for a night's batch to replay sees it progress).
        try await database.withOwner { client in
            let progress = Mutex<[Int64]>([])
            let replayed = try await AcquirerHarness.reopen(client, clock: serviceClock.reading, residentPayments: bound) { seq in
                progress.withLock { $0.append(seq) }
            }
            #expect(await replayed.resident.holds <= opens + bound)
            #expect(try await replayed.snapshot() == (try await reference.snapshot()))
            let told = progress.withLock { $0 }
            let residentPages = (items.count + 6) / 7
            #expect(told.count >= residentPages, "progress told \(told.count) times for \(residentPages) pages of the batch: \(told)")
            #expect(told == told.sorted() && told.allSatisfy { $0 > 0 })
        }
    }
}
