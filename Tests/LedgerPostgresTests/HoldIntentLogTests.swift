import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

/// ``HoldIntentLog`` against a real database: a note is committed when `note` returns, concurrent notes share
/// statements, a drop rides with a later flush, and a reference dropped and noted again stays noted.
@Suite(.machine(.shared)) struct HoldIntentLogTests {
    func intent(_ n: Int, keyed: Bool) -> HoldIntentStore.Intent {
        HoldIntentStore.Intent(
            modificationReference: "mod-\(n)",
            orderID: "order-\(n)",
            kind: ["capture", "increment", "void", "refund"][n % 4],
            ledgerKey: keyed ? "hold:order-\(n):capture:k\(n)" : nil,
            requestHash: keyed ? Array(repeating: UInt8(n), count: 32) : nil,
            idempotencyKey: keyed ? "k\(n)" : nil,
            actor: "operator:test",
            notedAt: Date(timeIntervalSince1970: 1_800_000_000 + Double(n))
        )
    }

    @Test func notesAreCommittedWhenNoteReturnsAndShareStatementsAndDropsFollow() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { _, client in
            let store = HoldIntentStore(client: client, logger: TestCluster.logger)
            let log = HoldIntentLog(store: store)
            let intents = (0..<40).map { intent($0, keyed: $0 % 2 == 0) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for intent in intents { group.addTask { try await log.note(intent) } }
                try await group.waitForAll()
            }
            let stored = try await store.due(before: .distantFuture, limit: 100)
            #expect(Set(stored) == Set(intents), "every note committed, nil members kept nil")
            #expect(log.flushes < intents.count, "\(log.flushes) statements for \(intents.count) concurrent notes")

            for n in 0..<20 { log.drop("mod-\(n)") }
            let again = intent(0, keyed: false)
            try await log.note(again)  // after its drop: flushed with it or later, so it stays
            var left: [HoldIntentStore.Intent] = []
            for _ in 0..<200 {
                left = try await store.due(before: .distantFuture, limit: 100)
                if left.count == 21 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(Set(left.map(\.modificationReference)) == Set((20..<40).map { "mod-\($0)" } + ["mod-0"]))
            #expect(left.first { $0.modificationReference == "mod-0" } == again)
        }
    }

    /// One statement that deletes a reference's note and notes it again leaves the new note (deletions first), and
    /// keeps the first of two notes of one reference.
    @Test func aFlushDeletesBeforeItNotes() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { _, client in
            let store = HoldIntentStore(client: client, logger: TestCluster.logger)
            try await store.write(noting: [intent(1, keyed: true), intent(2, keyed: true)], dropping: [])
            var renewed = intent(1, keyed: false)
            renewed.actor = "operator:again"
            var second = intent(3, keyed: true)
            second.actor = "operator:second"
            try await store.write(noting: [renewed, intent(3, keyed: true), second], dropping: ["mod-1", "mod-2", "mod-9"])
            let left = try await store.due(before: .distantFuture, limit: 10)
            #expect(Set(left) == [renewed, intent(3, keyed: true)])
        }
    }
}
