import Foundation
import LedgerApp
import LedgerCoreTestSupport
import LedgerPayments
import LedgerPaymentsTesting
import LedgerServices
import LedgerTestSupport
import Testing

/// `ledgerd applepay inspect | check-config` and `ledgerd-applepay-bench` as processes, and the
/// LEDGERD_APPLEPAY_* configuration they and the daemon load.
@Suite(.machine(.shared)) struct ApplePayCommandTests {
    /// The Apple Pay vectors in the repository, `Tests/Vectors/applepay`.
    static var vectors: URL {
        get throws {
            let directory = TestVectors.applePay
            guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("README.md").path) else {
                throw FactoryError("\(directory.path) not found")
            }
            return directory
        }
    }

    /// Runs `ledgerd` with `environment` added and returns its status and combined output.
    func ledgerd(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LEDGERD_") }
        environment.merge(extra) { $1 }
        return try await DaemonProcess.run(arguments, environment: environment)
    }

    func inspectPayU(_ extra: [String]) async throws -> (status: Int32, output: String) {
        let vectors = try Self.vectors
        return try await ledgerd(
            [
                "applepay", "inspect", "--token", vectors.appendingPathComponent("payu-ec-v1/token.json").path,
                "--private-key", vectors.appendingPathComponent("payu-ec-v1/private_key.pem").path,
                "--root", vectors.appendingPathComponent("AppleRootCA-G3.pem").path,
            ] + extra
        )
    }

    struct Inspected: Decodable {
        let last4, currencyCode, paymentDataType, transactionId, expirationDate: String
        let transactionAmount: Int
        let network: String?
    }

    struct Refused: Decodable {
        struct Detail: Decodable { let code, message: String }
        let error: Detail
    }

    @Test func inspectDecryptsThePayUVectorAtItsSigningTimeWithThePANMasked() async throws {
        let (status, output) = try await inspectPayU(["--merchant-id", "merchant.sandbox.payu", "--at", "2018-01-26T13:55:18Z"])
        #expect(status == 0, "\(output)")
        let inspected = try JSONDecoder().decode(Inspected.self, from: Data(output.utf8))
        #expect(inspected.last4 == "0010" && inspected.currencyCode == "643" && inspected.transactionAmount == 100_000)
        #expect(inspected.paymentDataType == "3DSecure" && inspected.expirationDate == "190731" && inspected.network == "mastercard")
        #expect(!output.contains("5204242750270010") && !output.contains("520424") && !output.contains("AOm+7lPDSbobAGVT7hmNAoABFA=="))
        // The bundled Apple root is the default.
        let vectors = try Self.vectors
        let bundled = try await ledgerd([
            "applepay", "inspect", "--token", vectors.appendingPathComponent("payu-ec-v1/token.json").path,
            "--private-key", vectors.appendingPathComponent("payu-ec-v1/private_key.pem").path,
            "--merchant-id", "merchant.sandbox.payu", "--at", "2018-01-26T13:57:00Z",
        ])
        #expect(bundled.status == 0, "\(bundled.output)")
    }

    @Test(arguments: [
        ([] as [String], "certificate_expired"),
        (["--at", "2018-01-26T14:05:00Z"], "signing_time_stale"),
        (["--at", "2018-01-26T13:45:00Z"], "signing_time_in_future"),
        (["--at", "2018-01-26T13:55:18Z", "--max-signature-age", "1", "--application-data", "b3JkZXIgNDI="], "application_data_missing"),
    ])
    func inspectNamesThePreciseReasonAndExitsNonZero(extra: [String], code: String) async throws {
        let (status, output) = try await inspectPayU(["--merchant-id", "merchant.sandbox.payu"] + extra)
        #expect(status == 1, "\(output)")
        let refused = try JSONDecoder().decode(Refused.self, from: Data(output.utf8))
        #expect(refused.error.code == code, "\(output)")
        #expect(!output.contains("5204242750270010"))
    }

    @Test func inspectWithTheWrongMerchantIdentifierCannotDecrypt() async throws {
        let (status, output) = try await inspectPayU(["--merchant-id", "merchant.sandbox.other", "--at", "2018-01-26T13:55:18Z"])
        #expect(status == 1)
        #expect(try JSONDecoder().decode(Refused.self, from: Data(output.utf8)).error.code == "decryption_failed", "\(output)")
    }

    @Test func inspectRefusesUnusableArguments() async throws {
        let vectors = try Self.vectors
        let missing = try await ledgerd([
            "applepay", "inspect", "--token", "/nonexistent/token.json", "--merchant-id", "m",
            "--private-key", vectors.appendingPathComponent("payu-ec-v1/private_key.pem").path,
        ])
        #expect(missing.status == 1 && missing.output.contains("unreadable_file"), "\(missing.output)")
        let noIdentity = try await inspectPayU([])
        #expect(noIdentity.status != 0 && noIdentity.output.contains("--merchant-id"), "\(noIdentity.output)")
        let badTime = try await inspectPayU(["--merchant-id", "m", "--at", "yesterday"])
        #expect(badTime.status != 0 && badTime.output.contains("ISO 8601"), "\(badTime.output)")
    }

    @Test func checkConfigSaysWhatItFoundAndNothingSecret() async throws {
        let fixture = try ApplePayPaymentTests.Fixture(merchants: [try TestMerchant.ec(), try TestMerchant.rsa()])
        let (status, output) = try await ledgerd(["applepay", "check-config"], environment: fixture.environment)
        #expect(status == 0, "\(output)")
        for merchant in fixture.merchants {
            let hash = try ApplePayMerchantKey(privateKey: merchant.privateKey, certificate: merchant.certificate).publicKeyHash
            #expect(output.contains(Data(hash).base64EncodedString()), "\(output)")
            #expect(!output.contains(String(try merchant.privateKeyPEM.split(separator: "\n")[1])))
        }
        #expect(
            output.contains("EC key for EC_v1") && output.contains("RSA key for RSA_v1")
                && output.contains("Merchant ID: merchant.com.example.ledger")
        )
        #expect(output.contains("LedgerPayments Test Root CA - G3") && output.contains("warning: Apple Root CA - G3 is not among"))
        #expect(output.contains("max signature age: 300 s") && output.hasSuffix("ok\n"))
    }

    @Test func checkConfigFailsWhenNotConfiguredOrUnusable() async throws {
        let none = try await ledgerd(["applepay", "check-config"])
        #expect(none.status == 1 && none.output.contains("not configured"), "\(none.output)")
        let missing = try await ledgerd(
            ["applepay", "check-config"],
            environment: [
                "LEDGERD_APPLEPAY_PRIVATE_KEYS": "/nonexistent/key.pem", "LEDGERD_APPLEPAY_MERCHANT_ID": "merchant.com.example",
            ]
        )
        #expect(
            missing.status == 1 && missing.output.contains("LEDGERD_APPLEPAY_PRIVATE_KEYS: /nonexistent/key.pem cannot be read"),
            "\(missing.output)"
        )
    }

    @Test func theApplePayBenchmarkReportsAThroughput() async throws {
        let bench = DaemonProcess.binary.deletingLastPathComponent().appendingPathComponent("ledgerd-applepay-bench")
        let (status, output) = try await ChildProcess.run(bench, ["--seconds", "1"], environment: ProcessInfo.processInfo.environment)
        #expect(status == 0 && output.contains("tokens/s"), "\(output)")
    }

    /// The test PKI (a CA anyone can mint Apple-marked certificates with) is never in the production binary: no symbol
    /// of `LedgerPaymentsTesting` is linked into `ledgerd`, while the benchmark that needs it links it.
    @Test func theProductionBinaryCarriesNoTestPKI() throws {
        let module = Data("LedgerPaymentsTesting".utf8)
        let ledgerd = try Data(contentsOf: DaemonProcess.binary, options: .alwaysMapped)
        #expect(ledgerd.range(of: module) == nil)
        let bench = try Data(
            contentsOf: DaemonProcess.binary.deletingLastPathComponent().appendingPathComponent("ledgerd-applepay-bench"),
            options: .alwaysMapped
        )
        #expect(bench.range(of: module) != nil, "the check would see the module if it were linked")
    }

    // MARK: Configuration

    func configuration(_ environment: [String: String]) throws -> LedgerConfiguration {
        try LedgerConfiguration.load(environment: environment)
    }

    func configurationError(_ environment: [String: String]) -> String? {
        do {
            _ = try configuration(environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func theConfigurationLoadsKeysCertificatesAndRoots() throws {
        #expect(try configuration([:]).applePay == nil)
        let fixture = try ApplePayPaymentTests.Fixture(merchants: [try TestMerchant.ec(), try TestMerchant.ec()])
        var environment = fixture.environment
        environment["LEDGERD_APPLEPAY_MAX_SIGNATURE_AGE_SECONDS"] = "120"
        let applePay = try #require(try configuration(environment).applePay)
        #expect(applePay.keys.count == 2 && applePay.keys.allSatisfy { $0.certificate != nil })
        #expect(applePay.roots == [fixture.pki.root])
        #expect(applePay.merchantConfiguration.signingTimeTolerance == 120)
        #expect(applePay.keys.map(\.key.publicKeyHash) == (try fixture.merchants.map { try $0.merchantKey().publicKeyHash }))

        // Keys without certificates take the merchant identifier; the bundled Apple root is the default.
        environment = [
            "LEDGERD_APPLEPAY_PRIVATE_KEYS": fixture.environment["LEDGERD_APPLEPAY_PRIVATE_KEYS"]!,
            "LEDGERD_APPLEPAY_MERCHANT_ID": "merchant.com.example.ledger",
        ]
        let byIdentifier = try #require(try configuration(environment).applePay)
        #expect(byIdentifier.keys.allSatisfy { $0.certificate == nil })
        #expect(byIdentifier.keys.map(\.key.merchantIdentifierHash) == fixture.merchants.map(\.merchantIdentifierHash))
        #expect(byIdentifier.roots == [try ApplePayPEM.appleRootCAG3()])
        #expect(byIdentifier.merchantConfiguration.signingTimeTolerance == 300)
    }

    @Test func unusableApplePaySettingsStopTheConfigurationNamingTheVariable() throws {
        let fixture = try ApplePayPaymentTests.Fixture()
        let keys = fixture.environment["LEDGERD_APPLEPAY_PRIVATE_KEYS"]!
        let certificates = fixture.environment["LEDGERD_APPLEPAY_CERTIFICATES"]!
        let other = try ApplePayPaymentTests.Fixture()
        let cases: [([String: String], String)] = [
            (["LEDGERD_APPLEPAY_PRIVATE_KEYS": keys], "LEDGERD_APPLEPAY_MERCHANT_ID is not set"),
            (["LEDGERD_APPLEPAY_CERTIFICATES": certificates], "LEDGERD_APPLEPAY_PRIVATE_KEYS is required"),
            (
                [
                    "LEDGERD_APPLEPAY_PRIVATE_KEYS": keys, "LEDGERD_APPLEPAY_CERTIFICATES": other.environment["LEDGERD_APPLEPAY_CERTIFICATES"]!,
                    "LEDGERD_APPLEPAY_MERCHANT_ID": "m",
                ], "no key in LEDGERD_APPLEPAY_PRIVATE_KEYS belongs to this certificate"
            ),
            (
                [
                    "LEDGERD_APPLEPAY_PRIVATE_KEYS": keys, "LEDGERD_APPLEPAY_CERTIFICATES": certificates,
                    "LEDGERD_APPLEPAY_MERCHANT_ID": "merchant.com.other",
                ], "is not the merchant identifier of the certificate"
            ),
            (["LEDGERD_APPLEPAY_PRIVATE_KEYS": "\(keys),\(keys)", "LEDGERD_APPLEPAY_MERCHANT_ID": "m"], "holds the same key as"),
            (["LEDGERD_APPLEPAY_PRIVATE_KEYS": certificates, "LEDGERD_APPLEPAY_MERCHANT_ID": "m"], "LEDGERD_APPLEPAY_PRIVATE_KEYS: \(certificates)"),
            (["LEDGERD_APPLEPAY_PRIVATE_KEYS": keys, "LEDGERD_APPLEPAY_MERCHANT_ID": "m", "LEDGERD_APPLEPAY_ROOT": keys], "LEDGERD_APPLEPAY_ROOT"),
            (
                [
                    "LEDGERD_APPLEPAY_PRIVATE_KEYS": keys, "LEDGERD_APPLEPAY_MERCHANT_ID": "m",
                    "LEDGERD_APPLEPAY_MAX_SIGNATURE_AGE_SECONDS": "0",
                ], "LEDGERD_APPLEPAY_MAX_SIGNATURE_AGE_SECONDS"
            ),
        ]
        for (environment, expected) in cases {
            let message = try #require(configurationError(environment), "\(environment) was accepted")
            #expect(message.contains(expected), "\(message)")
            #expect(!message.contains("PRIVATE KEY-----"))
        }
    }

    @Test func theReportFlagsExpiredMerchantCertificates() throws {
        let fixture = try ApplePayPaymentTests.Fixture()
        let applePay = try #require(try configuration(fixture.environment).applePay)
        #expect(applePay.report(now: testNow).problems.isEmpty)
        let late = applePay.report(now: TestPKI.date(2031))  // test merchant certificates end in 2030
        #expect(late.problems.count == 1 && late.text.contains("problem: the merchant certificate"), "\(late.text)")
        #expect(applePay.report(now: TestPKI.date(2030).addingTimeInterval(-86_400)).text.contains("warning: the merchant certificate"))
    }
}
