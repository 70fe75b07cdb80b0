import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// As-of state against live state: a scripted day of payments, captures, voids, refunds,
/// shipments, a decline and an expiry, with every live answer recorded after each step; then each
/// is asked again as of that step's position and time. They must be equal.
@Suite(.machine(.shared)) struct AsOfTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    static let auditor: HTTPFields = [.authorization: "Bearer \(TestApp.auditorKey)"]

    /// Status and the part of the body that is the state (`order`, `authorization`, `product`, or the inventory array).
    struct Answer: Equatable, CustomStringConvertible {
        let status: Int
        let state: JSONValue?
        var description: String { "\(status) \(state.map(\.description) ?? "-")" }
    }

    func answer(_ client: any TestClientProtocol, _ uri: String) async throws -> (Answer, JSONValue?) {
        try await client.execute(uri: uri, method: .get, headers: Self.auditor) { response in
            let body = JSONValue.parse(String(buffer: response.body))
            let path = uri.split(separator: "?")[0]
            let key =
                path.hasPrefix("/orders/")
                ? "order"
                : path.hasPrefix("/authorizations/")
                    ? "authorization"
                    : path.hasPrefix("/products/") ? "product" : nil
            let state = response.status == .ok ? (key.map { body?[$0] } ?? body) : nil
            return (Answer(status: Int(response.status.code), state: state), body?["as_of"])
        }
    }

    struct Observation {
        let step: String
        let position: Int64
        let time: String
        let answers: [String: Answer]
    }

    func uris(_ orders: [String], _ batches: [String]) -> [String] {
        orders.flatMap { ["/orders/\($0)", "/authorizations/\($0)"] } + ["/products/clock", "/products/pen", "/inventory"]
            + batches.map { "/settlements/\($0)" }
    }

    func observe(
        _ step: String,
        _ client: any TestClientProtocol,
        _ services: ServiceContainer,
        _ orders: [String],
        batches: [String] = [],
        time: String? = nil
    ) async throws -> Observation {
        let head = try await services.store.head().position
        let recorded = try #require(try await services.store.event(at: head)).recordedAtMicros
        var answers: [String: Answer] = [:]
        for uri in uris(orders, batches) { answers[uri] = try await answer(client, uri).0 }
        return Observation(step: step, position: head, time: time ?? RFC3339.format(recorded), answers: answers)
    }

    /// Asks every recorded URI again as of the observation's position (unless `timeOnly`) and time.
    func compare(_ observation: Observation, _ client: any TestClientProtocol, timeOnly: Bool = false) async throws {
        for (uri, live) in observation.answers.sorted(by: { $0.key < $1.key }) {
            for point in timeOnly ? [observation.time] : [String(observation.position), observation.time] {
                let (asOf, where_) = try await answer(client, "\(uri)?as_of=\(point)")
                #expect(asOf == live, "\(observation.step): \(uri) as of \(point)\n live:  \(live)\n as of: \(asOf)")
                if asOf.status == 200 && uri != "/inventory" && !uri.hasPrefix("/settlements/") {
                    #expect(where_?["position"] == .int(observation.position), "\(observation.step): \(uri) as of \(point)")
                }
            }
        }
    }

    @Test func asOfAnswersEqualTheLiveAnswersAtEveryStepOfADay() async throws {
        // The application's business day is a Wednesday in 2030, ahead of the database's clock, so
        // that an as-of time taken from recorded_at is never in the application's future; payments,
        // expiry and the settlement cut-off go by the former.
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        try await TestApp.withApp(seed: true, acquirer: model, clock: { clock.now }) { client, services in
            var orders: [String] = []
            var batches: [String] = []
            var observations: [Observation] = []
            func step(_ name: String) async throws {
                observations.append(try await observe(name, client, services, orders, batches: batches))
            }
            func operate(_ id: String, _ operation: String, _ body: String = "{}") async throws {
                let (status, text) = try await backOffice.operate(client, id, operation, body)
                #expect(status == .ok, "\(operation) \(body): \(text)")
            }
            let catalogOnly = try await observe("catalog", client, services, [])
            observations.append(catalogOnly)

            orders.append(try await storefront.placeOrder(client))
            try await step("o1 paid")
            orders.append(try await storefront.placeOrder(client, product: "Pen", amount: 3200))
            try await step("o2 paid")
            try await operate(orders[0], "capture", #"{"amount": "20.00"}"#)
            try await step("o1 partly captured")
            let (declined, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_chargeDeclined"))
            #expect(declined.code == 402)
            orders.append(try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8)).orderId)
            try await step("o3 declined")
            try await operate(orders[1], "void", #"{"amount": "2.00"}"#)
            try await step("o2 partly voided")
            try await operate(orders[0], "ship", #"{"carrier": "UPS"}"#)
            try await step("o1 shipped")
            try await operate(orders[0], "refund", #"{"amount": "10.00", "reason": "scratched"}"#)
            try await step("o1 partly refunded")
            orders.append(try await storefront.placeOrder(client))
            try await step("o4 paid")
            try await operate(orders[3], "void")
            try await step("o4 voided")
            orders.append(try await storefront.placeOrder(client, product: "Pen", amount: 3200))
            try await operate(orders[4], "capture", #"{"amount": "5.00"}"#)
            try await step("o5 partly captured")
            orders.append(try await storefront.placeOrder(client))
            try await step("o6 paid")

            // The day's settlement after its cut-off: o1's captures and refund, o5's capture.
            clock.set(TestApp.instant("2030-06-19T22:00:01Z"))
            let settled = try await backOffice.settle(client, "2030-06-19")
            batches = settled.batches.map(\.batchId)
            #expect(batches.count == 1 && settled.batches.first?.captures == 3 && settled.batches.first?.refunds == 1, "\(settled)")
            try await step("settled")
            let o1History = try await client.execute(uri: "/orders/\(orders[0])/history", method: .get, headers: Self.auditor) {
                String(buffer: $0.body)
            }
            #expect(o1History.contains(#""type":"SettlementBatchClosed""#), "the settlement line is in the order's history")

            // Past the holds' expiry, before the sweeper: reads already show them lapsed. The time
            // is the application's (ahead of every later recorded_at), so it is compared at once.
            clock.advance(by: 8 * 86_400)
            let lapsed = try await observe(
                "lapsed, not swept",
                client,
                services,
                orders,
                batches: batches,
                time: RFC3339.format(clock.now.epochMicroseconds)
            )
            #expect(lapsed.answers["/orders/\(orders[1])"]?.state?["status"] == .string("expired"))
            #expect(lapsed.answers["/orders/\(orders[4])"]?.state?["status"] == .string("captured"))
            try await compare(lapsed, client, timeOnly: true)

            #expect(try await services.holds.expireDue() == 3)
            try await step("swept")
            orders.append(try await storefront.placeOrder(client))
            try await operate(orders[6], "capture", #"{"final": true}"#)
            try await operate(orders[6], "ship")
            try await step("o7 captured and shipped")
            try await operate(orders[6], "refund", #"{"amount": "59.00", "reason": "returned"}"#)
            try await step("o7 refunded")

            // Every step's live answers, asked again as of then.
            for observation in observations { try await compare(observation, client) }
            // The steps moved every status the day is about.
            let statuses = observations.flatMap { $0.answers.values.compactMap { $0.state?["status"] } }
            for status in [
                "authorized", "partially_captured", "declined", "voided", "shipped", "partially_refunded", "expired", "captured", "refunded",
            ] {
                #expect(statuses.contains(.string(status)), "no step showed \(status)")
            }
            // Before an order existed, it does not exist as of then.
            let (early, _) = try await answer(client, "/orders/\(orders[6])?as_of=\(catalogOnly.position)")
            #expect(early.status == 404)
            let (noBatchYet, _) = try await answer(client, "/settlements/\(batches[0])?as_of=\(catalogOnly.position)")
            #expect(noBatchYet.status == 404)
            let (beforeAll, _) = try await answer(client, "/products/clock?as_of=0")
            #expect(beforeAll.status == 404)
            #expect(try await answer(client, "/inventory?as_of=0").0 == Answer(status: 200, state: .array([])))
        }
    }

    /// The lapse is stated twice, on purpose: in SQL for the live reads (`ledger.order_rows_at`,
    /// `ledger.inventory_rows_at`, sql/0010) and in Swift for the as-of reads, which fold the log
    /// (`AggregateStates.lapsed(at:)`). A microsecond before a hold's expiry and at the expiry
    /// itself, both must give the same order status and the same stock.
    @Test func liveAndAsOfReadsAgreeOnALapsedHoldAtItsExpiryInstant() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        try await TestApp.withApp(seed: true, acquirer: model, clock: { clock.now }) { client, services in
            let authorized = try await storefront.placeOrder(client)  // one clock
            let partly = try await storefront.placeOrder(client, product: "Pen", amount: 3200)
            let (status, text) = try await backOffice.operate(client, partly, "capture", #"{"amount": "5.00"}"#)
            #expect(status == .ok, "\(text)")
            let expiresAt = try #require(try await backOffice.order(client, authorized).hold?.expires_at)
            let expiry = try #require(RFC3339.micros(expiresAt))
            #expect(try await backOffice.order(client, partly).hold?.expires_at == expiresAt, "both holds were authorized at once")

            let uris = ["/orders/\(authorized)", "/orders/\(partly)", "/products/clock", "/products/pen", "/inventory"]
            var live: [Int64: [String: Answer]] = [:]
            for micros in [expiry - 1, expiry] {
                clock.set(Date(epochMicroseconds: micros))
                for uri in uris {
                    let now = try await answer(client, uri).0
                    let asOf = try await answer(client, "\(uri)?as_of=\(RFC3339.format(micros))").0
                    #expect(now.status == 200 && asOf == now, "\(uri) at \(RFC3339.format(micros))\n live:  \(now)\n as of: \(asOf)")
                    live[micros, default: [:]][uri] = now
                }
            }
            // The answers agree because both lapsed the holds at the same instant, not because neither did.
            let before = try #require(live[expiry - 1])
            let after = try #require(live[expiry])
            #expect(before["/orders/\(authorized)"]?.state?["status"] == .string("authorized"))
            #expect(after["/orders/\(authorized)"]?.state?["status"] == .string("expired"))
            #expect(before["/orders/\(partly)"]?.state?["status"] == .string("partially_captured"))
            #expect(after["/orders/\(partly)"]?.state?["status"] == .string("captured"))
            guard case .int(let available)? = before["/products/clock"]?.state?["available"] else {
                Issue.record("no available stock in \(before["/products/clock"]?.description ?? "-")")
                return
            }
            #expect(after["/products/clock"]?.state?["available"] == .int(available + 1), "the lapsed order's clock is available again")
            #expect(before["/inventory"] != after["/inventory"])
            #expect(try await services.holds.expireDue() == 2, "nothing was swept before")
        }
    }

    @Test func badAsOfPointsAreRefusedAndTheInventoryHistoryNeedsAKey() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let head = try await services.store.head().position
            for (query, code) in [
                // A point the ledger has not reached is well formed: 422 `as_of_unavailable` (the document cannot say
                // where the head is), not a 400 (security review 4: positive data acceptance).
                ("abc", 400), ("-1", 400), ("\(head + 1)", 422), ("2999-01-01T00:00:00Z", 422),
                ("2026-13-01T00:00:00Z", 400), ("\(head)", 200), ("1", 404),
            ] {
                let (status, text) = try await client.execute(uri: "/orders/\(id)?as_of=\(query)", method: .get, headers: Self.auditor) {
                    (Int($0.status.code), String(buffer: $0.body))
                }
                #expect(status == code, "as_of=\(query): \(text)")
                if code == 400 || code == 422 { #expect(text.contains(#""field":"as_of""#), "\(text)") }
                if code == 422 { #expect(text.contains(#""as_of_unavailable""#), "\(text)") }
            }
            // The live inventory is open; its history is the back office's.
            try await client.execute(uri: "/inventory?as_of=\(head)", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/inventory?as_of=\(head)", method: .get, headers: Self.auditor) { response in
                #expect(response.status == .ok)
                #expect(response.headers[StateRoutes.asOfPositionHeader] == String(head))
            }
            try await client.execute(uri: "/authorizations/\(id)", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/products/no-such-product", method: .get, headers: Self.auditor) { #expect($0.status == .notFound) }
        }
    }
}
