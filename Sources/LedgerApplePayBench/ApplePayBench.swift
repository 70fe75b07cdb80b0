import ArgumentParser
import Foundation

/// `ledgerd-applepay-bench`: Apple Pay tokens verified and decrypted per second by one task. Its own executable: the
/// test PKI it generates tokens with (`LedgerPaymentsTesting`) is never linked into `ledgerd`.
@main
struct ApplePayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledgerd-applepay-bench",
        abstract: "Apple Pay tokens parsed, verified and decrypted per second on one task (one core).",
        discussion: """
            Generates a test PKI (root → intermediate with the Apple markers → signing leaf), a merchant key and one \
            token in-process, then verifies and decrypts it as the payment service does (parse the JSON, CMS \
            signature, chain, freshness, merchant key, decryption, payment data) in a loop, on a single task.
            """
    )

    @Option(help: "Seconds to measure (after a short warm-up).") var seconds = 5
    @Option(help: "Token version: ec (EC_v1) or rsa (RSA_v1).") var scheme = ApplePayBenchmark.Scheme.ec
    @Flag(help: "A fresh verifier for every token: no remembered chain (the first token after a certificate change).")
    var cold = false

    func run() async throws {
        let work = try ApplePayBenchmark(scheme: scheme, cold: cold)
        // Warm-up, and a check that the loop measures a success path.
        let clock = ContinuousClock()
        let warmUpEnd = clock.now + .milliseconds(500)
        while clock.now < warmUpEnd {
            guard try await work.once() == 12_345 else { throw ValidationError("the generated token did not decrypt as expected") }
        }
        let (count, elapsed) = try await work.measure(for: .seconds(seconds))
        let secondsElapsed = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(count) / secondsElapsed
        print(
            "ledgerd-applepay-bench: scheme \(scheme.rawValue) (\(work.version))\(cold ? ", cold (no remembered chain)" : ""), 1 task, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        print(String(format: "%d tokens in %.2f s: %.0f tokens/s, %.1f µs per token", count, secondsElapsed, rate, 1e6 / rate))
    }
}

extension ApplePayBenchmark.Scheme: ExpressibleByArgument {}
