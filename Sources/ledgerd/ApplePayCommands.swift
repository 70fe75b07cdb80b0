import ArgumentParser
import Foundation
import LedgerApp
import LedgerBench
import LedgerPayments
import LedgerServices

/// `ledgerd applepay …`: tools for merchants that take Apple Pay tokens on the ledger itself.
struct ApplePay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "applepay",
        abstract: "Apple Pay payment tokens: check the configuration, inspect a token offline.",
        subcommands: [CheckConfig.self, Inspect.self]
    )

    struct CheckConfig: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check-config",
            abstract: "Load the LEDGERD_APPLEPAY_* keys, certificates and roots and say what was found.",
            discussion: "Exits with status 1 when Apple Pay is not configured, a file cannot be used, or a certificate has expired."
        )

        func run() async throws {
            let configuration: LedgerConfiguration
            do {
                configuration = try LedgerConfiguration.load()
            } catch {
                print("problem: \(error)")
                throw ExitCode(1)
            }
            guard let applePay = configuration.applePay else {
                print("problem: Apple Pay is not configured: LEDGERD_APPLEPAY_PRIVATE_KEYS is not set")
                throw ExitCode(1)
            }
            let report = applePay.report(now: Date())
            print(report.text)
            if !report.problems.isEmpty { throw ExitCode(1) }
        }
    }

    struct Inspect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify and decrypt one Apple Pay token offline and print it as JSON (device PAN masked, no cryptogram).",
            discussion: """
                On success prints the redacted payment data and exits 0. A token that does not verify or decrypt prints \
                {"error": {"code", "message"}} with the precise reason and exits 1. Nothing is read from or written to a ledger.
                """
        )

        @Option(help: "File holding the token: the paymentData JSON (or a PKPaymentToken with paymentData), or base64 of it.")
        var token: String
        @Option(help: "The merchant's payment processing private key (PEM: PKCS#8, SEC1 or PKCS#1).")
        var privateKey: String
        @Option(help: "The merchant's payment processing certificate (PEM); supplies the merchant identifier hash.")
        var certificate: String?
        @Option(name: .customLong("merchant-id"), help: "The merchant identifier (e.g. merchant.com.example), when no certificate is given.")
        var merchantID: String?
        @Option(help: "Trusted root certificate(s) (PEM). Default: the bundled Apple Root CA - G3.")
        var root: String?
        @Option(help: "Verification time, ISO 8601 (e.g. 2018-01-26T13:55:18Z). Default: now.")
        var at: String?
        @Option(help: "The app's applicationData (base64), checked against the token's hash of it.")
        var applicationData: String?
        @Option(help: "Most seconds between the token's signing time and the verification time.")
        var maxSignatureAge: Int = Int(ApplePayMerchantConfiguration.defaultSigningTimeTolerance)

        func validate() throws {
            if certificate == nil && merchantID == nil {
                throw ValidationError("give --certificate or --merchant-id: decryption needs the merchant identifier hash")
            }
            if let at, (try? Date.ISO8601FormatStyle().parse(at)) == nil {
                throw ValidationError("--at must be an ISO 8601 time such as 2018-01-26T13:55:18Z")
            }
            if let applicationData, Data(base64Encoded: applicationData) == nil {
                throw ValidationError("--application-data must be base64")
            }
            if maxSignatureAge < 1 { throw ValidationError("--max-signature-age must be at least 1") }
        }

        func run() async throws {
            func contents(_ path: String) throws -> Data {
                guard let data = FileManager.default.contents(atPath: path) else {
                    Self.printError(code: "unreadable_file", message: "\(path) cannot be read")
                    throw ExitCode(1)
                }
                return data
            }
            let text = { (path: String) throws -> String in String(decoding: try contents(path), as: UTF8.self) }
            let tokenData = try contents(token)
            let privateKeyPEM = try text(privateKey)
            let certificatePEM = try certificate.map(text)
            let rootPEM = try root.map(text)
            let now = try at.map { try Date.ISO8601FormatStyle().parse($0) } ?? Date()
            let result = await ApplePayInspector.inspect(
                tokenJSON: tokenData,
                privateKeyPEM: privateKeyPEM,
                certificatePEM: certificatePEM,
                merchantIdentifier: merchantID,
                rootPEM: rootPEM,
                applicationData: applicationData.flatMap { Data(base64Encoded: $0) },
                at: now,
                signingTimeTolerance: TimeInterval(maxSignatureAge)
            )
            switch result {
            case .success(let json):
                print(json)
            case .failure(let error):
                Self.printError(code: error.code.rawValue, message: error.message)
                throw ExitCode(1)
            }
        }

        static func printError(code: String, message: String) {
            struct Body: Encodable {
                struct Detail: Encodable { let code, message: String }
                let error: Detail
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(Body(error: .init(code: code, message: message)))) ?? Data()
            print(String(decoding: data, as: UTF8.self))
        }
    }
}
