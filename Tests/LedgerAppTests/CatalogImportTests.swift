import Foundation
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

@Suite(.machine(.shared)) struct CatalogImportTests {
    let storefront = StorefrontDriver()

    static let json = """
        {"products": [
            {"name": "Clock", "description": "Wooden clock", "price": "55.00", "stock": 14},
            {"id": "teapot", "name": "Teapot", "description": "Blue teapot", "price": "30.00", "stock": 5}
         ],
         "shipping_methods": [{"name": "Drone", "description": "Delivers in an hour", "transit_days": 0, "price": "25.00"}]}
        """

    func importing(_ text: String, format: String, _ services: ServiceContainer) async throws -> CatalogImport.Report {
        try await CatalogImport.parse(text, format: format).run(client: services.client, now: Date(), logger: TestCluster.logger)
    }

    @Test func pricesAndStockBecomeEventsAndAReimportAppendsNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let report = try await importing(Self.json, format: "json", services)
            #expect(report.listed == ["teapot", "drone"])
            #expect(report.priceChanged == ["clock"] && report.stockReceived == ["clock"])
            let inventory = try await storefront.inventory(client)
            let clock = inventory.first { $0.id == "clock" }!
            #expect(clock.price == "55.00" && clock.quantity_on_hand == 14)
            #expect(inventory.last?.id == "teapot" && inventory.last?.available == 5)
            let types = try await services.store.read(from: 1, limit: 10_000).suffix(5).map(\.type)
            #expect(types == ["ProductPriceChanged", "StockReceived", "ProductListed", "StockReceived", "ShippingMethodListed"])
            let head = try await services.store.head().position
            let again = try await importing(Self.json, format: "json", services)
            #expect(again.unchanged.sorted() == ["clock", "drone", "teapot"])
            #expect(try await services.store.head().position == head)
        }
    }

    @Test func csvWorksTooAndBadFilesAppendNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let csv = """
                kind,id,name,description,image_file,price,currency,stock,transit_days\r
                product,,Stapler,"Orange stapler, heavy",,17.50,USD,60,\r
                shipping,,Free,Delivers in seven days,,0.00,USD,,7\r

                """
            let report = try await importing(csv, format: "csv", services)
            #expect(report.priceChanged == ["stapler"] && report.stockReceived == ["stapler"] && report.unchanged == ["free"])
            #expect(report.warnings.count == 1)  // the description differs: not changed by an import
            let head = try await services.store.head().position
            let bad: [(String, String)] = [
                (#"{"products": [{"name": "Pen", "price": 25, "stock": 50}]}"#, "json"),
                (#"{"products": [{"name": "Pen", "price": "25.00", "stock": 10}]}"#, "json"),  // below on hand
                (#"{"products": [{"name": "New", "price": "1.234", "stock": 1}]}"#, "json"),
                ("kind,name,price,stock\nwidget,Thing,1.00,1\n", "csv"),
                ("kind,name,price,stock\nproduct,Thing,1.00,-1\n", "csv"),
                ("name,price\nThing,1.00\n", "csv"),
            ]
            for (text, format) in bad {
                await #expect(throws: (any Error).self, "\(text)") { _ = try await importing(text, format: format, services) }
            }
            #expect(try await services.store.head().position == head)
            #expect(try await storefront.inventory(client).count == 12)
        }
    }
}
