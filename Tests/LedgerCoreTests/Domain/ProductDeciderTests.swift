import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

struct ProductDeciderTests {
    let clock = pid("clock")
    let a = oid("order-a")
    let b = oid("order-b")

    /// The clock's stream as a given/when/then spec.
    var spec: DeciderSpec<ProductState?, ProductCommand, ProductEvent, ProductRejection> { .product(clock, context: ctx) }

    /// The events of listing the clock with `stock` received.
    func listing(stock: Int64 = 10) -> [ProductEvent] {
        try! ProductDecider.decide(
            .list(sku: nil, name: "Clock", description: "Wooden clock", imageFile: "clock.png", price: usd("50.00"), initialStock: stock),
            product: clock,
            state: nil,
            context: ctx
        ).get()
    }

    func listed(stock: Int64 = 10) -> ProductState {
        ProductState.fold(listing(stock: stock))!
    }

    func decide(_ command: ProductCommand, _ state: ProductState?) -> Result<[ProductEvent], ProductRejection> {
        ProductDecider.decide(command, product: clock, state: state, context: ctx)
    }

    func after(_ command: ProductCommand, _ state: ProductState) -> ProductState {
        let events = try! decide(command, state).get()
        return events.reduce(state) { ProductState.evolve($0, $1)! }
    }

    @Test func listingEmitsListedAndInitialStock() throws {
        let events = try decide(
            .list(sku: nil, name: "Clock", description: "Wooden clock", imageFile: "clock.png", price: usd("50.00"), initialStock: 10),
            nil
        ).get()
        #expect(
            events == [
                .listed(
                    ProductListed(
                        productID: clock,
                        sku: "clock",
                        name: "Clock",
                        description: "Wooden clock",
                        imageFile: "clock.png",
                        price: usd("50.00")
                    )
                ),
                .stockReceived(StockReceived(productID: clock, quantity: 10)),
            ]
        )
        let state = try #require(ProductState.fold(events))
        #expect(state.onHand == 10 && state.reserved == 0 && state.available == 10 && state.version == 2)
    }

    @Test func listingWithoutStockEmitsOnlyListed() throws {
        let events = try decide(.list(sku: "SKU-1", name: "Clock", description: "", imageFile: "clock.png", price: usd("1.00"), initialStock: 0), nil)
            .get()
        #expect(events.count == 1)
        guard case .listed(let e) = events[0] else {
            Issue.record("expected listed")
            return
        }
        #expect(e.sku == "SKU-1")
    }

    @Test func listingRejections() {
        spec.given(listing()).when(.list(sku: nil, name: "Clock", description: "", imageFile: "clock.png", price: usd("1.00"), initialStock: 0))
            .thenRejects(.alreadyListed(clock))
        let unlisted = spec.given([])
        unlisted.when(.list(sku: nil, name: "", description: "", imageFile: "clock.png", price: usd("1.00"), initialStock: 0))
            .thenRejects(.invalidListing("empty name"))
        unlisted.when(.list(sku: nil, name: "Clock", description: "", imageFile: "../etc/passwd", price: usd("1.00"), initialStock: 0))
            .thenRejects(.invalidListing("image file ../etc/passwd"))
        unlisted.when(.list(sku: nil, name: "Clock", description: "", imageFile: ".hidden", price: usd("1.00"), initialStock: 0))
            .thenRejects(.invalidListing("image file .hidden"))
        unlisted.when(.list(sku: nil, name: "Clock", description: "", imageFile: "clock.png", price: usd("-1.00"), initialStock: 0))
            .thenRejects(.negativePrice(usd("-1.00")))
        unlisted.when(.list(sku: nil, name: "Clock", description: "", imageFile: "clock.png", price: usd("1.00"), initialStock: -1))
            .thenRejects(.nonPositiveQuantity(-1))
        unlisted.when(.list(sku: "", name: "Clock", description: "", imageFile: "clock.png", price: usd("1.00"), initialStock: 0))
            .thenRejects(.invalidListing("empty sku"))
    }

    @Test func everyCommandOnAnUnknownProductIsRejected() {
        let commands: [ProductCommand] = [
            .changePrice(usd("1.00")), .receiveStock(quantity: 1), .reserve(order: a, quantity: 1),
            .release(order: a, quantity: nil, reason: .paymentDeclined), .sell(order: a, quantity: nil),
        ]
        for command in commands {
            spec.given([]).when(command).thenRejects(.unknownProduct(clock))
        }
    }

    @Test func priceChange() throws {
        let state = listed()
        let listed = spec.given(listing())
        listed.when(.changePrice(usd("45.00")))
            .then([.priceChanged(ProductPriceChanged(productID: clock, previousPrice: usd("50.00"), price: usd("45.00")))])
        #expect(after(.changePrice(usd("45.00")), state).price == usd("45.00"))
        listed.when(.changePrice(usd("50.00"))).then([])
        listed.when(.changePrice(eur("50.00"))).thenRejects(.currencyChange(from: .usd, to: .eur))
        listed.when(.changePrice(usd("-0.01"))).thenRejects(.negativePrice(usd("-0.01")))
    }

    @Test func receiveStock() throws {
        let state = listed()
        #expect(try decide(.receiveStock(quantity: 5), state).get() == [.stockReceived(StockReceived(productID: clock, quantity: 5))])
        let next = after(.receiveStock(quantity: 5), state)
        #expect(next.onHand == 15 && next.received == 15 && next.available == 15)
        #expect(decide(.receiveStock(quantity: 0), state).failure == .nonPositiveQuantity(0))
        #expect(decide(.receiveStock(quantity: -3), state).failure == .nonPositiveQuantity(-3))
        #expect(decide(.receiveStock(quantity: .max), state).failure == .quantityOutOfRange(.max))
    }

    @Test func reserveCountsReservedNotOnHand() throws {
        let state = listed()
        #expect(
            try decide(.reserve(order: a, quantity: 3), state).get() == [.stockReserved(StockReserved(productID: clock, orderID: a, quantity: 3))]
        )
        let next = after(.reserve(order: a, quantity: 3), state)
        #expect(next.onHand == 10 && next.reserved == 3 && next.available == 7 && next.reservations == [a: 3])
    }

    @Test func reserveRejections() {
        let reserved = spec.given(listing() + [.stockReserved(StockReserved(productID: clock, orderID: a, quantity: 8))])
        reserved.when(.reserve(order: b, quantity: 3)).thenRejects(.insufficientStock(product: clock, requested: 3, available: 2))
        reserved.when(.reserve(order: a, quantity: 1)).thenRejects(.duplicateReservation(product: clock, order: a))
        reserved.when(.reserve(order: b, quantity: 0)).thenRejects(.nonPositiveQuantity(0))
        reserved.when(.reserve(order: b, quantity: -1)).thenRejects(.nonPositiveQuantity(-1))
        // Exactly the available amount is fine; one more is not.
        reserved.when(.reserve(order: b, quantity: 2)).then([.stockReserved(StockReserved(productID: clock, orderID: b, quantity: 2))])
        reserved.when(.reserve(order: b, quantity: .max)).thenRejects(.insufficientStock(product: clock, requested: .max, available: 2))
    }

    @Test func releaseAllOrPart() throws {
        let state = after(.reserve(order: a, quantity: 3), listed())
        #expect(
            try decide(.release(order: a, quantity: nil, reason: .paymentDeclined), state).get()
                == [.reservationReleased(ReservationReleased(productID: clock, orderID: a, quantity: 3, reason: .paymentDeclined))]
        )
        let partial = after(.release(order: a, quantity: 1, reason: .operatorRequest), state)
        #expect(partial.reservations == [a: 2] && partial.reserved == 2 && partial.available == 8)
        let all = after(.release(order: a, quantity: nil, reason: .paymentDeclined), state)
        #expect(all.reservations.isEmpty && all.reserved == 0 && all.available == 10 && all.onHand == 10)
    }

    @Test func releaseRejections() {
        let state = after(.reserve(order: a, quantity: 3), listed())
        #expect(decide(.release(order: b, quantity: nil, reason: .paymentDeclined), state).failure == .noReservation(product: clock, order: b))
        #expect(
            decide(.release(order: a, quantity: 4, reason: .paymentDeclined), state).failure
                == .exceedsReservation(product: clock, order: a, requested: 4, reserved: 3)
        )
        #expect(decide(.release(order: a, quantity: 0, reason: .paymentDeclined), state).failure == .nonPositiveQuantity(0))
        let released = after(.release(order: a, quantity: nil, reason: .paymentDeclined), state)
        #expect(decide(.release(order: a, quantity: nil, reason: .paymentDeclined), released).failure == .noReservation(product: clock, order: a))
    }

    @Test func sellTurnsReservationIntoSale() throws {
        let state = after(.reserve(order: a, quantity: 3), listed())
        #expect(try decide(.sell(order: a, quantity: nil), state).get() == [.stockSold(StockSold(productID: clock, orderID: a, quantity: 3))])
        let sold = after(.sell(order: a, quantity: nil), state)
        #expect(sold.onHand == 7 && sold.reserved == 0 && sold.available == 7 && sold.sold == 3 && sold.reservations.isEmpty)
        let part = after(.sell(order: a, quantity: 2), state)
        #expect(part.onHand == 8 && part.reserved == 1 && part.reservations == [a: 1] && part.sold == 2)
    }

    @Test func sellRejections() {
        let reserved = spec.given(listing() + [.stockReserved(StockReserved(productID: clock, orderID: a, quantity: 3))])
        reserved.when(.sell(order: b, quantity: nil)).thenRejects(.noReservation(product: clock, order: b))
        reserved.when(.sell(order: a, quantity: 5)).thenRejects(.exceedsReservation(product: clock, order: a, requested: 5, reserved: 3))
        reserved.when(.sell(order: a, quantity: -2)).thenRejects(.nonPositiveQuantity(-2))
    }

    @Test func evolveIgnoresEventsBeforeListing() {
        #expect(ProductState.evolve(nil, .stockReceived(StockReceived(productID: clock, quantity: 1))) == nil)
    }
}

struct ShippingMethodDeciderTests {
    let standard = sid("standard")

    func decide(_ command: ShippingMethodCommand, _ state: ShippingMethodState?) -> Result<[ShippingMethodEvent], ShippingMethodRejection> {
        ShippingMethodDecider.decide(command, method: standard, state: state, context: ctx)
    }

    var listed: ShippingMethodState {
        ShippingMethodState.fold(
            try! decide(.list(name: "Standard", description: "Delivers in four days", transitDays: 4, price: usd("5.00")), nil).get()
        )!
    }

    @Test func listAndChangePrice() throws {
        #expect(
            try decide(.list(name: "Standard", description: "Delivers in four days", transitDays: 4, price: usd("5.00")), nil).get()
                == [
                    .listed(
                        ShippingMethodListed(
                            shippingMethodID: standard,
                            name: "Standard",
                            description: "Delivers in four days",
                            transitDays: 4,
                            price: usd("5.00")
                        )
                    )
                ]
        )
        let state = listed
        #expect(state.price == usd("5.00") && state.transitDays == 4 && state.version == 1)
        let events = try decide(.changePrice(usd("6.00")), state).get()
        #expect(events == [.priceChanged(ShippingMethodPriceChanged(shippingMethodID: standard, previousPrice: usd("5.00"), price: usd("6.00")))])
        #expect(ShippingMethodState.evolve(state, events[0])?.price == usd("6.00"))
        #expect(try decide(.changePrice(usd("5.00")), state).get() == [])
    }

    @Test func rejections() {
        #expect(decide(.list(name: "Standard", description: "", transitDays: 4, price: usd("5.00")), listed).failure == .alreadyListed(standard))
        #expect(decide(.list(name: "", description: "", transitDays: 4, price: usd("5.00")), nil).failure == .invalidListing("empty name"))
        #expect(
            decide(.list(name: "S", description: "", transitDays: -1, price: usd("5.00")), nil).failure == .invalidListing("negative transit days")
        )
        #expect(decide(.list(name: "S", description: "", transitDays: 1, price: usd("-5.00")), nil).failure == .negativePrice(usd("-5.00")))
        #expect(decide(.changePrice(usd("1.00")), nil).failure == .unknownShippingMethod(standard))
        #expect(decide(.changePrice(eur("1.00")), listed).failure == .currencyChange(from: .usd, to: .eur))
        #expect(decide(.changePrice(usd("-1.00")), listed).failure == .negativePrice(usd("-1.00")))
    }
}

struct DemoCatalogTests {
    @Test func productsMatchTheDomainPage() {
        let expected: [(String, String, String, Int64, String)] = [
            ("clock", "Clock", "Wooden clock", 10, "50.00"),
            ("pen", "Pen", "Metal pen", 50, "25.00"),
            ("pencil", "Pencil", "#2 pencil", 50, "0.50"),
            ("stapler", "Stapler", "Orange stapler", 50, "15.00"),
            ("cup", "Cup", "Ceramic cup (without coffee)", 50, "20.00"),
            ("catpad", "Catpad", "Catpad with gray cat", 50, "12.00"),
            ("chocolate-hearts", "Chocolate Hearts", "Delicious chocolate wrapped in red", 50, "8.00"),
            ("white-eraser", "White Eraser", "White eraser", 50, "8.00"),
            ("hammer", "Hammer", "Hammer to nail down things", 50, "7.00"),
            ("red-scarf", "Red Scarf", "Stylish scarf", 50, "8.00"),
            ("t-ruler", "T-Ruler", "Get things straight", 50, "14.00"),
            ("whiteboard-eraser", "Whiteboard Eraser", "Wipe the slate clean", 50, "5.00"),
        ]
        #expect(DemoCatalog.products.count == 12)
        for (product, row) in zip(DemoCatalog.products, expected) {
            #expect(product.id.rawValue == row.0)
            #expect(product.name == row.1)
            #expect(product.description == row.2)
            #expect(product.quantity == row.3)
            #expect(product.price == usd(row.4))
            #expect(product.imageFile == row.0 + ".png")
        }
    }

    @Test func shippingMethodsMatchTheDomainPage() {
        let methods = DemoCatalog.shippingMethods.map { "\($0.id)|\($0.name)|\($0.description)|\($0.transitDays)|\($0.price.decimalString)" }
        #expect(
            methods == [
                "free|Free|Delivers in seven days|7|0.00",
                "standard|Standard|Delivers in four days|4|5.00",
                "expedited|Expedited|Delivers tomorrow|1|15.00",
            ]
        )
    }

    @Test func seedingBuildsTheInventoryAndRefusesToRunTwice() throws {
        var ledger = InMemoryLedger.seeded()
        #expect(ledger.products.count == 12 && ledger.shippingMethods.count == 3)
        #expect(ledger.products[pid("clock")]?.onHand == 10)
        #expect(ledger.log.count == 12 * 2 + 3)
        #expect(throws: InMemoryLedger.VersionConflict.self) { try ledger.commit(DemoCatalog.seedAppends(context: ctx)) }
    }

    @Test func slugs() {
        #expect(DomainIdentifierRules.slug("Chocolate Hearts") == "chocolate-hearts")
        #expect(DomainIdentifierRules.slug("  T--Ruler! ") == "t-ruler")
        #expect(DomainIdentifierRules.slug("#2 pencil") == "2-pencil")
    }

    @Test func identifierValidation() {
        #expect(ProductID("") == nil)
        #expect(ProductID("a/b") == nil)
        #expect(ProductID("é") == nil)
        #expect(ProductID(String(repeating: "x", count: 101)) == nil)
        #expect(ProductID(String(repeating: "x", count: 100)) != nil)
        #expect(OrderID("9F3C-1")?.streamID.rawValue == "order-9F3C-1")
        #expect(OrderID("9F3C-1")?.holdStreamID.rawValue == "hold-9F3C-1")
        #expect(sid("standard").streamID.rawValue == "shipping_method-standard")
    }
}
