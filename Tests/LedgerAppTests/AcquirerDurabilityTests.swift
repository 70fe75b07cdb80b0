import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerService
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The invisible-commit hole on the acquirer's side of the boundary (acquirer 0005), on a real primary with a real
/// synchronous standby. A journal INSERT whose wait for the standby is cut short (its backend terminated, as a demotion
/// or a pool reset does) stays committed on the primary and visible there, though no standby has it. The service did not
/// answer that command, but before the barrier it built on the row: its reload replayed it into the model and a retry
/// under its idempotency key was answered from it at once — an acknowledgement the standby never confirmed, which a
/// failover takes back (the drill then met the next row one `seq` further on: "acquirer.journal has a gap").
/// Now the retry is answered only once the standby has the row, and then with the original outcome.
@Suite(.serialized, .machine(.shared)) struct AcquirerDurabilityTests {
    /// The acquirer's schema migrated and its durable model opened on `configuration`'s database, on a pool whose
    /// statements are bounded as the daemon bounds them (a statement sent as its connection dies is otherwise never
    /// answered by PostgresNIO).
    static func withModel(_ configuration: PostgresClient.Configuration, _ body: @Sendable (DurableAcquirerModel) async throws -> Void) async throws {
        let client = DatabaseClient(configuration: configuration, backgroundLogger: TestCluster.logger, statementDeadline: .seconds(5))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            await client.running()
            try await Migrator(migrations: try Migrator.load(from: AcquirerHarness.migrations), schema: "acquirer", logger: TestCluster.logger)
                .migrate(client: client)
            let model = try await DurableAcquirerModel.open(
                client: client,
                seed: 7,
                configuration: AcquirerModelConfiguration(),
                clock: { Date() },
                logger: TestCluster.logger
            )
            try await body(model)
        }
    }

    @Test(.timeLimit(.minutes(4))) func aRetryAfterACutShortCommitIsAnsweredOnlyOnceTheStandbyHasItsRow() async throws {
        let clusters = try await ReplicatedClusters.start(synchronous: true)
        defer { clusters.stop() }
        let superuser = clusters.superuser(clusters.primaryEndpoint, ReplicatedClusters.database)
        try await Self.withModel(superuser) { model in
            let request = AuthorizationRequest(
                merchantReference: "ord-durable",
                amount: Money(minorUnits: 5_900, currency: .usd),
                paymentMethod: .token("tok_visa")
            )
            let command = DurableAcquirerModel.Operation.command(.authorize(await model.resolve(request)), psp: nil)
            #expect(await model.journalLength == 0)

            // The standby goes; the command's INSERT commits on the primary and waits for it; its backend is terminated.
            try await clusters.standby.stopOffPool(mode: "immediate")
            let first = Task { await model.perform(command, key: "authorize-ord-durable") }
            #expect(try await clusters.terminateCommitsWaitingForTheStandby() == 1, "the INSERT never waited for the standby")
            let unconfirmed = await first.value
            #expect(unconfirmed.status == 503, "answered \(unconfirmed.status) \(String(decoding: unconfirmed.body, as: UTF8.self))")
            let visible = try await withPostgresClient(configuration: superuser, logger: TestCluster.logger) { client in
                let rows = try await client.query("SELECT count(*)::bigint FROM acquirer.journal", logger: TestCluster.logger)
                for try await count in rows.decode(Int64.self) { return count }
                return -1
            }
            #expect(visible == 1, "the cut-short commit is visible on the primary alone")

            // The retry under the same key: not answered from the row while the standby lacks it.
            let retry = Task { await model.perform(command, key: "authorize-ord-durable") }
            let early = await withTaskGroup(of: AcquirerReply?.self) { group in
                group.addTask { await retry.value }
                group.addTask {
                    try? await Task.sleep(for: .seconds(3))
                    return nil
                }
                let firstDone = await group.next() ?? nil
                group.cancelAll()
                return firstDone
            }
            #expect(early == nil || early?.status == 503, "a retry was answered from a row the standby does not have: \(String(describing: early))")

            // The standby returns: the row is durable, and the retry answers the original outcome (the row's), once.
            _ = try await clusters.standby.startOffPool()
            var answered = await retry.value
            for _ in 0..<20 where answered.status == 503 {
                try await Task.sleep(for: .milliseconds(250))
                answered = await model.perform(command, key: "authorize-ord-durable")
            }
            #expect(answered.status == 200)
            let authorization = try LedgerJSON.decode(AuthorizationResponse.self, from: answered.body)
            #expect(authorization.merchantReference == "ord-durable")
            #expect(await model.journalLength == 1, "the retry was journalled again")
        }
    }
}
