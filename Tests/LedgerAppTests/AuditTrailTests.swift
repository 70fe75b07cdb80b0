import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

/// An order's history and the filtered feed through the real router; signed checkpoints; privacy
/// erasure.
@Suite(.machine(.shared)) struct AuditTrailTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    static let auditor: HTTPFields = [.authorization: "Bearer \(TestApp.auditorKey)"]
    static let operatorKey: HTTPFields = [.authorization: "Bearer \(TestApp.operatorKey)"]

    struct Feed: Decodable {
        struct Event: Decodable {
            let position: Int64
            let stream: String
            let version: Int64
            let type: String
            let data: JSONValue
            let metadata: JSONValue
            let effective_at, recorded_at, prev_hash, hash: String
        }
        let events: [Event]
        let next_after: Int64?
    }

    func get(_ client: any TestClientProtocol, _ uri: String, headers: HTTPFields = auditor) async throws -> (Int, String) {
        try await client.execute(uri: uri, method: .get, headers: headers) { (Int($0.status.code), String(buffer: $0.body)) }
    }

    func feed(_ text: String) throws -> Feed { try JSONDecoder().decode(Feed.self, from: Data(text.utf8)) }

    @Test func anOrdersHistoryMergesItsStreamsAndStockInPositionOrder() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let other = try await storefront.placeOrder(client)
            _ = try await backOffice.capture(client, id, #"{"amount": "20.00"}"#)
            _ = try await backOffice.void(client, other)
            _ = try await backOffice.ship(client, id)
            _ = try await backOffice.refund(client, id, #"{"amount": "5.00", "reason": "dent"}"#)
            let (status, text) = try await backOffice.history(client, id)
            #expect(status == 200, "\(text)")
            let history = try feed(text)
            #expect(
                history.events.map(\.type).sorted()
                    == [
                        "StockReserved", "OrderOpened", "AuthorizationHoldPlaced", "OrderAuthorized", "HoldCaptured", "OrderPaymentUpdated",
                        "HoldCaptured", "OrderShipped", "StockSold", "HoldRefunded", "OrderPaymentUpdated",
                    ].sorted()
            )
            #expect(history.events.map(\.position) == history.events.map(\.position).sorted())
            #expect(Set(history.events.map(\.stream)) == ["order-\(id)", "hold-\(id)", "product-clock"])
            // Exactly the log's events that name the order, as stored.
            let all = try await services.store.read(from: 1, limit: 10_000)
            let expected = all.filter {
                (try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any])?["order_id"] as? String == id
            }
            #expect(history.events.map(\.position) == expected.map(\.position))
            #expect(history.events.map(\.hash) == expected.map { Hex.encode($0.hash) })
            #expect(try await get(client, "/orders/nope/history").0 == 404)
            #expect(try await get(client, "/orders/\(id)/history", headers: [:]).0 == 401)
            let order = try await backOffice.order(client, id)
            #expect(order.status == "partially_refunded")
        }
    }

    @Test func theFeedFiltersAndPagesEveryMatchOnce() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            var ids: [String] = []
            for _ in 0..<4 { ids.append(try await storefront.placeOrder(client)) }
            _ = try await backOffice.capture(client, ids[1], #"{"amount": "1.00"}"#)
            let all = try await services.store.read(from: 1, limit: 10_000)
            func correlation(_ e: RecordedEvent) -> String? {
                (try? JSONDecoder().decode(EventMetadata.self, from: Data(e.metadata.utf8)))?.correlationID
            }
            let someCorrelation = try #require(all.compactMap(correlation).last)
            let mid = all[all.count - 8].recordedAtMicros  // inside the orders (the catalog is one append, one time)
            let cases: [(String, EventFilter)] = [
                ("type=OrderOpened", EventFilter(types: ["OrderOpened"])),
                ("type=HoldCaptured,StockReserved", EventFilter(types: ["HoldCaptured", "StockReserved"])),
                ("stream_prefix=hold-", EventFilter(streamPrefix: "hold-")),
                ("stream_prefix=product-clock", EventFilter(streamPrefix: "product-clock")),
                ("from=\(RFC3339.format(mid))", EventFilter(fromMicros: mid)),
                ("to=\(RFC3339.format(mid))", EventFilter(toMicros: mid)),
                ("correlation_id=\(someCorrelation)", EventFilter(correlationID: someCorrelation)),
                (
                    "type=StockReserved&from=\(RFC3339.format(mid))&stream_prefix=product-",
                    EventFilter(types: ["StockReserved"], streamPrefix: "product-", fromMicros: mid)
                ),
            ]
            for (query, filter) in cases {
                let expected = all.filter { filter.matches($0, correlationID: correlation($0)) }.map(\.position)
                #expect(!expected.isEmpty, "\(query) matches nothing: a weak case (\(all.count) events, mid \(RFC3339.format(mid)))")
                for limit in [1, 3, 1_000] {
                    var after: Int64 = 0
                    var seen: [Int64] = []
                    while true {
                        let (status, text) = try await get(client, "/events?\(query)&limit=\(limit)&after=\(after)")
                        #expect(status == 200, "\(query): \(text)")
                        let page = try feed(text)
                        seen += page.events.map(\.position)
                        guard let next = page.next_after else { break }
                        after = next
                    }
                    #expect(seen == expected, "\(query) limit \(limit)")
                }
            }
            for (query, field) in [
                ("type=", "type"), ("from=yesterday", "from"), ("to=2026-02-30T00:00:00Z", "to"),
                ("stream_prefix=", "stream_prefix"), ("colour=red", "colour"), ("limit=0", "limit"),
            ] {
                let (status, text) = try await get(client, "/events?\(query)")
                #expect(status == 400 && text.contains(#""field":"\#(field)""#), "\(query): \(text)")
            }
        }
    }

    /// Runs SQL as the superuser with triggers off, as a malicious DBA would.
    @Test func signedCheckpointsProveThePrefixAndCatchATruncatedTail() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-cp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = CheckpointKey.generate()
        let stranger = CheckpointKey.generate()
        let publicKey = directory.appendingPathComponent("checkpoint.pub")
        let strangerKey = directory.appendingPathComponent("stranger.pub")
        try Data(key.publicKeyPEM.utf8).write(to: publicKey)
        try Data(stranger.publicKeyPEM.utf8).write(to: strangerKey)
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(
            seed: true,
            database: db,
            environment: ["LEDGERD_DATA_DIR": directory.path],
            checkpointKey: key
        ) { client, services in
            _ = try await storefront.placeOrder(client)
            var headers = Self.operatorKey
            headers[.contentType] = "application/json"
            let refused = try await client.execute(uri: "/audit/checkpoints", method: .post, headers: Self.auditor) { $0.status }
            #expect(refused == .forbidden)
            let (status, text) = try await client.execute(uri: "/audit/checkpoints", method: .post, headers: headers) {
                (Int($0.status.code), String(buffer: $0.body))
            }
            #expect(status == 201, "\(text)")
            let signed = try JSONDecoder().decode(CheckpointFile.self, from: Data(text.utf8)).checkpoint
            let head = try await services.store.head().position
            #expect(signed.position == head - 1)  // the CheckpointSigned event came after the prefix it signs
            let stored = try #require(try await services.store.event(at: signed.position))
            #expect(signed.hash == Hex.encode(stored.hash) && signed.publicKey == key.publicKeyHex)
            let file = directory.appendingPathComponent("checkpoints/checkpoint-\(String(format: "%012d", signed.position)).json")
            #expect(try JSONDecoder().decode(CheckpointFile.self, from: Data(contentsOf: file)).checkpoint == signed)
            let (listed, list) = try await get(client, "/audit/checkpoints")
            struct Checkpoints: Decodable { let checkpoints: [Feed.Event] }
            let listedTypes = try JSONDecoder().decode(Checkpoints.self, from: Data(list.utf8)).checkpoints.map(\.type)
            #expect(listed == 200 && listedTypes == ["CheckpointSigned"], "\(list)")

            // More business after the checkpoint; everything verifies.
            for _ in 0..<2 { _ = try await storefront.placeOrder(client) }
            func verify(_ keyFile: URL = publicKey, _ checkpointFile: URL = file) async throws -> CheckpointVerification.Outcome {
                try await db.withApp { client in
                    try await CheckpointVerification.run(
                        client: client,
                        checkpointFile: checkpointFile.path,
                        publicKeyFile: keyFile.path,
                        sql: true,
                        logger: TestCluster.logger
                    )
                }
            }
            var outcome = try await verify()
            #expect(outcome.ok, "\(outcome.lines)")

            // Not the auditor's key, or an edited checkpoint: the checkpoint proves nothing.
            #expect(try await verify(strangerKey).ok == false)
            var edited = signed
            edited.position -= 1
            let editedFile = directory.appendingPathComponent("edited.json")
            try Data(try CheckpointService.fileJSON(edited).utf8).write(to: editedFile)
            outcome = try await verify(publicKey, editedFile)
            #expect(!outcome.ok && outcome.lines.first?.contains("INVALID") == true, "\(outcome.lines)")

            // A superuser removes the tail back into the signed prefix and moves the head to match:
            // the chain alone still verifies; the checkpoint names the first missing position.
            let cut = signed.position - 3
            try await db.tamper(
                """
                DELETE FROM ledger.events WHERE position > \(cut);
                UPDATE ledger.head SET position = \(cut), hash = (SELECT hash FROM ledger.events WHERE position = \(cut))
                """
            )
            #expect(try await services.verifier.verify().ok)
            #expect(try await services.verifier.verifyInDatabase().ok)
            outcome = try await verify()
            #expect(!outcome.ok, "\(outcome.lines)")
            #expect(
                outcome.lines.contains { $0.hasPrefix("swift verifier") && $0.contains("chain broken at position \(cut + 1)") },
                "\(outcome.lines)"
            )
            #expect(outcome.lines.contains { $0.hasPrefix("sql verifier") && $0.contains("chain broken at position \(cut + 1)") }, "\(outcome.lines)")
        }
        // Without a key the endpoint says so, and appends nothing.
        try await TestApp.withApp(seed: true) { client, services in
            let before = try await services.store.head().position
            let (status, text) = try await client.execute(uri: "/audit/checkpoints", method: .post, headers: Self.operatorKey) {
                (Int($0.status.code), String(buffer: $0.body))
            }
            #expect(status == 409 && text.contains("checkpoint_key_missing"), "\(text)")
            #expect(try await services.store.head().position == before)
        }
    }

    @Test func theDailyCheckpointFallsAtTheCloseInItsTimeZone() throws {
        let utc = TimeZone(identifier: "UTC")!
        let newYork = TimeZone(identifier: "America/New_York")!
        func at(_ text: String) -> Date { Date(epochMicroseconds: RFC3339.micros(text)!) }
        #expect(CheckpointScheduler.next(after: at("2026-11-21T12:00:00Z"), hour: 23, minute: 59, timeZone: utc) == at("2026-11-21T23:59:00Z"))
        #expect(CheckpointScheduler.next(after: at("2026-11-21T23:59:00Z"), hour: 23, minute: 59, timeZone: utc) == at("2026-11-22T23:59:00Z"))
        // 23:59 in New York: UTC−5 in winter, UTC−4 in summer (the day after the switch is 24 h after the close).
        #expect(CheckpointScheduler.next(after: at("2026-11-21T12:00:00Z"), hour: 23, minute: 59, timeZone: newYork) == at("2026-11-22T04:59:00Z"))
        #expect(CheckpointScheduler.next(after: at("2026-03-08T12:00:00Z"), hour: 23, minute: 59, timeZone: newYork) == at("2026-03-09T03:59:00Z"))
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_CHECKPOINT_TIME": "25:00"]) }
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_CHECKPOINT_TIME_ZONE": "Mars/Olympus"]) }
        let configured = try LedgerConfiguration.load(environment: [
            "LEDGERD_CHECKPOINT_TIME": "17:30", "LEDGERD_CHECKPOINT_TIME_ZONE": "Europe/Paris",
        ])
        #expect(configured.checkpointTime == (17, 30) && configured.checkpointTimeZone.identifier == "Europe/Paris")
    }

    @Test func keyFilesInEveryDocumentedFormReadTheSameKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = CheckpointKey.generate()
        let pem = directory.appendingPathComponent("k.pem")
        // A private key file is a secret file: 0600 (one others can read is refused, below).
        try SecretFile.write(Data(key.privateKeyPEM.utf8), to: pem)
        let fromPEM = try CheckpointKey(contentsOf: pem.path)
        #expect(fromPEM.publicKeyHex == key.publicKeyHex)
        // A PEM written by OpenSSL for RFC 8032's first test key (its seed 9d61…7f60, its public key d75a…511a).
        let openssl = directory.appendingPathComponent("openssl.pem")
        try SecretFile.write(
            Data(
                """
                -----BEGIN PRIVATE KEY-----
                MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g
                -----END PRIVATE KEY-----

                """.utf8
            ),
            to: openssl
        )
        #expect(try CheckpointKey(contentsOf: openssl.path).publicKeyHex == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let hex = directory.appendingPathComponent("k.hex")
        try Data("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\n".utf8).write(to: hex)
        #expect(try CheckpointPublicKey(contentsOf: hex.path).hex == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let pub = directory.appendingPathComponent("k.pub")
        try Data(key.publicKeyPEM.utf8).write(to: pub)
        #expect(try CheckpointPublicKey(contentsOf: pub.path).hex == key.publicKeyHex)
        let junk = directory.appendingPathComponent("junk")
        try SecretFile.write(Data("not a key".utf8), to: junk)
        #expect(throws: ConfigurationError.self) { try CheckpointKey(contentsOf: junk.path) }
        // The same good key, readable by others: refused.
        let open = directory.appendingPathComponent("open.pem")
        try Data(key.privateKeyPEM.utf8).write(to: open)
        #expect(chmod(open.path, 0o644) == 0)
        #expect(throws: ConfigurationError.self) { try CheckpointKey(contentsOf: open.path) }
        #expect(throws: ConfigurationError.self) { try CheckpointKey(contentsOf: directory.appendingPathComponent("missing").path) }
    }

    @Test func anErasedContactReadsAsErasedAndTheMoneyHistoryStaysIntact() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let kept = try await storefront.placeOrder(client, product: "Pen", amount: 3200)
            _ = try await backOffice.capture(client, id, #"{"amount": "59.00"}"#)
            let (shown, contact) = try await get(client, "/orders/\(id)/contact", headers: Self.operatorKey)
            #expect(shown == 200 && contact.contains("Appleseed") && contact.contains("jane@example.com"), "\(contact)")
            // Review 4 (informational): personal data is never kept by a cache.
            let cacheControl = try await client.execute(uri: "/orders/\(id)/contact", method: .get, headers: Self.operatorKey) {
                $0.headers[.cacheControl]
            }
            #expect(cacheControl == "no-store")
            #expect(try await get(client, "/orders/\(id)/contact").0 == 403)  // auditors see no personal data
            let before = try await services.store.read(from: 1, limit: 10_000)
            let orderBefore = try await get(client, "/orders/\(id)").1

            func erase(_ body: String) async throws -> (Int, String) {
                var headers = Self.operatorKey
                headers[.contentType] = "application/json"
                return try await client.execute(uri: "/privacy/erasures", method: .post, headers: headers, body: ByteBuffer(string: body)) {
                    (Int($0.status.code), String(buffer: $0.body))
                }
            }
            for (body, code) in [("{}", 422), (#"{"customer": "x", "why": "y"}"#, 400), ("nope", 400), (#"{"customer": 5}"#, 422)] {
                let (status, text) = try await erase(body)
                #expect(status == code, "\(body): \(text)")
                #expect(try await services.store.head().position == before.last!.position)
            }
            // Both orders used jane@example.com: one request erases both contacts.
            let (status, text) = try await erase(#"{"customer": "JANE@example.com"}"#)
            #expect(status == 200, "\(text)")
            #expect(text.contains(id) && text.contains(kept), "\(text)")
            #expect(try await services.shippingContactCount() == 0)
            let (gone, reply) = try await get(client, "/orders/\(id)/contact", headers: Self.operatorKey)
            #expect(gone == 410 && reply.contains("contact_erased"), "\(reply)")
            #expect(try await erase(#"{"customer": "jane@example.com"}"#).0 == 404)

            // The log: the same events as before, two erasures after them, nothing personal, the chain intact.
            let after = try await services.store.read(from: 1, limit: 10_000)
            #expect(Array(after.prefix(before.count)) == before)
            #expect(after.dropFirst(before.count).map(\.type) == ["ContactErased", "ContactErased"])
            #expect(!after.map { $0.data + $0.metadata }.joined().contains("jane"))
            let swiftChain = try await services.verifier.verify()
            let sqlChain = try await services.verifier.verifyInDatabase()
            #expect(swiftChain.ok && sqlChain == swiftChain)
            // The money: the order reads as before; its history shows the erasure.
            #expect(JSONValue.sameObject(try await get(client, "/orders/\(id)").1, orderBefore))
            let history = try feed(try await get(client, "/orders/\(id)/history").1)
            #expect(history.events.last?.type == "ContactErased")
            #expect(history.events.filter { $0.type == "HoldCaptured" }.count == 1)
        }
    }
}
