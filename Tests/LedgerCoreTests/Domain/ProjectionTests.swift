import Foundation
import Testing
@testable import LedgerCore

struct ProjectionTests {
    let clock = pid("clock")
    let order1 = oid("o-1")

    func authorizedLedger() -> InMemoryLedger {
        var ledger = InMemoryLedger.seeded()
        try! ledger.commit(PaymentFlow.placeOrder(
            PlaceOrder(orderID: order1, lines: [RequestedLine(productID: clock)], shippingMethodID: sid("standard"),
                       contactRef: "contact-1", claimedAmount: ClaimedAmount(minorUnits: 5900, currencyCode: "USD")),
            order: nil, products: ledger.products, shippingMethod: ledger.shippingMethods[sid("standard")], context: ctx).get())
        let order = ledger.orders[order1]!
        try! ledger.commit(PaymentFlow.recordAuthorization(Responses.approved(order), order: order, products: ledger.products(for: order), context: ctx).get())
        return ledger
    }

    @Test func inventoryAfterTheAcceptancePayment() throws {
        var inventory = InventoryProjection()
        for event in authorizedLedger().log { inventory.apply(event) }
        #expect(inventory.rows.count == 12)
        #expect(inventory.rows.map(\.productID.rawValue).prefix(3) == ["clock", "pen", "pencil"])
        let row = try #require(inventory.rowsByID[clock])
        #expect(row.name == "Clock" && row.description == "Wooden clock" && row.imageURI == "clock.png")
        #expect(row.quantityOnHand == 10 && row.reserved == 1 && row.available == 9 && row.price == usd("50.00"))
    }

    @Test func inventoryRowFollowsEveryProductEvent() throws {
        var row = InventoryRow.apply(EventSamples.all[0], to: nil)
        #expect(row?.quantityOnHand == 0 && row?.price == usd("50.00"))
        row = InventoryRow.apply(.product(.priceChanged(ProductPriceChanged(productID: clock, previousPrice: usd("50.00"), price: usd("45.50")))), to: row)
        #expect(row?.price == usd("45.50"))
        row = InventoryRow.apply(.product(.stockReceived(StockReceived(productID: clock, quantity: 10))), to: row)
        row = InventoryRow.apply(.product(.stockReserved(StockReserved(productID: clock, orderID: order1, quantity: 3))), to: row)
        #expect(row?.quantityOnHand == 10 && row?.reserved == 3 && row?.available == 7)
        row = InventoryRow.apply(.product(.reservationReleased(ReservationReleased(productID: clock, orderID: order1, quantity: 1, reason: .operatorRequest))), to: row)
        row = InventoryRow.apply(.product(.stockSold(StockSold(productID: clock, orderID: order1, quantity: 2))), to: row)
        #expect(row?.quantityOnHand == 8 && row?.reserved == 0 && row?.available == 8)
        // Events of other aggregates leave the row alone; stock before listing makes no row.
        #expect(InventoryRow.apply(EventSamples.all[9], to: row) == row)
        #expect(InventoryRow.apply(.product(.stockReceived(StockReceived(productID: clock, quantity: 1))), to: nil) == nil)
    }

    @Test func shippingMethodsProjection() {
        var methods = ShippingMethodsProjection()
        for event in InMemoryLedger.seeded().log { methods.apply(event) }
        #expect(methods.rows.map(\.name) == ["Free", "Standard", "Expedited"])
        methods.apply(EventSamples.all[7])
        #expect(methods.rowsByID[sid("standard")]?.price == usd("0.00"))
        #expect(methods.rows[1].description == "Delivers in four days" && methods.rows[1].transitDays == 4)
    }

    @Test func orderSummaryAfterAuthorization() throws {
        var orders = OrderSummaryProjection()
        for event in authorizedLedger().log { orders.apply(event) }
        let summary = try #require(orders.rowsByID[order1])
        #expect(summary.status == .authorized && summary.pspReference == "PSP0001")
        #expect(summary.amounts.total == usd("59.00") && summary.lines.count == 1 && summary.contactRef == "contact-1")
        #expect(summary.hold?.amount == usd("59.00") && summary.hold?.lastFour == "4242" && summary.hold?.network == .visa)
        #expect(summary.hold?.expiresAt == t0.addingTimeInterval(7 * 86_400))
    }

    @Test func orderSummaryFollowsDeclineUnknownAndCancel() throws {
        var row = OrderSummary.apply(EventSamples.all[8], to: nil)
        #expect(row?.status == .pendingPayment)
        row = OrderSummary.apply(EventSamples.all[11], to: row)
        #expect(row?.status == .paymentUnknown && row?.responseCode == .issuerUnavailable)
        row = OrderSummary.apply(EventSamples.all[10], to: row)
        #expect(row?.status == .declined && row?.responseCode == .insufficientFunds && row?.responseMessage == "insufficient funds")
        row = OrderSummary.apply(EventSamples.all[12], to: row)
        #expect(row?.status == .cancelled && row?.cancellationReason == .paymentNotFound)
        #expect(OrderSummary.apply(EventSamples.all[9], to: nil) == nil)
        #expect(OrderSummary.apply(EventSamples.all[2], to: row) == row)
    }

    @Test func replayingTheEncodedLogGivesTheSameProjections() throws {
        let ledger = authorizedLedger()
        var inline = (InventoryProjection(), OrderSummaryProjection())
        for event in ledger.log { inline.0.apply(event); inline.1.apply(event) }
        var replayed = (InventoryProjection(), OrderSummaryProjection())
        for event in ledger.log {
            let stored = try event.newEvent(eventID: UUID(), effectiveAt: t0)
            let decoded = try DomainEvent.decode(type: stored.type, schemaVersion: stored.schemaVersion, json: stored.data)
            replayed.0.apply(decoded)
            replayed.1.apply(decoded)
        }
        #expect(replayed.0 == inline.0)
        #expect(replayed.1 == inline.1)
    }
}
