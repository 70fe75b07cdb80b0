// The demo catalog: the original storefront's 12 products and 3 shipping methods (domain page §1),
// as data. Ids are slugs of the names, so they are stable across runs and readable in stream ids.

/// One product of the demo catalog.
public struct DemoProduct: Hashable, Sendable {
    public var id: ProductID
    public var name: String
    public var description: String
    public var imageFile: String
    public var quantity: Int64
    public var price: Money
}

/// One shipping method of the demo catalog.
public struct DemoShippingMethod: Hashable, Sendable {
    public var id: ShippingMethodID
    public var name: String
    public var description: String
    public var transitDays: Int
    public var price: Money
}

/// The catalog seeded into an empty ledger, and the appends that seed it.
public enum DemoCatalog {
    public static let products: [DemoProduct] = [
        product("Clock", "Wooden clock", 10, "50.00"),
        product("Pen", "Metal pen", 50, "25.00"),
        product("Pencil", "#2 pencil", 50, "0.50"),
        product("Stapler", "Orange stapler", 50, "15.00"),
        product("Cup", "Ceramic cup (without coffee)", 50, "20.00"),
        product("Catpad", "Catpad with gray cat", 50, "12.00"),
        product("Chocolate Hearts", "Delicious chocolate wrapped in red", 50, "8.00"),
        // The domain page gives no description for this one; this is ours.
        product("White Eraser", "White eraser", 50, "8.00"),
        product("Hammer", "Hammer to nail down things", 50, "7.00"),
        product("Red Scarf", "Stylish scarf", 50, "8.00"),
        product("T-Ruler", "Get things straight", 50, "14.00"),
        product("Whiteboard Eraser", "Wipe the slate clean", 50, "5.00"),
    ]

    public static let shippingMethods: [DemoShippingMethod] = [
        shipping("Free", "Delivers in seven days", 7, "0.00"),
        shipping("Standard", "Delivers in four days", 4, "5.00"),
        shipping("Expedited", "Delivers tomorrow", 1, "15.00"),
    ]

    /// The appends that seed an empty ledger: one per stream (listing + first stock for products),
    /// each expecting the stream not to exist, so a second seeding conflicts instead of doubling stock.
    public static func seedAppends(context: DecisionContext) -> [PlannedAppend] {
        var appends: [PlannedAppend] = []
        for p in products {
            let command = ProductCommand.list(
                sku: nil,
                name: p.name,
                description: p.description,
                imageFile: p.imageFile,
                price: p.price,
                initialStock: p.quantity
            )
            // The demo data is fixed and valid; a rejection here is a programming error caught by the tests.
            let events = try! ProductDecider.decide(command, product: p.id, state: nil, context: context).get()
            appends.append(PlannedAppend(streamID: p.id.streamID, expectedVersion: .noStream, events: events.map(DomainEvent.product)))
        }
        for m in shippingMethods {
            let command = ShippingMethodCommand.list(name: m.name, description: m.description, transitDays: m.transitDays, price: m.price)
            let events = try! ShippingMethodDecider.decide(command, method: m.id, state: nil, context: context).get()
            appends.append(PlannedAppend(streamID: m.id.streamID, expectedVersion: .noStream, events: events.map(DomainEvent.shippingMethod)))
        }
        return appends
    }

    private static func product(_ name: String, _ description: String, _ quantity: Int64, _ price: String) -> DemoProduct {
        let slug = DomainIdentifierRules.slug(name)
        return DemoProduct(
            id: ProductID(slug)!,
            name: name,
            description: description,
            imageFile: slug + ".png",
            quantity: quantity,
            price: try! Money(decimal: price, currency: .usd)
        )
    }

    private static func shipping(_ name: String, _ description: String, _ days: Int, _ price: String) -> DemoShippingMethod {
        DemoShippingMethod(
            id: ShippingMethodID(DomainIdentifierRules.slug(name))!,
            name: name,
            description: description,
            transitDays: days,
            price: try! Money(decimal: price, currency: .usd)
        )
    }
}
