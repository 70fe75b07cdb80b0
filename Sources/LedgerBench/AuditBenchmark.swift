import Foundation
import Histogram
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO

/// `ledgerd bench audit`: the auditor's reads on a large ledger.
///
/// 1. Builds (or reuses) a ledger of `events` events in the embedded cluster of its own data
///    directory (durable, default `./.ledgerd-bench-audit`, the layout `ledgerd serve --data-dir`
///    uses, so `bench/audit.sh` can serve it over HTTP): the demo catalog, then orders that are
///    opened (stock reserved, hold placed, authorized), captured 5,000 orders later and shipped
///    20,000 orders later — 8 events each, interleaved as a day's traffic would be. Events go in
///    through `ledger.append_events` (positions, chain and head exactly as the writer assigns them)
///    in batches, without the inline read models (none of the measured reads uses them).
/// 2. Times, in this process and one at a time, what the history and as-of endpoints do for a
///    request (the queries, the fold, the JSON), for random orders: `GET /orders/{id}/history`,
///    `GET /orders/{id}?as_of=<position>` and `?as_of=<time>`.
/// 3. Verifies the whole chain in Swift (`ChainVerifier`) and in SQL (`ledger.verify_chain`).
/// Writes `orders.lua` (sample order ids for `bench/audit.sh`'s wrk script) to the data directory.
public struct AuditBenchmark: Sendable {
    public struct Options: Sendable {
        public var events = 10_000_000
        public var samples = 2_000
        public var batchEvents = 2_000
        public var skipVerify = false
        public var verifyParallelism = 2
        public init() {}
    }

    public let options: Options
    public let configuration: LedgerConfiguration
    public let logger: Logger

    public init(options: Options, configuration: LedgerConfiguration, logger: Logger) {
        self.options = options
        self.configuration = configuration
        self.logger = logger
    }

    static let captureLag = 5_000
    static let shipLag = 20_000

    public func run(output: @Sendable (String) -> Void) async throws {
        let database = try await LedgerDatabase.prepare(configuration, logger: logger)
        defer { database.stop() }
        let options = self.options
        let logger = self.logger
        try await withPostgresClient(hosts: database.appConfiguration, logger: logger) { client in
            let store = EventStore(client: client, logger: logger)
            var head = try await store.head().position
            if head == 0 {
                try await seedCatalog(client: client)
                head = try await store.head().position
            }
            if head < Int64(options.events) {
                output("generating \(Int64(options.events) - head) events (head \(head)) …")
                let started = ContinuousClock.now
                let generated = try await generate(client: client, store: store, until: Int64(options.events), output: output)
                let seconds = Self.seconds(ContinuousClock.now - started)
                output(
                    String(
                        format: "generated %d events in %.0f s (%.0f events/s through ledger.append_events)",
                        generated,
                        seconds,
                        Double(generated) / seconds
                    )
                )
            }
            _ = try await withPostgresClient(hosts: database.ownerConfiguration, logger: logger) { owner in
                try await owner.query("ANALYZE ledger.events", logger: logger)
            }
            head = try await store.head().position
            let orders = try await orderCount(client)
            output("ledger: \(head) events, \(orders) orders; \(ProcessInfo.processInfo.activeProcessorCount) cores")

            // Sample orders, spread uniformly over the whole log.
            var rng = SystemRandomNumberGenerator()
            let sample = (0..<options.samples).map { _ in Self.orderID(Int.random(in: 0..<orders, using: &rng)) }
            try writeLua(sample)
            let state = StateHistory(client: client, logger: logger)
            // Warm up the connections and the caches once, then measure.
            for id in sample.prefix(50) { _ = try await store.orderHistory(id) }

            var history = Histogram<UInt64>(highestTrackableValue: 60_000_000)
            var points: [(String, Int64, Int64)] = []
            for id in sample {
                let t0 = ContinuousClock.now
                let events = try await store.orderHistory(id)
                let json = "{\"order_id\":\(EventJSON.quote(id)),\"events\":\(EventJSON.render(events))}"
                _ = history.record(Self.micros(ContinuousClock.now - t0))
                precondition(!json.isEmpty && !events.isEmpty)
                let mid = events[min(4, events.count - 1)]
                points.append((id, mid.position, mid.recordedAtMicros))
            }
            output(Self.line("GET /orders/{id}/history (queries + JSON, in process)", history) + ", \(sample.count) random orders")

            var byPosition = Histogram<UInt64>(highestTrackableValue: 60_000_000)
            var byTime = Histogram<UInt64>(highestTrackableValue: 60_000_000)
            for (id, position, micros) in points {
                var t0 = ContinuousClock.now
                let a = try await state.order(id, asOf: .position(position))
                _ = byPosition.record(Self.micros(ContinuousClock.now - t0))
                t0 = ContinuousClock.now
                let b = try await state.order(id, asOf: .time(micros: micros))
                _ = byTime.record(Self.micros(ContinuousClock.now - t0))
                precondition(a != nil && b != nil)
            }
            output(Self.line("GET /orders/{id}?as_of=<position> (fold + row, in process)", byPosition))
            output(Self.line("GET /orders/{id}?as_of=<time>     (fold + row, in process)", byTime))

            // The inventory as of points spread over the whole log (the issue's bound: ≤ 100 ms at 10M events).
            var inventory = Histogram<UInt64>(highestTrackableValue: 600_000_000)
            let steps = Int64(20)
            for step in 1...steps {
                let position = max(1, head * step / steps)
                let t0 = ContinuousClock.now
                _ = try await state.inventory(asOf: .position(position))
                _ = inventory.record(Self.micros(ContinuousClock.now - t0))
            }
            output(Self.line("GET /inventory?as_of=<position> (fold, in process)", inventory) + ", \(steps) points over the log")

            guard !options.skipVerify else { return }
            let verifier = ChainVerifier(client: client, logger: logger)
            var t0 = ContinuousClock.now
            var seconds = 0.0
            for parallelism in Set([1, options.verifyParallelism]).sorted() {
                t0 = ContinuousClock.now
                let swift = try await verifier.verify(parallelism: parallelism)
                seconds = Self.seconds(ContinuousClock.now - t0)
                output(
                    String(
                        format: "chain verification, Swift, %d connection(s): %@ in %.1f s = %.0f events/s",
                        parallelism,
                        swift.description,
                        seconds,
                        Double(swift.checked) / seconds
                    )
                )
            }
            t0 = ContinuousClock.now
            let sql = try await verifier.verifyInDatabase()
            seconds = Self.seconds(ContinuousClock.now - t0)
            output(
                String(
                    format: "chain verification, SQL (ledger.verify_chain): %@ in %.1f s = %.0f events/s",
                    sql.description,
                    seconds,
                    Double(sql.checked) / seconds
                )
            )
        }
    }

    // MARK: Generation

    func seedCatalog(client: DatabaseClient) async throws {
        let writer = LedgerWriter(client: client, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await writer.run() }
            defer { group.cancelAll() }
            _ = try await CatalogService(writer: writer, store: EventStore(client: client, logger: logger), logger: logger)
                .seedDemoCatalogIfEmpty(now: Date())
        }
    }

    /// The order id of the `i`th generated order (a UUID's shape, as the storefront's are).
    static func orderID(_ i: Int) -> String { String(format: "%08x-0000-4000-8000-%012x", i, i) }

    func orderCount(_ client: DatabaseClient) async throws -> Int {
        let rows = try await client.query("SELECT count(*) FROM ledger.events WHERE type = 'OrderOpened'", logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// One order's events as templates (`XORDERX` stands for the order id), per product.
    struct Templates {
        struct Event {
            let type: String
            let data: String
        }
        let open: [Event]  // StockReserved, OrderOpened, AuthorizationHoldPlaced, OrderAuthorized
        let capture: [Event]  // HoldCaptured, OrderPaymentUpdated
        let ship: [Event]  // OrderShipped, StockSold

        /// Orders authorized at `at`, their holds expiring 7 days later.
        init(product: DemoProduct, at: Date = Date(timeIntervalSince1970: 1_790_000_000)) throws {
            let id = OrderID("XORDERX")!
            let tax = TaxPolicy(rate: try Rate(decimal: "0.08"), rounding: .halfUp)
            let shipping = Money(minorUnits: 500, currency: .usd)
            let taxAmount = Money(minorUnits: product.price.minorUnits * 8 / 100, currency: .usd)
            let total = Money(minorUnits: product.price.minorUnits + 500 + taxAmount.minorUnits, currency: .usd)
            let zero = Money.zero(.usd)
            func t(_ event: DomainEvent) throws -> Event { Event(type: event.type, data: String(decoding: try event.encodedData(), as: UTF8.self)) }
            open = [
                try t(.product(.stockReserved(StockReserved(productID: product.id, orderID: id, quantity: 1)))),
                try t(
                    .order(
                        .opened(
                            OrderOpened(
                                orderID: id,
                                merchantReference: "XORDERX",
                                lines: [
                                    OrderLine(
                                        productID: product.id,
                                        name: product.name,
                                        unitPrice: product.price,
                                        quantity: 1,
                                        lineTotal: product.price
                                    )
                                ],
                                shipping: ShippingSelection(
                                    shippingMethodID: ShippingMethodID("standard")!,
                                    name: "Standard",
                                    transitDays: 4,
                                    price: shipping
                                ),
                                amounts: OrderAmounts(subtotal: product.price, shipping: shipping, tax: taxAmount, total: total, taxPolicy: tax),
                                contactRef: "contact-XORDERX",
                                openedAt: at
                            )
                        )
                    )
                ),
                try t(
                    .hold(
                        .placed(
                            AuthorizationHoldPlaced(
                                orderID: id,
                                merchantReference: "XORDERX",
                                pspReference: "psp-XORDERX",
                                authCode: "123456",
                                amount: total,
                                network: .visa,
                                fundingType: .credit,
                                lastFour: "4242",
                                expiresAt: at.addingTimeInterval(7 * 86_400),
                                authorizedAt: at
                            )
                        )
                    )
                ),
                try t(.order(.authorized(OrderAuthorized(orderID: id, pspReference: "psp-XORDERX", amount: total, authorizedAt: at)))),
            ]
            capture = [
                try t(
                    .hold(
                        .captured(
                            HoldCaptured(
                                orderID: id,
                                amount: total,
                                isFinal: true,
                                released: zero,
                                modificationReference: "XORDERX-capture",
                                pspModificationReference: "pspm-XORDERX",
                                capturedAt: at
                            )
                        )
                    )
                ),
                try t(.order(.paymentUpdated(OrderPaymentUpdated(orderID: id, operation: "capture", status: .captured)))),
            ]
            ship = [
                try t(.order(.shipped(OrderShipped(orderID: id, carrier: "UPS", tracking: "1Z-XORDERX", shippedAt: at, status: .shipped)))),
                try t(.product(.stockSold(StockSold(productID: product.id, orderID: id, quantity: 1)))),
            ]
        }
    }

    /// Appends steps until the head reaches `target`. Step `t` opens order `t`, captures order
    /// `t − 5,000` and ships order `t − 20,000`; a batch holds whole steps, so a run stopped half way
    /// resumes at the next step (the number of orders opened).
    func generate(
        client: DatabaseClient,
        store: EventStore,
        until target: Int64,
        authorizedAt: Date = Date(timeIntervalSince1970: 1_790_000_000),
        output: (String) -> Void
    ) async throws -> Int64 {
        let products = DemoCatalog.products
        let templates = try products.map { try Templates(product: $0, at: authorizedAt) }
        var productVersions: [Int64] = []
        for product in products {
            let rows = try await client.query(
                "SELECT coalesce(max(stream_version), 0) FROM ledger.events WHERE stream_id = \(product.id.streamID.rawValue)",
                logger: logger
            )
            var version: Int64 = 0
            for try await v in rows.decode(Int64.self) { version = v }
            productVersions.append(version)
        }
        var step = try await orderCount(client)
        let start = try await store.head().position
        var head = start
        let metadataPrefix = #"{"actor": "bench", "command": "BenchAudit", "correlation_id": ""#
        let effective = Date().epochMicroseconds
        var lastReport = head
        while head < target {
            var streams: [String] = []
            var versions: [Int64] = []
            var ids: [UUID] = []
            var types: [String] = []
            var data: [String] = []
            var metadata: [String] = []
            func add(_ stream: String, _ version: Int64, _ event: Templates.Event, _ order: String, _ correlation: String) {
                streams.append(stream)
                versions.append(version)
                ids.append(UUID.newRandom())
                types.append(event.type)
                data.append(event.data.replacingOccurrences(of: "XORDERX", with: order))
                metadata.append(metadataPrefix + correlation + "\"}")
            }
            while streams.count < options.batchEvents && head + Int64(streams.count) < target {
                let opened = step
                let id = Self.orderID(opened)
                let p = opened % products.count
                let correlation = "bench-\(opened)"
                let t = templates[p]
                productVersions[p] += 1
                add(products[p].id.streamID.rawValue, productVersions[p], t.open[0], id, correlation)
                add("order-\(id)", 1, t.open[1], id, correlation)
                add("hold-\(id)", 1, t.open[2], id, correlation)
                add("order-\(id)", 2, t.open[3], id, correlation)
                if opened >= Self.captureLag {
                    let i = opened - Self.captureLag
                    let cid = Self.orderID(i)
                    add("hold-\(cid)", 2, templates[i % products.count].capture[0], cid, "bench-capture-\(i)")
                    add("order-\(cid)", 3, templates[i % products.count].capture[1], cid, "bench-capture-\(i)")
                }
                if opened >= Self.shipLag {
                    let i = opened - Self.shipLag
                    let sid = Self.orderID(i)
                    let sp = i % products.count
                    add("order-\(sid)", 4, templates[sp].ship[0], sid, "bench-ship-\(i)")
                    productVersions[sp] += 1
                    add(products[sp].id.streamID.rawValue, productVersions[sp], templates[sp].ship[1], sid, "bench-ship-\(i)")
                }
                step += 1
            }
            let effectiveUs = [Int64](repeating: effective, count: streams.count)
            let schemaVersions = [Int32](repeating: 1, count: streams.count)
            try await client.query(
                """
                SELECT last_position FROM ledger.append_events(\(streams)::text[], \(versions)::bigint[], \(ids)::uuid[],
                    \(types)::text[], \(schemaVersions)::integer[], \(data)::text[], \(metadata)::text[], \(effectiveUs)::bigint[])
                """,
                logger: logger
            )
            head += Int64(streams.count)
            if head - lastReport >= 1_000_000 {
                output("  … \(head) events")
                lastReport = head
            }
        }
        return head - start
    }

    func writeLua(_ ids: [String]) throws {
        let lua = "return {\n" + ids.map { "  \"\($0)\"," }.joined(separator: "\n") + "\n}\n"
        try Data(lua.utf8).write(to: configuration.dataDirectoryURL.appendingPathComponent("orders.lua"))
    }

    // MARK: Reporting

    static func micros(_ duration: Duration) -> UInt64 {
        let (s, atto) = duration.components
        return UInt64(max(0, s * 1_000_000 + atto / 1_000_000_000_000))
    }

    static func seconds(_ duration: Duration) -> Double {
        let (s, atto) = duration.components
        return Double(s) + Double(atto) / 1e18
    }

    static func line(_ label: String, _ h: Histogram<UInt64>) -> String {
        func ms(_ micros: UInt64) -> String { String(format: "%.2f ms", Double(micros) / 1000) }
        return
            "\(label): p50 \(ms(h.valueAtPercentile(50))), p90 \(ms(h.valueAtPercentile(90))), p99 \(ms(h.valueAtPercentile(99))), max \(ms(h.max))"
    }
}
