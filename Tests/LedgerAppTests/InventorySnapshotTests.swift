import Foundation
import HummingbirdTesting
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

/// As-of reads of the inventory and of products start from inventory snapshots (sql/0013): they
/// must answer exactly what the fold from position 1 answers, at every position (before the first
/// snapshot, on one, between two, after the last) and at instants when holds had lapsed; a snapshot
/// whose bytes were changed is skipped; one forged with a matching digest is found by the audit.
@Suite(.machine(.shared)) struct InventorySnapshotTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    /// A day of orders on two products: payments, a partial capture, a void, a shipment (stock
    /// sold), a refund, a decline, then holds left to lapse and swept, and more orders after.
    /// `atLapse` runs past the holds' expiry, before the sweep, with that instant.
    func day(
        _ client: any TestClientProtocol,
        _ services: ServiceContainer,
        _ clock: SimulatedClock,
        snapshotMidway: Bool,
        atLapse: (Int64) async throws -> Void = { _ in }
    ) async throws {
        func operate(_ id: String, _ operation: String, _ body: String = "{}") async throws {
            let (status, text) = try await backOffice.operate(client, id, operation, body)
            #expect(status == .ok, "\(operation) \(body): \(text)")
        }
        var orders: [String] = []
        for i in 0..<6 {
            orders.append(
                i % 2 == 0 ? try await storefront.placeOrder(client) : try await storefront.placeOrder(client, product: "Pen", amount: 3200)
            )
        }
        try await operate(orders[0], "capture", #"{"amount": "20.00"}"#)
        try await operate(orders[1], "void")
        try await operate(orders[2], "capture", #"{"final": true}"#)
        try await operate(orders[2], "ship")
        if snapshotMidway { try await services.state.snapshots.catchUp() }
        try await operate(orders[2], "refund", #"{"amount": "10.00", "reason": "scratched"}"#)
        _ = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_chargeDeclined"))
        orders.append(try await storefront.placeOrder(client, product: "Pen", amount: 3200))
        // Past the holds' expiry; the sweeper has not run: reads lapse the open holds.
        clock.advance(by: 8 * 86_400)
        try await atLapse(clock.now.epochMicroseconds)
        #expect(try await services.holds.expireDue() > 0)
        for _ in 0..<3 { orders.append(try await storefront.placeOrder(client)) }
        try await operate(orders.last!, "capture", #"{"final": true}"#)
        // End between two snapshots.
        while try await services.store.head().position % 7 == 0 { orders.append(try await storefront.placeOrder(client)) }
    }

    @Test func snapshotAnswersEqualTheFoldFromPositionOneAtEveryPosition() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 5, clock: { clock.now })
        // A fixed stride (bytes per event 0), so the positions are known: 7, 14, …
        let environment = [
            "LEDGERD_SNAPSHOT_EVERY_EVENTS": "7", "LEDGERD_SNAPSHOT_BYTES_PER_EVENT": "0", "LEDGERD_SNAPSHOT_INTERVAL_SECONDS": "3600",
        ]
        try await TestApp.withApp(seed: true, acquirer: model, clock: { clock.now }, environment: environment) { client, services in
            let state = services.state
            try await day(client, services, clock, snapshotMidway: true) { lapsed in
                // Holds past their expiry, not swept: the read at that instant lapses them (and
                // releases their stock); from snapshots as from position 1.
                try await state.snapshots.catchUp()
                let atLapse = try await state.inventory(asOf: .time(micros: lapsed))
                let full = try await state.inventoryByFullFold(asOf: .time(micros: lapsed))
                #expect(atLapse.json == full.json, "inventory at the lapse\n snapshot: \(atLapse.json)\n full:     \(full.json)")
                let point = try #require(atLapse.asOf)
                let history = try await state.snapshots.history(through: point.position)
                #expect(!history.lapseCandidates(atMicros: lapsed).isEmpty)
                let recorded = try await state.inventory(asOf: .position(point.position))
                #expect(recorded.json != atLapse.json, "the lapse released stock")
                for micros in [lapsed - 1, lapsed] {
                    for product in ["clock", "pen"] {
                        let a = try await state.product(product, asOf: .time(micros: micros))
                        let b = try await state.productByFullFold(product, asOf: .time(micros: micros))
                        #expect(a?.json == b?.json, "\(product) at \(RFC3339.format(micros))")
                    }
                }
            }
            try await services.state.snapshots.catchUp()
            let head = try await services.store.head().position
            let positions = try await services.state.snapshots.store.positions()
            // Snapshots at 7, 14, …: positions before the first, on each, between two and after the last are all asked below.
            #expect(positions == Array(stride(from: 7, through: head, by: 7)), "\(positions), head \(head)")
            #expect(head % 7 != 0, "the last events lie after the last snapshot")
            #expect(positions.count >= 10)

            var instants: [Int64] = []
            for position in 0...head {
                let snapshot = try await state.inventory(asOf: .position(position))
                let full = try await state.inventoryByFullFold(asOf: .position(position))
                #expect(snapshot.json == full.json, "inventory as of \(position)\n snapshot: \(snapshot.json)\n full:     \(full.json)")
                #expect(snapshot.asOf == full.asOf)
                for product in ["clock", "pen"] {
                    let a = try await state.product(product, asOf: .position(position))
                    let b = try await state.productByFullFold(product, asOf: .position(position))
                    #expect(a?.json == b?.json, "\(product) as of \(position)")
                }
                if let micros = snapshot.asOf?.micros { instants.append(micros) }
            }
            // Instants: each event's recorded time.
            for micros in instants {
                let snapshot = try await state.inventory(asOf: .time(micros: micros))
                let full = try await state.inventoryByFullFold(asOf: .time(micros: micros))
                #expect(snapshot.json == full.json, "inventory as of \(RFC3339.format(micros))")
            }
            // And the snapshots are the log's.
            let report = try await state.snapshots.verify()
            #expect(report.ok && report.checked == positions.count, "\(report)")
        }
    }

    /// Snapshots grow with the open reservations; the next one comes no sooner than the last one's
    /// bytes ÷ `LEDGERD_SNAPSHOT_BYTES_PER_EVENT` events later (and never sooner than the fewest,
    /// `LEDGERD_SNAPSHOT_EVERY_EVENTS`). Every gap is the rule's, some gap is wider than the fewest
    /// (so a fixed stride fails this), two writers' catch-ups agree, and reads still equal the fold
    /// from position 1 at every position.
    @Test func snapshotsAreSpacedByTheirSize() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 7, clock: { clock.now })
        let database = try await TestDatabase.fresh()
        let (every, bytesPerEvent): (Int64, Int64) = (2, 150)
        let environment = [
            "LEDGERD_SNAPSHOT_EVERY_EVENTS": "\(every)", "LEDGERD_SNAPSHOT_BYTES_PER_EVENT": "\(bytesPerEvent)",
            "LEDGERD_SNAPSHOT_INTERVAL_SECONDS": "3600",
        ]
        try await TestApp.withApp(seed: true, database: database, acquirer: model, clock: { clock.now }, environment: environment) {
            client,
            services in
            let state = services.state
            try await day(client, services, clock, snapshotMidway: true)
            try await state.snapshots.catchUp()
            let head = try await services.store.head().position
            let stored = try await database.withApp { app in
                var stored: [(position: Int64, bytes: Int64)] = []
                let rows = try await app.query(
                    "SELECT position, octet_length(state)::bigint FROM ledger.inventory_snapshots ORDER BY position",
                    logger: TestCluster.logger
                )
                for try await row in rows.decode((Int64, Int64).self) { stored.append(row) }
                return stored
            }
            try #require(stored.count >= 4, "\(stored)")
            #expect(stored[0].position == every)
            var wider = 0
            for (before, after) in zip(stored, stored.dropFirst()) {
                let rule = max(every, (before.bytes + bytesPerEvent - 1) / bytesPerEvent)
                #expect(after.position - before.position == rule, "after \(before): \(after.position), the rule says +\(rule)")
                if rule > every { wider += 1 }
            }
            #expect(wider > 0, "some snapshot outgrew the fewest events: \(stored)")
            let last = try #require(stored.last)
            #expect(last.position + max(every, (last.bytes + bytesPerEvent - 1) / bytesPerEvent) > head, "none is missing")
            // A second writer (another daemon on this log) computes the same positions: nothing to add.
            let other = InventorySnapshots(client: services.client, every: every, bytesPerEvent: bytesPerEvent, logger: TestCluster.logger)
            #expect(try await other.catchUp() == 0)
            for position in 0...head {
                let snapshot = try await state.inventory(asOf: .position(position))
                let full = try await state.inventoryByFullFold(asOf: .position(position))
                #expect(snapshot.json == full.json, "inventory as of \(position)")
            }
            #expect(try await state.snapshots.verify().ok)
        }
    }

    @Test func aChangedSnapshotIsSkippedAndAForgedOneIsFoundByTheAudit() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 6, clock: { clock.now })
        let database = try await TestDatabase.fresh()
        let environment = [
            "LEDGERD_SNAPSHOT_EVERY_EVENTS": "10", "LEDGERD_SNAPSHOT_BYTES_PER_EVENT": "0", "LEDGERD_SNAPSHOT_INTERVAL_SECONDS": "3600",
        ]
        try await TestApp.withApp(seed: true, database: database, acquirer: model, clock: { clock.now }, environment: environment) {
            client,
            services in
            try await day(client, services, clock, snapshotMidway: false)
            let snapshots = services.state.snapshots
            try await snapshots.catchUp()
            let positions = try await snapshots.store.positions()
            try #require(positions.count >= 4)
            let target = positions[positions.count / 2]
            let reference = try await services.state.inventoryByFullFold(asOf: .position(target))
            #expect(try await services.state.inventory(asOf: .position(target)).json == reference.json)
            #expect(try await snapshots.verify().ok)

            // The app role cannot change a snapshot.
            await #expect(throws: (any Error).self) {
                try await database.withApp { app in
                    try await app.query("UPDATE ledger.inventory_snapshots SET state = state WHERE position = \(target)", logger: TestCluster.logger)
                }
            }

            // 1. Bytes changed, digest left: the read skips it (an earlier snapshot and the events after it).
            let forge = """
                UPDATE ledger.inventory_snapshots
                SET state = convert_to(regexp_replace(convert_from(state, 'UTF8'), '"on_hand":[0-9]+', '"on_hand":999999', 'g'), 'UTF8')
                WHERE position = \(target)
                """
            try await database.tamper(forge)
            #expect(try await services.state.inventory(asOf: .position(target)).json == reference.json, "the changed snapshot was skipped")
            #expect(
                try await services.state.inventory(asOf: .position(target + 1)).json
                    == (try await services.state.inventoryByFullFold(asOf: .position(target + 1))).json
            )
            var report = try await snapshots.verify()
            #expect(report.bad.map { $0.position } == [target], "\(report)")

            // 2. The digest recomputed too: the read cannot tell (it shows the forged stock, which is how we
            // know reads come from snapshots), and the audit's rebuild from the log finds it.
            try await database.tamper("UPDATE ledger.inventory_snapshots SET state_sha256 = sha256(state) WHERE position = \(target)")
            let forged = try await services.state.inventory(asOf: .position(target)).json
            #expect(forged != reference.json && forged.contains("999999"))
            report = try await snapshots.verify()
            #expect(!report.ok && report.bad.map { $0.position } == [target], "\(report)")
            #expect(report.bad.first?.reason == "its state is not the log's")

            // 3. A snapshot moved to another position (its event_hash is no longer the log's there): skipped.
            try await database.tamper(
                """
                UPDATE ledger.inventory_snapshots SET state = s.state, state_sha256 = s.state_sha256
                FROM (SELECT state, state_sha256 FROM ledger.inventory_snapshots WHERE position = \(positions[0])) s
                WHERE position = \(target);
                UPDATE ledger.inventory_snapshots SET event_hash = (SELECT hash FROM ledger.events WHERE position = \(positions[0]))
                WHERE position = \(positions[1])
                """
            )
            #expect(
                try await services.state.inventory(asOf: .position(positions[1])).json
                    == (try await services.state.inventoryByFullFold(asOf: .position(positions[1]))).json
            )
            // (position `target` now holds position 1's bytes, which say another position: skipped too)
            #expect(try await services.state.inventory(asOf: .position(target)).json == reference.json)
            report = try await snapshots.verify()
            #expect(Set(report.bad.map { $0.position }) == [positions[1], target], "\(report)")
        }
    }

    /// The snapshot's bytes are canonical: a history restored from them gives the same bytes again,
    /// and a fold resumed from the restored history equals the fold that never stopped.
    @Test func snapshotBytesRoundTrip() throws {
        let clock = ProductID("clock")!
        let order = OrderID("o-1")!
        var history = InventoryHistory()
        let listed = ProductListed(
            productID: clock,
            sku: "CLK",
            name: "Clock",
            description: "A clock",
            imageFile: "clock.png",
            price: Money(minorUnits: 5_000, currency: .usd)
        )
        history.apply(.product(.listed(listed)), at: 3)
        history.apply(.product(.stockReceived(StockReceived(productID: clock, quantity: 5))), at: 4)
        history.apply(.product(.stockReserved(StockReserved(productID: clock, orderID: order, quantity: 2))), at: 9)
        let bytes = try history.snapshotBytes()
        let restored = try InventoryHistory(snapshot: bytes)
        #expect(try restored.snapshotBytes() == bytes)
        #expect(restored == history.asSnapshot)
        #expect(restored.products[clock]?.available == 3 && restored.listed == [clock])
        #expect(throws: SnapshotError.self) {
            try InventoryHistory(snapshot: Array((#"{"first_positions":{},"format":1,"position":1,"products":[]}"# + "\n").utf8))
        }
    }

    /// A read restores only the reservations that can lapse by its instant (holds not placed yet, or
    /// expiring by then); every figure the rows show stays whole.
    @Test func aReadRestoresOnlyTheReservationsThatCanLapseByItsInstant() throws {
        let clock = ProductID("clock")!
        let (early, late, unpaid) = (OrderID("o-early")!, OrderID("o-late")!, OrderID("o-unpaid")!)
        func placed(_ order: OrderID, expiring micros: Int64) -> DomainEvent {
            .hold(
                .placed(
                    AuthorizationHoldPlaced(
                        orderID: order,
                        merchantReference: order.rawValue,
                        pspReference: "psp",
                        authCode: "123456",
                        amount: Money(minorUnits: 100, currency: .usd),
                        network: .visa,
                        fundingType: .credit,
                        lastFour: "4242",
                        expiresAt: Date(epochMicroseconds: micros),
                        authorizedAt: Date(epochMicroseconds: 0)
                    )
                )
            )
        }
        var history = InventoryHistory()
        let price = Money(minorUnits: 5_000, currency: .usd)
        history.apply(
            .product(.listed(ProductListed(productID: clock, sku: "C", name: "Clock", description: "", imageFile: "c.png", price: price))),
            at: 1
        )
        history.apply(.product(.stockReceived(StockReceived(productID: clock, quantity: 9))), at: 2)
        for (i, order) in [early, late, unpaid].enumerated() {
            history.apply(.product(.stockReserved(StockReserved(productID: clock, orderID: order, quantity: 1))), at: Int64(3 + i))
        }
        history.apply(placed(early, expiring: 1_000), at: 6)
        history.apply(placed(late, expiring: 5_000), at: 7)
        let bytes = try history.snapshotBytes()
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst()
        #expect(lines == ["-:o-unpaid:clock:1", "1000:o-early:clock:1", "5000:o-late:clock:1"])
        let partial = try InventoryHistory(snapshot: bytes, reservationsExpiringBy: 4_999)
        #expect(partial.isPartial)
        #expect(Set(partial.products[clock]!.reservations.keys) == [early, unpaid])
        #expect(partial.products[clock]!.reserved == 3 && partial.products[clock]!.available == 6)
        #expect(partial.lapseCandidates(atMicros: 4_999) == [early])
        #expect(history.lapseCandidates(atMicros: 4_999) == [early])
        #expect(throws: SnapshotError.self) { try partial.snapshotBytes() }
        let whole = try InventoryHistory(snapshot: bytes, reservationsExpiringBy: 5_000)
        #expect(Set(whole.products[clock]!.reservations.keys) == [early, late, unpaid])
    }
}
