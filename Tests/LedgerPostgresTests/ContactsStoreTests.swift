import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// `ContactsStore` against a real database, as the application role (the daemon's grants).
@Suite(.machine(.shared)) struct ContactsStoreTests {
    static func contact(_ name: String, email: String) -> ShippingContact {
        ShippingContact(name: name, email: email, street: "1 Infinite Loop", city: "Cupertino", state: "CA", zip: "95014")
    }

    /// The stored JSON object, decoded back (jsonb normalises spacing and key order).
    static func decoded(_ json: String?) throws -> ShippingContact? {
        try json.map { try JSONDecoder().decode(ShippingContact.self, from: Data($0.utf8)) }
    }

    @Test func anInsertedContactReadsBackUnderItsReferenceOnly() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = ContactsStore(client: client, logger: TestCluster.logger)
            let jane = Self.contact("Jane Appleseed", email: "jane@example.com")
            try await store.insert(jane, ref: "contact-1")
            #expect(try Self.decoded(try await store.contactJSON(ref: "contact-1")) == jane)
            let json = try #require(try await store.contactJSON(ref: "contact-1"))
            let keys = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
            #expect(keys.map { Set($0.keys) } == ["name", "email", "street", "city", "state", "zip"])
            #expect(try await store.contactJSON(ref: "contact-2") == nil)
        }
    }

    @Test func aReferenceIsStoredOnce() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = ContactsStore(client: client, logger: TestCluster.logger)
            try await store.insert(Self.contact("Jane Appleseed", email: "jane@example.com"), ref: "contact-1")
            await #expect(throws: PSQLError.self) {
                try await store.insert(Self.contact("Someone Else", email: "else@example.com"), ref: "contact-1")
            }
            #expect(try Self.decoded(try await store.contactJSON(ref: "contact-1"))?.name == "Jane Appleseed")
        }
    }

    @Test func eraseDeletesOnlyThatContactAndIsANoOpWhenItIsGone() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = ContactsStore(client: client, logger: TestCluster.logger)
            let john = Self.contact("John Appleseed", email: "john@example.com")
            try await store.insert(Self.contact("Jane Appleseed", email: "jane@example.com"), ref: "contact-1")
            try await store.insert(john, ref: "contact-2")
            try await store.erase(ref: "contact-1")
            #expect(try await store.contactJSON(ref: "contact-1") == nil)
            #expect(try Self.decoded(try await store.contactJSON(ref: "contact-2")) == john)
            try await store.erase(ref: "contact-1")
            try await store.erase(ref: "never-stored")
            #expect(try Self.decoded(try await store.contactJSON(ref: "contact-2")) == john)
            #expect(try await column(client, "SELECT contact_ref FROM ledger.shipping_contacts", as: String.self) == ["contact-2"])
        }
    }

    @Test func aCustomerNamesContactsByReferenceOrByEmailInAnyCaseOldestFirst() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = ContactsStore(client: client, logger: TestCluster.logger)
            // Inserted out of the references' alphabetical order: the answer follows the insertion.
            try await store.insert(Self.contact("Jane", email: "Jane@Example.com"), ref: "contact-b")
            try await store.insert(Self.contact("Jane", email: "jane@example.com"), ref: "contact-a")
            try await store.insert(Self.contact("John", email: "john@example.com"), ref: "contact-c")
            #expect(try await store.refs(naming: "JANE@example.COM") == ["contact-b", "contact-a"])
            #expect(try await store.refs(naming: "contact-c") == ["contact-c"])
            #expect(try await store.refs(naming: "nobody@example.com") == [])
            try await store.erase(ref: "contact-b")
            #expect(try await store.refs(naming: "jane@example.com") == ["contact-a"])
        }
    }

    @Test func theOrdersOfAContactComeFromTheLogAndOutliveItsErasure() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let store = ContactsStore(client: client, logger: TestCluster.logger)
            try await store.insert(Self.contact("Jane", email: "jane@example.com"), ref: "contact-1")
            for (order, ref) in [("o-2", "contact-1"), ("o-1", "contact-9"), ("o-3", "contact-1")] {
                _ = try await writer.append(
                    AppendRequest(
                        stream: stream("order-\(order)"),
                        expectedVersion: .noStream,
                        events: [
                            NewEvent(
                                type: OrderOpened.eventType,
                                data: #"{"order_id": "\#(order)", "contact_ref": "\#(ref)"}"#,
                                effectiveAt: testEpoch
                            )
                        ]
                    )
                )
            }
            // Another type carrying the same reference is not an order opened with it.
            _ = try await writer.append(
                AppendRequest(
                    stream: stream("sample-1"),
                    expectedVersion: .any,
                    events: [NewEvent(type: "SampleRecorded", data: #"{"order_id": "o-4", "contact_ref": "contact-1"}"#, effectiveAt: testEpoch)]
                )
            )
            #expect(try await store.orderIDs(usingContact: "contact-1") == ["o-2", "o-3"])
            try await store.erase(ref: "contact-1")
            #expect(try await store.orderIDs(usingContact: "contact-1") == ["o-2", "o-3"])
            #expect(try await store.orderIDs(usingContact: "contact-5") == [])
        }
    }
}

extension ContactsStore {
    /// Seeds a contact as the append that opens an order stores it (sql/0023), without an order: these tests are
    /// about reading and erasing.
    func insert(_ contact: ShippingContact, ref: String) async throws {
        let row = try ContactRow(ref: ref, contact: contact)
        try await connection.client.query(
            "INSERT INTO ledger.shipping_contacts (contact_ref, data, created_at) VALUES (\(row.ref), \(row.json)::jsonb, now())",
            logger: connection.logger
        )
    }
}
