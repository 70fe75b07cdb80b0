import Foundation
import LedgerPayments
import LedgerPaymentsTesting

/// `ledgerd-applepay-bench`'s work: what the payment service does with a token's JSON (parse, verify,
/// decrypt), on a generated test PKI and merchant key.
struct ApplePayBenchmark: Sendable {
    /// The token version to generate: EC_v1 or RSA_v1.
    enum Scheme: String, Sendable, CaseIterable {
        case ec, rsa
    }

    let json: Data
    let version: String
    let verifier: ApplePayTokenVerifier
    let cold: Bool

    /// A test PKI, a merchant key of the scheme, and one token for it.
    @inline(never)
    init(scheme: Scheme, cold: Bool) throws {
        self.cold = cold
        let pki = try TestPKI()
        let merchant = scheme == .ec ? try TestMerchant.ec() : try TestMerchant.rsa()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        json = try JSONEncoder().encode(token)
        version = token.version
        verifier = ApplePayTokenVerifier(
            configuration: ApplePayMerchantConfiguration(
                merchantKeys: [try merchant.merchantKey()],
                trustedRoots: [pki.root]
            )
        )
    }

    @inline(never)
    func once() async throws -> Int {
        do throws(ApplePayError) {
            let parsed = try ApplePayToken.parse(json: json)
            let verifier = cold ? ApplePayTokenVerifier(configuration: verifier.configuration) : verifier
            return try await verifier.verifyAndDecrypt(parsed, now: testNow).transactionAmount
        } catch {
            throw BenchmarkError("the generated token was refused: \(error)")
        }
    }

    /// Runs ``once()`` back to back for `duration`; returns the iterations and the time they took.
    @inline(never)
    func measure(for duration: Duration) async throws -> (Int, Duration) {
        let clock = ContinuousClock()
        var count = 0
        let start = clock.now
        let end = start + duration
        while clock.now < end {
            for _ in 0..<20 { _ = try await once() }
            count += 20
        }
        return (count, clock.now - start)
    }
}

/// A benchmark that cannot measure what it should (its own set-up failed).
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
