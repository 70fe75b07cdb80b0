import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerCoreTestSupport
import LedgerHTTP
import LedgerPayments
import LedgerPaymentsTesting
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

/// `POST /payment` with `gateway: "applepay"` end to end: the real router and configuration loading (PEM
/// files named by LEDGERD_APPLEPAY_*), a real database, the acquirer model behind a recorder, tokens made by
/// the test PKI. The service's clock is fixed at the tokens' signing time.
@Suite(.machine(.shared)) struct ApplePayPaymentTests {
    let storefront = StorefrontDriver()

    static let dpan = "4895370012003478"
    static let cryptogram = "AgAAAAAAAIR8CQrXcIhbQAAAAAA="

    /// The decrypted payload for a Clock with Standard shipping: 50.00 + 5.00 + 4.00 tax = 59.00 USD.
    static func payload(amount: Int = 5900, currency: String = "840", type: String = "3DSecure") -> String {
        let paymentData =
            type == "EMV"
            ? #"{"emvData":"nwIBAZ8nAYA=","encryptedPINData":""}"#
            : #"{"onlinePaymentCryptogram":"\#(cryptogram)","eciIndicator":"05"}"#
        return """
            {"applicationPrimaryAccountNumber":"\(dpan)","applicationExpirationDate":"291130","currencyCode":"\(currency)",\
            "transactionAmount":\(amount),"deviceManufacturerIdentifier":"040010030273","paymentDataType":"\(type)",\
            "paymentData":\(paymentData)}
            """
    }

    static func spec(_ transaction: String = "txn-\(UUID())", amount: Int = 5900, currency: String = "840") -> TokenSpec {
        var spec = TokenSpec()
        spec.payloadJSON = payload(amount: amount, currency: currency)
        spec.transactionId = Array(transaction.utf8)
        return spec
    }

    /// A merchant (or several: rotation) and a PKI, written to PEM files, and the environment naming them.
    struct Fixture: Sendable {
        let pki: TestPKI
        let merchants: [TestMerchant]
        let environment: [String: String]
        var merchant: TestMerchant { merchants[0] }

        init(merchants: [TestMerchant]? = nil, pki: TestPKI? = nil) throws {
            self.pki = try pki ?? TestPKI()
            self.merchants = try merchants ?? [TestMerchant.ec()]
            // Under .build (like the test cluster): the test keys stay out of /tmp and out of git.
            let directory = TestCluster.repositoryRoot.appendingPathComponent(".build/test-applepay/\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var keys: [String] = []
            var certificates: [String] = []
            for (index, merchant) in self.merchants.enumerated() {
                let key = directory.appendingPathComponent("key-\(index).pem")
                let certificate = directory.appendingPathComponent("cert-\(index).pem")
                try merchant.privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)
                try merchant.certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
                keys.append(key.path)
                certificates.append(certificate.path)
            }
            let root = directory.appendingPathComponent("root.pem")
            try self.pki.rootPEM.write(to: root, atomically: true, encoding: .utf8)
            environment = [
                "LEDGERD_APPLEPAY_PRIVATE_KEYS": keys.joined(separator: ","),
                "LEDGERD_APPLEPAY_CERTIFICATES": certificates.joined(separator: ","),
                "LEDGERD_APPLEPAY_ROOT": root.path,
            ]
        }

        func token(_ spec: TokenSpec = ApplePayPaymentTests.spec(), merchant: TestMerchant? = nil, pki: TestPKI? = nil) throws -> ApplePayToken {
            try TokenFactory.make(pki: pki ?? self.pki, merchant: merchant ?? self.merchant, spec: spec)
        }
    }

    /// The request body with the token as a JSON object (or as base64 of its JSON).
    static func body(_ token: ApplePayToken, base64: Bool = false, applicationData: [UInt8]? = nil, amount: Int = 5900) throws -> Data {
        let json = try JSONEncoder().encode(token)
        var extra: [String: Any] = [
            "gateway": "applepay",
            "source": base64 ? json.base64EncodedString() : try JSONSerialization.jsonObject(with: json),
        ]
        if let applicationData { extra["application_data"] = Data(applicationData).base64EncodedString() }
        return StorefrontDriver.paymentBody(amount: amount, extra: extra)
    }

    static func body(source: Any) -> Data {
        StorefrontDriver.paymentBody(extra: ["gateway": "applepay", "source": source])
    }

    /// Runs `body` against an app configured with `fixture` (Apple Pay off when nil), clock at the signing time.
    func withApplePay(
        _ fixture: Fixture?,
        acquirer: RecordingAcquirer = RecordingAcquirer(),
        logger: Logger = TestCluster.logger,
        _ body: @escaping @Sendable (any TestClientProtocol, ServiceContainer) async throws -> Void
    ) async throws {
        try await TestApp.withApp(
            seed: true,
            acquirer: acquirer,
            clock: { testNow },
            environment: fixture?.environment ?? [:],
            logger: logger,
            body
        )
    }

    func events(_ services: ServiceContainer) async throws -> [RecordedEvent] {
        try await services.store.read(from: 1, limit: 100_000)
    }

    func errorBody(_ text: String) throws -> SystemRoutesTests.ErrorBody.Detail {
        try JSONDecoder().decode(SystemRoutesTests.ErrorBody.self, from: Data(text.utf8)).error
    }

    // MARK: Accepted tokens

    @Test(arguments: [false, true])
    func anApplePayTokenAuthorizesLikeACardWithTheNetworkToken(base64: Bool) async throws {
        let fixture = try Fixture()
        let acquirer = RecordingAcquirer()
        try await withApplePay(fixture, acquirer: acquirer) { client, services in
            let token = try fixture.token()
            let (status, text) = try await storefront.pay(client, Self.body(token, base64: base64))
            #expect(status == .ok, "\(text)")
            let reply = try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8))
            #expect(reply.status == .succeeded && reply.orderStatus == .authorized && reply.amount == 5900)

            // The acquirer got exactly the decrypted network token, for the order total.
            let requests = acquirer.requests.withLock { $0 }
            #expect(requests.count == 1)
            #expect(requests.first?.amount == Money(minorUnits: 5900, currency: .usd))
            #expect(
                requests.first?.paymentMethod
                    == .networkToken(
                        NetworkTokenData(
                            network: .visa,
                            tokenNumber: Self.dpan,
                            expiration: "291130",
                            cryptogram: Self.cryptogram,
                            eci: "05"
                        )
                    )
            )

            // The order, its stock, and the single-use marker went in one append.
            let log = try await events(services)
            let opened = try #require(log.first { $0.type == "OrderOpened" })
            let marker = try #require(log.first { $0.type == "ApplePayTokenAccepted" })
            #expect(marker.position == opened.position + 2)  // OrderOpened, StockReserved, marker: one append
            #expect(marker.streamID.rawValue.hasPrefix("applepay-") && marker.streamID.rawValue.count == "applepay-".count + 64)
            let accepted = try JSONDecoder().decode(ApplePayTokenAccepted.self, from: Data(marker.data.utf8))
            #expect(accepted.orderID.rawValue == reply.orderId)
            #expect(accepted.lastFour == "3478" && accepted.network == "visa" && accepted.paymentDataType == "3DSecure")
            #expect(accepted.transactionID == token.header.transactionId.lowercased())
            #expect(accepted.amount == Money(minorUnits: 5900, currency: .usd) && accepted.signedAt == testNow)
            #expect(log.filter { $0.type == "AuthorizationHoldPlaced" }.count == 1)
            let hold = try #require(log.first { $0.type == "AuthorizationHoldPlaced" })
            let holdData = try #require(try JSONSerialization.jsonObject(with: Data(hold.data.utf8)) as? [String: Any])
            #expect(holdData["last_four"] as? String == "3478" && holdData["network"] as? String == "visa")
            #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
        }
    }

    @Test func rsaTokensAndRotatedKeysAreAccepted() async throws {
        let old = try TestMerchant.ec()
        let new = try TestMerchant.ec()
        let rsa = try TestMerchant.rsa()
        let fixture = try Fixture(merchants: [new, old, rsa])
        try await withApplePay(fixture) { client, services in
            for merchant in [old, new, rsa] {
                let (status, text) = try await storefront.pay(client, Self.body(fixture.token(merchant: merchant)))
                #expect(status == .ok, "\(merchant.kind): \(text)")
            }
            #expect(try await events(services).filter { $0.type == "ApplePayTokenAccepted" }.count == 3)
        }
    }

    @Test func applicationDataThatMatchesTheTokenIsAccepted() async throws {
        let fixture = try Fixture()
        try await withApplePay(fixture) { client, _ in
            var spec = Self.spec()
            spec.applicationData = Array("cart 42".utf8)
            let (status, text) = try await storefront.pay(client, Self.body(fixture.token(spec), applicationData: Array("cart 42".utf8)))
            #expect(status == .ok, "\(text)")
        }
    }

    // MARK: Cardholder data

    @Test func cardholderDataNeverReachesTheLedgerOrTheLogs() async throws {
        let fixture = try Fixture()
        let logs = CapturedLogs()
        var logger = Logger(label: "ledger.tests.applepay") { _ in CapturingLogHandler(sink: logs) }
        logger.logLevel = .trace
        try await withApplePay(fixture, logger: logger) { client, services in
            let token = try fixture.token()
            #expect(try await storefront.pay(client, Self.body(token)).0 == .ok)
            // A replay, a stale token and an amount mismatch log and record refusals too.
            #expect(try await storefront.pay(client, Self.body(token)).0 == .conflict)
            var stale = Self.spec()
            stale.signingTime = testNow.addingTimeInterval(-3_600)
            #expect(try await storefront.pay(client, Self.body(fixture.token(stale))).0 == .unprocessableContent)
            #expect(try await storefront.pay(client, Self.body(fixture.token(Self.spec(amount: 100)))).0 == .unprocessableContent)

            // Every table of the ledger schema, every column, as text.
            var stored: [String] = []
            let tables = try await services.client.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'ledger' AND table_type = 'BASE TABLE'"
            )
            var names: [String] = []
            for try await name in tables.decode(String.self) { names.append(name) }
            #expect(names.contains("events") && names.contains("projection_rows"))
            for name in names {
                let rows = try await services.client.query(PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM ledger.\(name) t"))
                for try await row in rows.decode(String.self) { stored.append(row) }
            }
            let everything = stored.joined(separator: "\n") + logs.text
            #expect(!logs.text.isEmpty)
            for secret in [Self.dpan, Self.cryptogram, String(Self.dpan.prefix(12)), "291130"] {
                #expect(!everything.contains(secret), "\(secret) was stored or logged")
            }
            // What is kept instead: network, last four, transaction id, payment data type.
            #expect(stored.contains { $0.contains("3478") && $0.contains("3DSecure") })
        }
    }

    // MARK: Refusals

    /// A refused token: the reply's status, code and field, and whether the refusal is on record (only
    /// for tokens whose signature and chain verified).
    struct Refusal: Sendable, CustomStringConvertible {
        let name: String
        let status: Int
        let code: String
        let field: String
        let audited: Bool
        let request: @Sendable (Fixture) throws -> Data
        var description: String { name }
    }

    static func tampered(_ fixture: Fixture, _ change: (inout ApplePayToken) -> Void) throws -> Data {
        var token = try fixture.token()
        change(&token)
        return try body(token)
    }

    static func flipped(_ base64: String, at index: Int = 5) -> String {
        var bytes = Array(Data(base64Encoded: base64)!)
        bytes[index % bytes.count] ^= 0x01
        return Data(bytes).base64EncodedString()
    }

    static let refusals: [Refusal] = [
        Refusal(name: "tampered data", status: 422, code: "applepay_message_digest_mismatch", field: "source", audited: false) {
            try tampered($0) { $0.data = flipped($0.data) }
        },
        Refusal(name: "tampered header key", status: 422, code: "applepay_message_digest_mismatch", field: "source", audited: false) {
            try tampered($0) { $0.header.ephemeralPublicKey = flipped($0.header.ephemeralPublicKey!, at: 40) }
        },
        Refusal(name: "tampered transactionId", status: 422, code: "applepay_message_digest_mismatch", field: "source", audited: false) {
            try tampered($0) { $0.header.transactionId = "00" + $0.header.transactionId }
        },
        Refusal(name: "tampered signature", status: 422, code: "applepay_signature_invalid", field: "source", audited: false) {
            var custom = spec()
            custom.corruptSignatureValue = true
            return try body($0.token(custom))
        },
        Refusal(name: "signed by a foreign key", status: 422, code: "applepay_signature_invalid", field: "source", audited: false) {
            var custom = spec()
            custom.signWithForeignKey = true
            return try body($0.token(custom))
        },
        Refusal(name: "tampered publicKeyHash (not signed)", status: 422, code: "applepay_unknown_merchant_key", field: "source", audited: true) {
            try tampered($0) { $0.header.publicKeyHash = flipped($0.header.publicKeyHash) }
        },
        Refusal(name: "wrong merchant key", status: 422, code: "applepay_unknown_merchant_key", field: "source", audited: true) {
            try body($0.token(merchant: try TestMerchant.ec()))
        },
        Refusal(name: "missing leaf marker OID", status: 422, code: "applepay_missing_marker_oid", field: "source", audited: false) {
            var options = TestPKI.Options()
            options.leafMarker = false
            return try body($0.token(pki: try TestPKI(options)))
        },
        Refusal(name: "missing intermediate marker OID", status: 422, code: "applepay_missing_marker_oid", field: "source", audited: false) {
            var options = TestPKI.Options()
            options.intermediateMarker = false
            return try body($0.token(pki: try TestPKI(options)))
        },
        Refusal(name: "another CA", status: 422, code: "applepay_untrusted_chain", field: "source", audited: false) {
            try body($0.token(pki: try TestPKI()))
        },
        Refusal(name: "expired signing certificate", status: 422, code: "applepay_certificate_expired", field: "source", audited: false) {
            var options = TestPKI.Options()
            options.leafValidity = (TestPKI.date(2022), TestPKI.date(2025))
            return try body($0.token(pki: try TestPKI(options)))
        },
        Refusal(name: "stale signing time", status: 422, code: "applepay_signing_time_stale", field: "source", audited: true) {
            var custom = spec()
            custom.signingTime = testNow.addingTimeInterval(-301)
            return try body($0.token(custom))
        },
        Refusal(name: "future signing time", status: 422, code: "applepay_signing_time_in_future", field: "source", audited: true) {
            var custom = spec()
            custom.signingTime = testNow.addingTimeInterval(301)
            return try body($0.token(custom))
        },
        Refusal(name: "applicationData mismatch", status: 422, code: "applepay_application_data_mismatch", field: "application_data", audited: true) {
            var custom = spec()
            custom.applicationData = Array("cart 42".utf8)
            return try body($0.token(custom), applicationData: Array("cart 43".utf8))
        },
        Refusal(name: "applicationData missing", status: 422, code: "applepay_application_data_missing", field: "application_data", audited: true) {
            var custom = spec()
            custom.applicationData = Array("cart 42".utf8)
            return try body($0.token(custom))
        },
        Refusal(name: "amount mismatch", status: 422, code: "applepay_amount_mismatch", field: "source", audited: true) {
            try body($0.token(spec(amount: 5800)))
        },
        Refusal(name: "currency mismatch", status: 422, code: "applepay_currency_mismatch", field: "source", audited: true) {
            try body($0.token(spec(currency: "978")))
        },
        Refusal(name: "ciphertext altered before signing", status: 422, code: "applepay_decryption_failed", field: "source", audited: true) {
            var custom = spec()
            custom.corruptCiphertextBeforeSigning = true
            return try body($0.token(custom))
        },
        Refusal(name: "EMV payment data", status: 422, code: "applepay_unsupported_payment_data_type", field: "source", audited: true) {
            var custom = spec()
            custom.payloadJSON = payload(type: "EMV")
            return try body($0.token(custom))
        },
        Refusal(name: "unsupported version", status: 422, code: "applepay_unsupported_version", field: "source", audited: false) {
            try tampered($0) { $0.version = "EC_v2" }
        },
        Refusal(name: "malformed base64 source", status: 422, code: "applepay_malformed_token", field: "source", audited: false) { _ in
            body(source: "%%% not base64 %%%")
        },
        Refusal(name: "base64 of something other than JSON", status: 422, code: "applepay_malformed_token", field: "source", audited: false) { _ in
            body(source: Data("not json at all".utf8).base64EncodedString())
        },
        Refusal(name: "source of the wrong JSON type", status: 422, code: "applepay_malformed_token", field: "source", audited: false) { _ in
            body(source: [1, 2, 3])
        },
        Refusal(name: "token object missing fields", status: 422, code: "applepay_malformed_token", field: "source", audited: false) { _ in
            body(source: ["version": "EC_v1", "data": "AAAA"])
        },
        Refusal(name: "token field not base64", status: 422, code: "applepay_malformed_token", field: "source", audited: false) {
            try tampered($0) { $0.data = "***" }
        },
        Refusal(name: "signature not ASN.1", status: 422, code: "applepay_malformed_signature", field: "source", audited: false) {
            try tampered($0) { $0.signature = Data((0..<64).map { UInt8($0) }).base64EncodedString() }
        },
        Refusal(name: "signature truncated", status: 422, code: "applepay_malformed_signature", field: "source", audited: false) {
            try tampered($0) { $0.signature = Data(Data(base64Encoded: $0.signature)!.prefix(100)).base64EncodedString() }
        },
    ]

    @Test(arguments: refusals)
    func everyRefusalIsA4xxThatAppendsNothingButItsAuditEvent(refusal: Refusal) async throws {
        let fixture = try Fixture()
        let acquirer = RecordingAcquirer()
        try await withApplePay(fixture, acquirer: acquirer) { client, services in
            let before = try await events(services).count
            let (status, text) = try await storefront.pay(client, refusal.request(fixture))
            #expect(Int(status.code) == refusal.status, "\(text)")
            let error = try errorBody(text)
            #expect(error.code == refusal.code && error.field == refusal.field, "\(text)")
            let added = try await events(services).dropFirst(before)
            #expect(added.count == (refusal.audited ? 1 : 0), "\(added.map(\.type))")
            #expect(added.allSatisfy { $0.type == "ApplePayTokenRejected" && $0.streamID.rawValue.hasPrefix("applepay_rejected-") })
            if let audit = added.first {
                let rejected = try JSONDecoder().decode(ApplePayTokenRejected.self, from: Data(audit.data.utf8))
                #expect("applepay_" + rejected.reason == refusal.code && rejected.transactionID.count >= 2)
            }
            #expect(acquirer.requests.withLock { $0.isEmpty }, "nothing may be authorized")
            #expect(try await services.shippingContactCount() == 0, "no shipping contact may be left behind")
            #expect(try await storefront.clockRow(client).reserved == 0)
        }
    }

    @Test func aRefusedGenuineTokenIsRecordedOnce() async throws {
        let fixture = try Fixture()
        try await withApplePay(fixture) { client, services in
            let wrongAmount = try Self.body(fixture.token(Self.spec(amount: 5800)))
            for _ in 0..<3 { #expect(try await storefront.pay(client, wrongAmount).0 == .unprocessableContent) }
            #expect(try await events(services).filter { $0.type == "ApplePayTokenRejected" }.count == 1)
            // Every refusal is counted, recorded or not.
            let tampered = try Self.tampered(fixture) { $0.data = Self.flipped($0.data) }
            #expect(try await storefront.pay(client, tampered).0 == .unprocessableContent)
            #expect(try await storefront.pay(client, Self.body(fixture.token())).0 == .ok)
            let metrics = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(TestApp.auditorKey)"]) {
                String(buffer: $0.body)
            }
            #expect(metrics.contains(#"applepay_token_rejections_total{reason="amount_mismatch"} 3"#), "\(metrics)")
            #expect(metrics.contains(#"applepay_token_rejections_total{reason="message_digest_mismatch"} 1"#))
            #expect(metrics.contains("applepay_tokens_accepted_total 1"))
        }
    }

    @Test func applePayIsRefusedWhenNotConfigured() async throws {
        let fixture = try Fixture()
        try await withApplePay(nil) { client, services in
            let before = try await events(services).count
            let (status, text) = try await storefront.pay(client, Self.body(fixture.token()))
            #expect(status == .unprocessableContent)
            #expect(try errorBody(text).code == "applepay_not_configured" && errorBody(text).field == "gateway")
            #expect(try await events(services).count == before)
        }
    }

    // MARK: Replays

    @Test func aReplayedTransactionIsRefusedBeforeAnyAuthorization() async throws {
        let fixture = try Fixture()
        let acquirer = RecordingAcquirer()
        try await withApplePay(fixture, acquirer: acquirer) { client, services in
            let spec = Self.spec("the one transaction")
            #expect(try await storefront.pay(client, Self.body(fixture.token(spec))).0 == .ok)
            let before = try await events(services).count
            // The same token, and a different genuine token with the same transaction id.
            for body in [try Self.body(fixture.token(spec)), try Self.body(fixture.token(spec), base64: true)] {
                let (status, text) = try await storefront.pay(client, body)
                #expect(status == .conflict, "\(text)")
                #expect(try errorBody(text).code == "applepay_replayed_transaction" && errorBody(text).field == "source")
            }
            let added = try await events(services).dropFirst(before)
            #expect(added.map(\.type) == ["ApplePayTokenRejected"])
            #expect(acquirer.requests.withLock { $0.count } == 1)
            #expect(try await storefront.clockRow(client).reserved == 1)
        }
    }

    @Test func concurrentUsesOfOneTokenOpenOneOrder() async throws {
        let fixture = try Fixture()
        let acquirer = RecordingAcquirer()
        try await withApplePay(fixture, acquirer: acquirer) { client, services in
            let body = try Self.body(fixture.token())
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<8 { group.addTask { try await storefront.pay(client, body).0 } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1)
            #expect(statuses.filter { $0 == .conflict }.count == 7)
            let log = try await events(services)
            #expect(log.filter { $0.type == "OrderOpened" }.count == 1)
            #expect(log.filter { $0.type == "ApplePayTokenAccepted" }.count == 1)
            #expect(log.filter { $0.type == "ApplePayTokenRejected" }.count == 1)
            #expect(acquirer.requests.withLock { $0.count } == 1)
            #expect(try await storefront.clockRow(client).reserved == 1)
        }
    }

    @Test func aRetryWithTheIdempotencyKeyAnswersLikeTheFirstButAnotherKeyIsAReplay() async throws {
        let fixture = try Fixture()
        let acquirer = RecordingAcquirer()
        try await withApplePay(fixture, acquirer: acquirer) { client, services in
            let body = try Self.body(fixture.token())
            let first = try await storefront.pay(client, body, key: "checkout-7")
            let retry = try await storefront.pay(client, body, key: "checkout-7")
            #expect(first.0 == .ok && retry.0 == .ok && first.1 == retry.1)
            let other = try await storefront.pay(client, body, key: "checkout-8")
            #expect(other.0 == .conflict && other.1.contains("applepay_replayed_transaction"))
            #expect(acquirer.requests.withLock { $0.count } == 1)
            #expect(try await events(services).filter { $0.type == "OrderOpened" }.count == 1)
        }
    }

    // MARK: Fuzz

    /// Random bytes and random single-character mutations of a valid token through `POST /payment`: always a
    /// 4xx with an `applepay_` code (never a crash or a 5xx), never an order, at most one audit event per token.
    @Test(.seeded(by: "LEDGER_FUZZ_SEED")) func fuzzedTokensAreRefusedCleanly() async throws {
        let fixture = try Fixture()
        let seed = PropertySeed.current
        var generator = SeededRandom(seed: seed)
        let token = try fixture.token()
        let json = Array(try JSONEncoder().encode(token))
        var bodies: [Data] = []
        for _ in 0..<60 {
            var mutated = json
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<mutated.count, using: &generator)
                mutated[index] = UInt8.random(in: 0x20...0x7E, using: &generator)
            }
            bodies.append(Self.body(source: Data(mutated).base64EncodedString()))
        }
        for _ in 0..<20 {
            let noise = (0..<Int.random(in: 0...600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bodies.append(Self.body(source: Data(noise).base64EncodedString()))
        }
        let acquirer = RecordingAcquirer()
        let fuzzed = bodies
        try await withApplePay(fixture, acquirer: acquirer) { client, services in
            for body in fuzzed {
                let (status, text) = try await storefront.pay(client, body)
                // A mutation that leaves the token valid (e.g. in JSON whitespace or a key order) may pay once.
                if status == .ok { continue }
                #expect((400..<500).contains(status.code), "seed \(seed): \(text)")
                #expect((try? errorBody(text).code.hasPrefix("applepay_")) == true, "seed \(seed): \(text)")
            }
            let log = try await events(services)
            #expect(log.filter { $0.type == "OrderOpened" }.count <= 1, "seed \(seed)")
            #expect(log.filter { $0.type == "ApplePayTokenRejected" }.count <= 1, "seed \(seed)")
            #expect(acquirer.requests.withLock { $0.count } <= 1, "seed \(seed)")
        }
    }
}

/// The acquirer model behind a recorder of every authorization request it receives.
final class RecordingAcquirer: AcquirerModelWrapper, Sendable {
    let model = AcquirerModel(seed: 11, clock: { testNow })
    let requests = Mutex<[AuthorizationRequest]>([])

    func authorize(_ request: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse {
        requests.withLock { $0.append(request) }
        return try await model.authorize(request)
    }
}

/// Every log line, as text.
final class CapturedLogs: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

struct CapturingLogHandler: LogHandler {
    let sink: CapturedLogs
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        sink.append("\(event.level) \(event.message) \(merged) \(event.error.map { String(reflecting: $0) } ?? "")")
    }
}
