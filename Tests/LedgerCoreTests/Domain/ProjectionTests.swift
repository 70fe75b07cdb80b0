import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

struct ProjectionTests {
    let clock = pid("clock")
    let order1 = oid("o-1")

    func authorizedLedger() -> InMemoryLedger { try! InMemoryLedger.withAuthorizedOrder(order1) }

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
        row = InventoryRow.apply(
            .product(.priceChanged(ProductPriceChanged(productID: clock, previousPrice: usd("50.00"), price: usd("45.50")))),
            to: row
        )
        #expect(row?.price == usd("45.50"))
        row = InventoryRow.apply(.product(.stockReceived(StockReceived(productID: clock, quantity: 10))), to: row)
        row = InventoryRow.apply(.product(.stockReserved(StockReserved(productID: clock, orderID: order1, quantity: 3))), to: row)
        #expect(row?.quantityOnHand == 10 && row?.reserved == 3 && row?.available == 7)
        row = InventoryRow.apply(
            .product(.reservationReleased(ReservationReleased(productID: clock, orderID: order1, quantity: 1, reason: .operatorRequest))),
            to: row
        )
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

    static func orderState(_ log: [DomainEvent], _ id: OrderID) -> OrderState? {
        OrderState.fold(log.compactMap { if case .order(let e) = $0, e.orderID == id { e } else { nil } })
    }

    static func holdState(_ log: [DomainEvent], _ id: OrderID) -> HoldState? {
        HoldState.fold(log.compactMap { if case .hold(let e) = $0, e.orderID == id { e } else { nil } })
    }

    @Test func orderAndHoldAfterAuthorization() throws {
        let log = authorizedLedger().log
        let order = try #require(Self.orderState(log, order1))
        let hold = try #require(Self.holdState(log, order1))
        #expect(order.status == .authorized && order.pspReference == "PSP0001")
        #expect(order.amounts.total == usd("59.00") && order.lines.count == 1 && order.contactRef == "contact-1")
        #expect(hold.balance.authorized == usd("59.00") && hold.lastFour == "4242" && hold.network == .visa)
        #expect(hold.expiresAt == t0.addingTimeInterval(7 * 86_400))
    }

    @Test func orderFollowsDeclineUnknownAndCancel() throws {
        func order(_ event: DomainEvent) -> OrderEvent { if case .order(let e) = event { e } else { preconditionFailure() } }
        var state = OrderState.evolve(nil, order(EventSamples.all[8]))
        #expect(state?.status == .pendingPayment)
        state = OrderState.evolve(state, order(EventSamples.all[11]))
        #expect(state?.status == .paymentUnknown && state?.lastResponseCode == .issuerUnavailable)
        state = OrderState.evolve(state, order(EventSamples.all[10]))
        #expect(state?.status == .declined && state?.lastResponseCode == .insufficientFunds && state?.lastResponseMessage == "insufficient funds")
        state = OrderState.evolve(state, order(EventSamples.all[12]))
        #expect(state?.status == .cancelled && state?.cancellationReason == .paymentNotFound)
        #expect(OrderState.evolve(nil, order(EventSamples.all[9])) == nil)
    }

    @Test func replayingTheEncodedLogGivesTheSameProjections() throws {
        let ledger = authorizedLedger()
        var inline = InventoryProjection()
        for event in ledger.log { inline.apply(event) }
        var replayed = InventoryProjection()
        var decodedLog: [DomainEvent] = []
        for event in ledger.log {
            let stored = try event.newEvent(eventID: UUID(), effectiveAt: t0)
            let decoded = try DomainEvent.decode(type: stored.type, schemaVersion: stored.schemaVersion, json: stored.data)
            replayed.apply(decoded)
            decodedLog.append(decoded)
        }
        #expect(replayed == inline)
        #expect(Self.orderState(decodedLog, order1) == Self.orderState(ledger.log, order1))
        #expect(Self.holdState(decodedLog, order1) == Self.holdState(ledger.log, order1))
    }
}
