import Foundation
import LedgerAcquirer
import LedgerCoreTestSupport
import LedgerPayments
import LedgerPaymentsTesting
import Testing

/// Random and mutated inputs into the token and CMS parsers and the whole pipeline: no crash, and every
/// rejection is an `ApplePayError` with a code the stage can produce. Override the seed with
/// `LEDGER_FUZZ_SEED=<n>` to reproduce or explore.
struct FuzzTests {
    /// The running test's seed (`LEDGER_FUZZ_SEED`, else 20261121), named in every failure.
    static var seed: UInt64 { PropertySeed.current }

    static func mutate(_ input: [UInt8], _ rng: inout SeededRandom) -> [UInt8] {
        var bytes = input
        let interesting: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0x81, 0x84, 0xFF, 0x30, 0x31, 0xA0, 0x04, 0x06, 0x22, 0x7B, 0x7D]
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !bytes.isEmpty else {
                bytes = [UInt8.random(in: 0...255, using: &rng)]
                continue
            }
            let position = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            case 1: bytes[position] = UInt8.random(in: 0...255, using: &rng)
            case 2:
                bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: position)
            case 3: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...16, using: &rng)))
            case 4: bytes.removeSubrange(position...)
            case 5:
                let end = min(bytes.count, position + Int.random(in: 1...32, using: &rng))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            default: bytes[position] = interesting.randomElement(using: &rng) ?? 0
            }
        }
        return bytes
    }

    static func random(_ rng: inout SeededRandom) -> [UInt8] {
        var bytes = (0..<Int.random(in: 0...512, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] = [0x30, 0x7B, 0x31, 0xA0].randomElement(using: &rng) ?? 0x30 }
        return bytes
    }

    @Test(.seeded(by: "LEDGER_FUZZ_SEED", default: 20_261_121)) func cmsParserSurvivesRandomAndMutatedInput() throws {
        print("FuzzTests.cms seed: \(Self.seed)")
        var rng = SeededRandom(seed: Self.seed)
        let payu = bytes(base64: try ApplePayToken.parse(json: VectorFiles.data("payu-ec-v1/token.json")).signature)
        let generated = bytes(base64: try TokenFactory.make(pki: TestPKI(), merchant: TestMerchant.ec()).signature)
        let corpus = [payu, generated]
        let parserCodes: Set<ApplePayError.Code> = [.malformedSignature, .missingSignedAttribute, .unsupportedAlgorithm]
        var rejected = 0
        for iteration in 0..<10_000 {
            let isRandom = iteration % 4 == 0
            let input = isRandom ? Self.random(&rng) : Self.mutate(corpus[iteration % 2], &rng)
            let error = failure { () throws(ApplePayError) in try CMSSignedData.parse(input) }
            if let error {
                rejected += 1
                #expect(parserCodes.contains(error.code), "seed \(Self.seed) iteration \(iteration): \(error)")
            } else {
                #expect(!isRandom, "seed \(Self.seed) iteration \(iteration): random bytes parsed as CMS")
            }
        }
        #expect(rejected > 5_000, "seed \(Self.seed): only \(rejected) rejections")
    }

    @Test(.seeded(by: "LEDGER_FUZZ_SEED", default: 20_261_121)) func tokenParserSurvivesRandomAndMutatedInput() throws {
        print("FuzzTests.token seed: \(Self.seed)")
        var rng = SeededRandom(seed: Self.seed ^ 0xA5A5)
        let payuJSON = Array(try VectorFiles.data("payu-ec-v1/token.json"))
        let rsaToken = try TokenFactory.make(pki: TestPKI(), merchant: TestMerchant.rsa())
        let rsaJSON = Array(try JSONEncoder().encode(rsaToken))
        let corpus = [payuJSON, rsaJSON, Array(Data(payuJSON).base64EncodedString().utf8)]
        let parserCodes: Set<ApplePayError.Code> = [.malformedToken, .unsupportedVersion]
        var rejected = 0
        for iteration in 0..<10_000 {
            let isRandom = iteration % 4 == 0
            let input = isRandom ? Self.random(&rng) : Self.mutate(corpus[iteration % 3], &rng)
            let error = failure { () throws(ApplePayError) in try ApplePayToken.parse(jsonOrBase64: Data(input)).decodedFields() }
            if let error {
                rejected += 1
                #expect(parserCodes.contains(error.code), "seed \(Self.seed) iteration \(iteration): \(error)")
            } else {
                #expect(!isRandom, "seed \(Self.seed) iteration \(iteration): random bytes parsed as a token")
            }
        }
        #expect(rejected > 5_000, "seed \(Self.seed): only \(rejected) rejections")
    }

    /// Mutating any field of a genuine token either is rejected, or — when the change falls in bytes nothing
    /// depends on (e.g. the CMS version number) — yields exactly the original payment.
    @Test(.seeded(by: "LEDGER_FUZZ_SEED", default: 20_261_121)) func pipelineNeverAcceptsAlteredPaymentData() async throws {
        print("FuzzTests.pipeline seed: \(Self.seed)")
        var rng = SeededRandom(seed: Self.seed ^ 0x5A5A)
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.applicationData = Array("order-1".utf8)
        let original = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
        let verifier = ApplePayTokenVerifier(
            configuration: .init(merchantKeys: [try merchant.merchantKey()], trustedRoots: [pki.root])
        )
        let expected = try await verifier.verifyAndDecrypt(original, applicationData: spec.applicationData, now: testNow)
        var accepted = 0
        for iteration in 0..<1_000 {
            var token = original
            func mutated(_ base64: String) -> String { Data(Self.mutate(bytes(base64: base64), &rng)).base64EncodedString() }
            func mutatedText(_ text: String) -> String { String(decoding: Self.mutate(Array(text.utf8), &rng), as: UTF8.self) }
            switch iteration % 6 {
            case 0: token.signature = mutated(token.signature)
            case 1: token.data = mutated(token.data)
            case 2: token.header.ephemeralPublicKey = token.header.ephemeralPublicKey.map(mutated)
            case 3: token.header.transactionId = mutatedText(token.header.transactionId)
            case 4: token.header.publicKeyHash = mutated(token.header.publicKeyHash)
            default: token.header.applicationData = token.header.applicationData.map(mutatedText)
            }
            let appData = spec.applicationData
            do throws(ApplePayError) {
                let payment = try await verifier.verifyAndDecrypt(token, applicationData: appData, now: testNow)
                accepted += 1
                #expect(payment == expected, "seed \(Self.seed) iteration \(iteration): altered token decrypted differently")
                // Only the CMS blob may change without effect (unchecked bytes such as its version number); any
                // other accepted mutation must have been a no-op on the decoded bytes (e.g. hex case).
                let same = (try? token.decodedFields()) == (try? original.decodedFields())
                #expect(iteration % 6 == 0 || same, "seed \(Self.seed) iteration \(iteration): a signed field was altered yet accepted")
            } catch {
                #expect(!error.code.rawValue.isEmpty && !error.message.isEmpty)
            }
        }
        #expect(accepted < 100, "seed \(Self.seed): \(accepted) altered tokens accepted")
    }
}
