import Foundation
import LedgerAcquirer
import LedgerCore
import Testing

/// Seeded random operation sequences against the pure state machine. After every step: the
/// accounting identity of every hold, open-to-buy conservation of every card (used = Σ open +
/// captured − refunded), and that a refused operation changed nothing.
///
/// Override with `ACQUIRER_PROPERTY_SEED=<UInt64>` (base seed) and `ACQUIRER_PROPERTY_RUNS=<n>`;
/// a failure prints the sequence's seed, which reproduces it with `ACQUIRER_PROPERTY_RUNS=1`.
struct AcquirerModelPropertyTests {
    static let tokens = [
        "tok_visa", "tok_visa", "tok_mastercard", "tok_amex", "tok_discover", "tok_visa_debit",
        "tok_chargeDeclined", "tok_chargeDeclinedInsufficientFunds", "tok_chargeDeclinedProcessingError",
        "tok_nonsense",
    ]

    @Test("≥ 10,000 random operation sequences keep the identity and open-to-buy conservation")
    func randomSequences() {
        let baseSeed: UInt64 = environmentInteger("ACQUIRER_PROPERTY_SEED") ?? 0x0AC0_1EDB_0000_2025
        let runs: Int = environmentInteger("ACQUIRER_PROPERTY_RUNS") ?? 10_000
        var tally: [String: Int] = [:]
        for run in 0..<runs {
            // With ACQUIRER_PROPERTY_RUNS=1 the base seed is the sequence seed itself.
            let seed = runs == 1 ? baseSeed : SeededRandom.mix(baseSeed &+ UInt64(run))
            switch Self.runSequence(seed: seed) {
            case .success(let counts): tally.merge(counts, uniquingKeysWith: +)
            case .failure(let failure):
                Issue.record("property failed: \(failure.description) — reproduce with ACQUIRER_PROPERTY_SEED=\(seed) ACQUIRER_PROPERTY_RUNS=1")
                return
            }
        }
        // Did the sequences test anything: every operation applied, and every modification also refused (an amount
        // out of range, a missing or closed hold), so both sides of "a refused operation changes nothing" ran.
        guard runs >= 1_000 else { return }
        for kind in ["authorize", "retry", "capture", "capture-open", "increment", "reverse", "refund", "query", "expire"] {
            #expect(tally["\(kind) applied", default: 0] >= 100, "\(kind): \(tally)")
        }
        for kind in ["capture", "increment", "reverse", "refund"] {
            #expect(tally["\(kind) refused", default: 0] >= 100, "\(kind): \(tally)")
        }
    }

    /// The negative control of `randomSequences`: `invariantViolations()` reports a state whose books disagree. Each
    /// corruption is written into a real state's snapshot (one number or status changed) and read back.
    @Test func theInvariantCheckReportsCorruptedBooks() throws {
        var state = AcquirerModelState(
            seed: 7,
            configuration: AcquirerModelConfiguration(creditLimits: [CreditLimit(token: "tok_visa", limit: usd(50_000))])
        )
        _ = try state.authorize(authorization("order-1", usd(10_000), token: "tok_visa"), now: monday)
        _ = try state.capture(
            CaptureRequest(authorizationReference: "order-1", modificationReference: "m1", amount: usd(4_000), isFinal: false),
            now: monday
        )
        #expect(state.invariantViolations() == [])
        let snapshot = String(decoding: try state.snapshot(), as: UTF8.self)
        #expect(try AcquirerModelState(snapshot: Data(snapshot.utf8)).invariantViolations() == [])
        let corruptions = [
            ("\"captured\":4000", "\"captured\":4001", "identity broken"),
            ("\"used\":10000", "\"used\":9999", "open-to-buy used 9999 ≠ holds' 10000"),
            ("\"status\":\"open\"", "\"status\":\"closed\"", "open 6000 with status"),
        ]
        for (text, corrupted, problem) in corruptions {
            #expect(snapshot.contains(text), "the snapshot holds \(text)")
            let bad = try AcquirerModelState(snapshot: Data(snapshot.replacing(text, with: corrupted, maxReplacements: 1).utf8))
            let problems = bad.invariantViolations()
            #expect(problems.contains { $0.contains(problem) }, "\(corrupted): \(problems)")
        }
    }

    /// The sequence's operations by kind and result ("capture applied", "refund refused"…), or its failure.
    static func runSequence(seed: UInt64) -> Result<[String: Int], TestFailure> {
        var random = SeededRandom(seed: seed)
        let limits = tokens.map { CreditLimit(token: $0, limit: usd(random.int(in: 10_000...300_000))) }
        let lost = random.chance(numerator: 1, denominator: 2)
        let config = AcquirerModelConfiguration(creditLimits: limits, unknownOutcome: lost ? .placedButAnswerLost : .notPlaced)
        var state = AcquirerModelState(seed: seed, configuration: config)
        var now = monday
        var references: [String] = []
        var requests: [String: AuthorizationRequest] = [:]
        var modificationCount = 0
        var counts: [String: Int] = [:]
        let steps = Int(random.int(in: 20...40))
        for step in 0..<steps {
            func fail(_ what: String) -> Result<[String: Int], TestFailure> { .failure(TestFailure("step \(step): \(what)")) }
            // Time moves between 0 and ~3 days per step, so holds of every lifetime expire in some runs.
            if random.chance(numerator: 1, denominator: 3) { now += Double(random.int(in: 0...(3 * day))) }
            var expected = state
            expected.expireHolds(now: now)
            let choice = random.int(in: 0...99)
            let target =
                references.isEmpty || random.chance(numerator: 1, denominator: 20)
                ? "missing-\(step)" : references[Int(random.next(below: UInt64(references.count)))]
            modificationCount += 1
            let modRef =
                random.chance(numerator: 1, denominator: 15) && modificationCount > 1
                ? "m\(modificationCount - 1)" : "m\(modificationCount)"  // sometimes a retry or reuse
            let amount = usd(random.int(in: -10...120_000))
            let outcome: Result<Void, AcquirerError>
            let kinds: [(below: Int64, name: String)] = [
                (25, "authorize"), (30, "retry"), (45, "capture"), (55, "capture-open"), (65, "increment"), (75, "reverse"), (88, "refund"),
                (94, "query"), (100, "expire"),
            ]
            let kind: String = kinds.first { choice < $0.below }?.name ?? "expire"
            do {
                switch choice {
                case 0..<25:
                    let reference = "order-\(references.count)"
                    let request = authorization(
                        reference,
                        amount,
                        token: tokens[Int(random.next(below: UInt64(tokens.count)))],
                        intent: random.chance(numerator: 1, denominator: 8) ? .immediate : .manual,
                        initiator: random.chance(numerator: 1, denominator: 2) ? .customer : .merchant,
                        type: random.chance(numerator: 1, denominator: 2) ? .final : .preAuthorization
                    )
                    _ = try state.authorize(request, now: now)
                    references.append(reference)
                    requests[reference] = request
                case 25..<30:
                    // Retrying an authorization: same answer, nothing consumed.
                    guard let request = requests[target] else { continue }
                    let before = state.query(merchantReference: target, now: now)
                    expected = state
                    let again = try state.authorize(request, now: now)
                    if state != expected { return fail("retried authorize changed state") }
                    if case .found(let details) = before, details.authorization != again, again.responseCode.isUnknownOutcome == false {
                        return fail("retried authorize answered differently")
                    }
                case 30..<45:
                    _ = try state.capture(
                        CaptureRequest(
                            authorizationReference: target,
                            modificationReference: modRef,
                            amount: amount,
                            isFinal: random.chance(numerator: 1, denominator: 3)
                        ),
                        now: now
                    )
                case 45..<55:
                    let open = state.balance(of: target)?.open.minorUnits ?? 0
                    _ = try state.capture(
                        CaptureRequest(
                            authorizationReference: target,
                            modificationReference: modRef,
                            amount: usd(max(1, open)),
                            isFinal: false
                        ),
                        now: now
                    )
                case 55..<65:
                    _ = try state.increment(IncrementRequest(authorizationReference: target, modificationReference: modRef, amount: amount), now: now)
                case 65..<75:
                    let full = random.chance(numerator: 1, denominator: 2)
                    _ = try state.reverse(
                        ReversalRequest(
                            authorizationReference: target,
                            modificationReference: modRef,
                            amount: full ? nil : amount
                        ),
                        now: now
                    )
                case 75..<88:
                    let refundable = (state.balance(of: target).map { $0.captured.minorUnits - $0.refunded.minorUnits }) ?? 0
                    let refund = random.chance(numerator: 1, denominator: 2) ? usd(max(1, refundable)) : amount
                    _ = try state.refund(RefundRequest(authorizationReference: target, modificationReference: modRef, amount: refund), now: now)
                case 88..<94:
                    _ = state.query(merchantReference: target, now: now)
                    if state != expected { return fail("query changed more than expiry") }
                default:
                    state.expireHolds(now: now)
                    let once = state
                    state.expireHolds(now: now)
                    if state != once { return fail("expiry applied twice") }
                }
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            if case .failure(let error) = outcome, state != expected {
                return fail("refused operation (\(error)) changed the state")
            }
            counts[kind + (outcome.isSuccess ? " applied" : " refused"), default: 0] += 1
            let problems = state.invariantViolations()
            if !problems.isEmpty { return fail(problems.joined(separator: "; ")) }
        }
        return .success(counts)
    }
}

extension Result {
    fileprivate var isSuccess: Bool { if case .success = self { true } else { false } }
}
