import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// Same seed, configuration, commands and clock → byte-identical outputs; a different seed →
/// different identifiers; snapshot → restore → continue equals never stopping.
struct DeterminismTests {
    /// Everything a script observes, in order, as canonical JSON plus the CSV of every report.
    struct Transcript: Codable, Equatable {
        var outputs: [String] = []
        var csv: [String] = []
        var pspReferences: [String] = []
        var authCodes: [String] = []
        var modificationReferences: [String] = []
        var batchNumbers: [Int] = []
        var payoutReferences: [String] = []
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "<unencodable>"
    }

    /// Runs the script's commands `range` on `model`, advancing `clock`.
    static func run(_ model: AcquirerModel, _ clock: SimulatedClock, steps range: Range<Int>, into transcript: inout Transcript) async {
        for step in range {
            clock.advance(by: 37 * 60)
            let reference = "order-\(step / 4)"
            do {
                switch step % 4 {
                case 0:
                    let tokens = [
                        "tok_visa", "tok_mastercard", "tok_amex", "tok_chargeDeclined", "tok_visa_debit", "tok_chargeDeclinedProcessingError",
                    ]
                    let response = try await model.authorize(
                        authorization(reference, usd(Int64(1000 + step * 137)), token: tokens[(step / 4) % tokens.count])
                    )
                    transcript.outputs.append(json(response))
                    if let psp = response.pspReference { transcript.pspReferences.append(psp) }
                    if let code = response.authCode { transcript.authCodes.append(code) }
                case 1:
                    let response = try await model.capture(
                        CaptureRequest(
                            authorizationReference: reference,
                            modificationReference: "cap-\(reference)",
                            amount: usd(Int64(500 + step)),
                            isFinal: step % 8 == 1
                        )
                    )
                    transcript.outputs.append(json(response))
                    transcript.modificationReferences.append(response.modificationPSPReference)
                case 2:
                    let response = try await model.refund(
                        RefundRequest(authorizationReference: reference, modificationReference: "ref-\(reference)", amount: usd(100))
                    )
                    transcript.outputs.append(json(response))
                    transcript.modificationReferences.append(response.modificationPSPReference)
                default:
                    transcript.outputs.append(json(try await model.query(merchantReference: reference)))
                    if step % 12 == 11 {
                        // Settle everything captured or refunded since the last batch.
                        let state = await model.currentState
                        var items: [SettlementItem] = []
                        for index in 0...(step / 4) {
                            let auth = "order-\(index)"
                            guard case .found(let details) = state.copyQuery(auth) else { continue }
                            for modification in details.modifications where modification.responseCode.isApproved {
                                let kind: SettlementItemKind? =
                                    modification.kind == .capture ? .capture : (modification.kind == .refund ? .refund : nil)
                                guard let kind, !transcript.outputs.contains("settled:" + modification.modificationReference) else { continue }
                                items.append(
                                    SettlementItem(
                                        kind: kind,
                                        authorizationReference: auth,
                                        modificationReference: modification.modificationReference,
                                        amount: modification.amount
                                    )
                                )
                                transcript.outputs.append("settled:" + modification.modificationReference)
                            }
                        }
                        let report = try await model.submitBatch(
                            SettlementBatchRequest(batchReference: "batch-\(step)", currency: .usd, items: items)
                        )
                        transcript.outputs.append(json(report))
                        transcript.csv.append(try SettlementReportCSV().write(report.lines))
                        transcript.batchNumbers.append(report.batchNumber)
                        transcript.payoutReferences.append(report.payout.payoutReference)
                    }
                }
            } catch {
                transcript.outputs.append("error: \(error)")
            }
        }
    }

    static let faults = FaultConfiguration(
        dropLine: FaultKnob(probability: Rate(numerator: 1, denominator: 5)),
        alterFee: FaultKnob(probability: Rate(numerator: 1, denominator: 4)),
        moveToNextBatch: FaultKnob(probability: Rate(numerator: 1, denominator: 6))
    )

    static func fullRun(seed: UInt64) async throws -> (Transcript, Data) {
        let clock = SimulatedClock(monday)
        let model = AcquirerModel(seed: seed, configuration: AcquirerModelConfiguration(faults: faults), clock: clock.reading)
        var transcript = Transcript()
        await run(model, clock, steps: 0..<96, into: &transcript)
        return (transcript, try await model.snapshot())
    }

    @Test("the same seed and script give byte-identical outputs, reports (CSV) and snapshots")
    func sameInputsSameBytes() async throws {
        let (first, firstSnapshot) = try await Self.fullRun(seed: 2025)
        let (second, secondSnapshot) = try await Self.fullRun(seed: 2025)
        #expect(Data(Self.json(first).utf8) == Data(Self.json(second).utf8))
        #expect(first.csv.joined() == second.csv.joined())
        #expect(firstSnapshot == secondSnapshot)
        #expect(first.csv.count >= 5 && first.pspReferences.count >= 10)
        // The script really exercised settlement and the fault knobs.
        #expect(first.csv.contains { $0.contains("Settled") } && first.csv.contains { $0.contains("Refunded") })
        let restored = try AcquirerModelState(snapshot: firstSnapshot)
        #expect(!restored.injectedFaults.isEmpty)
    }

    @Test("a different seed gives different identifiers")
    func differentSeedDifferentIDs() async throws {
        let (a, _) = try await Self.fullRun(seed: 2025)
        let (b, _) = try await Self.fullRun(seed: 2026)
        #expect(a.pspReferences.count == b.pspReferences.count)
        #expect(Set(a.pspReferences).isDisjoint(with: b.pspReferences))
        #expect(a.authCodes != b.authCodes)
        #expect(Set(a.modificationReferences).isDisjoint(with: b.modificationReferences))
        #expect(a.batchNumbers != b.batchNumbers)
        #expect(Set(a.payoutReferences).isDisjoint(with: b.payoutReferences))
        // Within one run identifiers are unique.
        #expect(Set(a.pspReferences).count == a.pspReferences.count)
        #expect(Set(a.modificationReferences).count == a.modificationReferences.count)
    }

    @Test("snapshot → restore → continue gives the same bytes as never stopping")
    func snapshotRestore() async throws {
        let (uninterrupted, finalSnapshot) = try await Self.fullRun(seed: 77)

        let clock = SimulatedClock(monday)
        let model = AcquirerModel(seed: 77, configuration: AcquirerModelConfiguration(faults: Self.faults), clock: clock.reading)
        var transcript = Transcript()
        await Self.run(model, clock, steps: 0..<50, into: &transcript)
        let saved = try await model.snapshot()
        // A new process: the clock is restored to where it was; the model from its snapshot.
        let restored = try AcquirerModel(snapshot: saved, clock: clock.reading)
        #expect(try await restored.snapshot() == saved)
        await Self.run(restored, clock, steps: 50..<96, into: &transcript)
        #expect(Self.json(transcript) == Self.json(uninterrupted))
        #expect(try await restored.snapshot() == finalSnapshot)
        #expect(try AcquirerModelState(snapshot: finalSnapshot) == (await restored.currentState))
    }

    @Test("the actor reads the injected clock: holds expire on simulated time")
    func injectedClock() async throws {
        let clock = SimulatedClock(monday)
        let model = AcquirerModel(seed: 1, clock: clock.reading)
        let response = try await model.authorize(authorization("h", usd(1000)))
        #expect(response.processedAt == monday && response.holdExpiresAt == monday + Double(7 * day))
        clock.advance(by: 7 * day)
        await model.expireHolds()
        let balance = await model.currentState.balance(of: "h")
        #expect(balance?.expired == usd(1000))
    }
}

extension AcquirerModelState {
    /// A query on a copy (the script inspects without advancing the model).
    func copyQuery(_ reference: String) -> PaymentQueryResult {
        var copy = self
        return copy.query(merchantReference: reference, now: .distantPast)
    }
}
