import Foundation
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The ledger distributed by merchant (docs/scale-out.md), simulated on one node with the schema shaped for Citus
/// (docs/scale-out/merchant-chains.sql): one gapless hash chain per merchant, appends that lock only their merchant's
/// head.
@Suite(.machine(.shared)) struct MerchantChainsTests {
    static let schema = TestCluster.repositoryRoot.appendingPathComponent("docs/scale-out/merchant-chains.sql")

    /// A fresh database with the scale-out schema and two merchants.
    static func database() async throws -> TestDatabase {
        let db = try await TestDatabase.empty()
        let script = try String(contentsOf: schema, encoding: .utf8)
        try await db.withOwner { client in
            try await client.withConnection { connection in
                try await Migrator.run(script: script, connection: connection, logger: TestCluster.logger)
            }
            try await client.query("INSERT INTO scaleout.merchants VALUES ('m-a', 'Merchant A'), ('m-b', 'Merchant B')")
        }
        return db
    }

    static func verify(_ client: DatabaseClient, _ merchant: String) async throws -> (ok: Bool, checked: Int64) {
        var answer = (ok: false, checked: Int64(-1))
        let rows = try await client.query("SELECT ok, checked FROM scaleout.verify_chain(\(merchant))")
        for try await (ok, checked) in rows.decode((Bool, Int64).self) { answer = (ok, checked) }
        return answer
    }

    @Test func twoMerchantsChainsRunSideBySideEachGaplessAndVerifying() async throws {
        let db = try await Self.database()
        let perMerchant = 40
        try await db.withOwner { client in
            // Each merchant appends from its own tasks (several streams each), all at once.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for merchant in ["m-a", "m-b"] {
                    for streamNumber in 0..<4 {
                        group.addTask {
                            for version in 0..<(perMerchant / 4) {
                                try await client.query(
                                    """
                                    SELECT scaleout.append(\(merchant), \("order-\(streamNumber)"), \(Int64(version)), 'Sample',
                                                           jsonb_build_object('n', \(version)))
                                    """
                                )
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for merchant in ["m-a", "m-b"] {
                let positions = try await column(
                    client,
                    "SELECT position FROM scaleout.events WHERE merchant_id = \(merchant) ORDER BY position",
                    as: Int64.self
                )
                #expect(positions == Array(1...Int64(perMerchant)), "\(merchant)")
                let report = try await Self.verify(client, merchant)
                #expect(report.ok && report.checked == Int64(perMerchant), "\(merchant): \(report)")
            }
        }
    }

    @Test func anOpenAppendOfOneMerchantBlocksOnlyThatMerchant() async throws {
        let db = try await Self.database()
        try await db.withOwner { client in
            try await client.query("SELECT scaleout.append('m-a', 'order-1', 0, 'Sample', '{}')")
            try await client.query("SELECT scaleout.append('m-b', 'order-1', 0, 'Sample', '{}')")
            // Merchant A's append stays open (its head row locked) on one connection…
            try await client.withConnection { holder in
                try await holder.query("BEGIN", logger: TestCluster.logger)
                try await holder.query("SELECT scaleout.append('m-a', 'order-2', 0, 'Sample', '{}')", logger: TestCluster.logger)
                // …while another connection appends for merchant B without waiting, and for merchant A only after it.
                try await client.withConnection { other in
                    try await other.query("SET lock_timeout = '10s'", logger: TestCluster.logger)
                    let position = try await other.query("SELECT scaleout.append('m-b', 'order-2', 0, 'Sample', '{}')", logger: TestCluster.logger)
                    var positions: [Int64] = []
                    for try await value in position.decode(Int64.self) { positions.append(value) }
                    #expect(positions == [2])
                    try await other.query("SET lock_timeout = '200ms'", logger: TestCluster.logger)
                    do {
                        for try await _ in try await other.query(
                            "SELECT scaleout.append('m-a', 'order-3', 0, 'Sample', '{}')",
                            logger: TestCluster.logger
                        ) {}
                        Issue.record("merchant A's second append did not wait for the first")
                    } catch let error as PSQLError {
                        #expect(error.serverInfo?[.sqlState] == "55P03")  // lock_not_available
                    }
                }
                try await holder.query("COMMIT", logger: TestCluster.logger)
            }
            for merchant in ["m-a", "m-b"] {
                let report = try await Self.verify(client, merchant)
                #expect(report.ok && report.checked == 2, "\(merchant): \(report)")
            }
        }
    }

    @Test func tamperingWithOneMerchantsEventBreaksOnlyThatChain() async throws {
        let db = try await Self.database()
        try await db.withOwner { client in
            for merchant in ["m-a", "m-b"] {
                for version in 0..<3 {
                    try await client.query("SELECT scaleout.append(\(merchant), 'order-1', \(Int64(version)), 'Sample', '{}')")
                }
            }
            try await client.query("UPDATE scaleout.events SET data = '{\"forged\": true}' WHERE merchant_id = 'm-a' AND position = 2")
            let a = try await Self.verify(client, "m-a")
            #expect(!a.ok)
            let b = try await Self.verify(client, "m-b")
            #expect(b.ok && b.checked == 3)
            let firstBad = try await column(client, "SELECT first_bad_position FROM scaleout.verify_chain('m-a')", as: Int64.self)
            #expect(firstBad == [2])
        }
    }
}
