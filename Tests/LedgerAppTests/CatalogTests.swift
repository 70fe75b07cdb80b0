import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// The demo catalog on a new ledger, served from the inline read models through the real router.
@Suite(.machine(.shared)) struct CatalogTests {
    let storefront = StorefrontDriver()

    typealias Product = StorefrontDriver.Product
    typealias ShippingMethod = StorefrontDriver.ShippingMethod

    @Test func aNewLedgerServesTheDemoCatalogInTheAppsShape() async throws {
        let images = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-pics-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: images) }
        try await TestApp.withApp(seed: true, imagesDirectory: images.path) { client, _ in
            let products = try await storefront.inventory(client)
            #expect(products.count == 12)
            #expect(products.map(\.name) == DemoCatalog.products.map(\.name))
            #expect(
                products.first
                    == Product(
                        id: "clock",
                        name: "Clock",
                        description: "Wooden clock",
                        image_uri: "clock.png",
                        price: "50.00",
                        currency: "USD",
                        quantity_on_hand: 10,
                        reserved: 0,
                        available: 10
                    )
            )
            #expect(products.first { $0.name == "Pencil" }?.price == "0.50")
            let methods = try await storefront.shippingMethods(client)
            #expect(methods.map(\.name) == ["Free", "Standard", "Expedited"])
            #expect(
                methods[1]
                    == ShippingMethod(
                        id: "standard",
                        name: "Standard",
                        description: "Delivers in four days",
                        price: "5.00",
                        currency: "USD",
                        transit_days: 4
                    )
            )
            // Every product's picture is there, ours, and served.
            for product in products {
                try await client.execute(uri: "/product_image/\(product.image_uri)", method: .get) { response in
                    #expect(response.status == .ok, "\(product.image_uri)")
                    #expect(Array(response.body.readableBytesView) == PlaceholderImage.png(for: product.name))
                }
            }
        }
    }

    @Test func seedingHappensOnceEvenWithTwoDaemonsRacing() async throws {
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: false, database: db) { _, first in
            try await TestApp.withApp(seed: false, database: db) { _, second in
                async let a = first.catalog.seedDemoCatalogIfEmpty(now: Date())
                async let b = second.catalog.seedDemoCatalogIfEmpty(now: Date())
                let outcomes = try await [a, b]
                #expect(outcomes.filter { $0 }.count == 1)
                let head = try await first.store.head().position
                #expect(try await first.catalog.seedDemoCatalogIfEmpty(now: Date()) == false)
                #expect(try await first.store.head().position == head)
                #expect(try await ChainVerifier(client: first.client, logger: TestCluster.logger).verify().ok)
            }
        }
    }

    @Test func theReadModelsEqualAReplayOfTheLog() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let served = try await storefront.inventory(client)
            // Replay: fold every event of the log, from nothing, through the domain's projection.
            var projection = InventoryProjection()
            for event in try await services.store.read(from: 1, limit: 10_000) {
                projection.apply(try DomainEvent.decode(event))
            }
            #expect(served.map(\.id) == projection.rows.map(\.productID.rawValue))
            #expect(served.map(\.quantity_on_hand) == projection.rows.map(\.quantityOnHand))
            #expect(served.map(\.reserved) == projection.rows.map(\.reserved))
            #expect(served.map(\.price) == projection.rows.map(\.price.decimalString))
        }
    }
}
