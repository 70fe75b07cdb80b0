import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// One sample of every event type the domain writes.
enum EventSamples {
    static let clock = pid("clock")
    static let order = oid("o-1")
    static let amounts = try! OrderPricing.price(
        lines: [PricingLine(productID: clock, name: "Clock", unitPrice: usd("50.00"), quantity: 1)],
        shipping: usd("5.00"),
        policy: .storefront
    ).get()

    static let all: [DomainEvent] = [
        .product(
            .listed(
                ProductListed(
                    productID: clock,
                    sku: "clock",
                    name: "Clock",
                    description: "Wooden clock \"oak\" / é",
                    imageFile: "clock.png",
                    price: usd("50.00")
                )
            )
        ),
        .product(.priceChanged(ProductPriceChanged(productID: clock, previousPrice: usd("50.00"), price: usd("45.50")))),
        .product(.stockReceived(StockReceived(productID: clock, quantity: 10))),
        .product(.stockReserved(StockReserved(productID: clock, orderID: order, quantity: 1))),
        .product(.reservationReleased(ReservationReleased(productID: clock, orderID: order, quantity: 1, reason: .paymentDeclined))),
        .product(.stockSold(StockSold(productID: clock, orderID: order, quantity: 1))),
        .shippingMethod(
            .listed(
                ShippingMethodListed(
                    shippingMethodID: sid("standard"),
                    name: "Standard",
                    description: "Delivers in four days",
                    transitDays: 4,
                    price: usd("5.00")
                )
            )
        ),
        .shippingMethod(.priceChanged(ShippingMethodPriceChanged(shippingMethodID: sid("standard"), previousPrice: usd("5.00"), price: usd("0.00")))),
        .order(
            .opened(
                OrderOpened(
                    orderID: order,
                    merchantReference: "o-1",
                    lines: amounts.lines,
                    shipping: ShippingSelection(shippingMethodID: sid("standard"), name: "Standard", transitDays: 4, price: usd("5.00")),
                    amounts: amounts.amounts,
                    contactRef: "contact-1",
                    openedAt: t0
                )
            )
        ),
        .order(.authorized(OrderAuthorized(orderID: order, pspReference: "PSP0001", amount: usd("59.00"), authorizedAt: t0))),
        .order(.paymentDeclined(PaymentDeclined(orderID: order, responseCode: .insufficientFunds, message: "insufficient funds", pspReference: nil))),
        .order(.paymentOutcomeUnknown(PaymentOutcomeUnknown(orderID: order, responseCode: .issuerUnavailable, message: "issuer unavailable"))),
        .order(.cancelled(OrderCancelled(orderID: order, reason: .paymentNotFound))),
        .hold(
            .placed(
                AuthorizationHoldPlaced(
                    orderID: order,
                    merchantReference: "o-1",
                    pspReference: "PSP0001",
                    authCode: "A1B2C3",
                    amount: usd("59.00"),
                    network: .mastercard,
                    fundingType: .debit,
                    lastFour: "4444",
                    expiresAt: t0.addingTimeInterval(604_800.25),
                    authorizedAt: t0
                )
            )
        ),
        .order(.paymentUpdated(OrderPaymentUpdated(orderID: order, operation: "capture", status: .partiallyCaptured))),
        .order(.shipped(OrderShipped(orderID: order, carrier: "UPS", tracking: nil, shippedAt: t0, status: .shipped))),
        .hold(
            .incremented(
                HoldIncremented(
                    orderID: order,
                    amount: usd("5.00"),
                    modificationReference: "o-1-increment-k1",
                    pspModificationReference: "M1",
                    incrementedAt: t0
                )
            )
        ),
        .hold(
            .captured(
                HoldCaptured(
                    orderID: order,
                    amount: usd("40.00"),
                    isFinal: true,
                    released: usd("24.00"),
                    modificationReference: "o-1-capture-k2",
                    pspModificationReference: "M2",
                    capturedAt: t0
                )
            )
        ),
        .hold(
            .reversed(
                HoldReversed(
                    orderID: order,
                    amount: usd("1.00"),
                    modificationReference: "o-1-void-k3",
                    pspModificationReference: "M3",
                    reversedAt: t0
                )
            )
        ),
        .hold(.expired(HoldExpired(orderID: order, amount: usd("2.00"), expiredAt: t0))),
        .hold(
            .refunded(
                HoldRefunded(
                    orderID: order,
                    amount: usd("3.00"),
                    reason: "damaged",
                    modificationReference: "o-1-refund-k4",
                    pspModificationReference: "M4",
                    refundedAt: t0
                )
            )
        ),
    ]
}

struct EventCodingTests {
    @Test func samplesCoverEveryKnownType() {
        #expect(Set(EventSamples.all.map(\.type)) == Set(DomainEvent.knownTypes.map(\.type)))
        #expect(DomainEvent.knownTypes.count == 21)
    }

    @Test(arguments: EventSamples.all)
    func roundTrip(event: DomainEvent) throws {
        let data = try event.encodedData()
        let decoded = try DomainEvent.decode(type: event.type, schemaVersion: event.schemaVersion, data: data)
        #expect(decoded == event)
        #expect(try decoded.encodedData() == data)
        #expect(decoded.streamID == event.streamID)
    }

    @Test(arguments: EventSamples.all)
    func encodingIsDeterministicWithSortedSnakeCaseKeys(event: DomainEvent) throws {
        let first = try event.encodedData()
        let second = try event.encodedData()
        #expect(first == second)
        let json = String(decoding: first, as: UTF8.self)
        // No camelCase key and no JSON number for money anywhere.
        #expect(json.range(of: #""[a-z]+[A-Z][A-Za-z]*":"#, options: .regularExpression) == nil)
        #expect(json.range(of: #""amount":[0-9-]"#, options: .regularExpression) == nil)
        let object = try #require(try JSONSerialization.jsonObject(with: first) as? [String: Any])
        let keys = Array(object.keys)
        #expect(json.hasPrefix("{\"\(keys.sorted()[0])\""))
    }

    @Test func goldenJSON() throws {
        #expect(
            String(decoding: try EventSamples.all[0].encodedData(), as: UTF8.self)
                == #"{"description":"Wooden clock \"oak\" / é","image_file":"clock.png","name":"Clock","price":{"amount":"50.00","currency":"USD"},"product_id":"clock","sku":"clock"}"#
        )
        #expect(
            String(decoding: try EventSamples.all[9].encodedData(), as: UTF8.self)
                == #"{"amount":{"amount":"59.00","currency":"USD"},"authorized_at":"2025-06-15T15:06:40.000000Z","order_id":"o-1","psp_reference":"PSP0001"}"#
        )
        let opened = String(decoding: try EventSamples.all[8].encodedData(), as: UTF8.self)
        #expect(opened.contains(#""tax_policy":{"applies_to_shipping":false,"rate":"0.08","rounding":"half_up"}"#))
        #expect(opened.contains(#""total":{"amount":"59.00","currency":"USD"}"#))
        #expect(opened.contains(#""contact_ref":"contact-1""#))
        let hold = String(decoding: try EventSamples.all[13].encodedData(), as: UTF8.self)
        #expect(hold.contains(#""expires_at":"2025-06-22T15:06:40.250000Z""#))
        #expect(hold.contains(#""last_four":"4444""#) && hold.contains(#""funding_type":"debit""#))
    }

    @Test func newEventCarriesTypeVersionAndCallerSuppliedIdentity() throws {
        let id = UUID(uuidString: "00000000-0000-0000-0000-000000000001")!
        let event = EventSamples.all[9]
        let new = try event.newEvent(eventID: id, effectiveAt: t0)
        #expect(new.eventID == id && new.type == "OrderAuthorized" && new.schemaVersion == 1 && new.effectiveAt == t0)
        #expect(new.data == String(decoding: try event.encodedData(), as: UTF8.self))
        #expect(try DomainEvent.decode(type: new.type, schemaVersion: new.schemaVersion, json: new.data) == event)
        let recorded = RecordedEvent(
            position: 1,
            streamID: event.streamID,
            streamVersion: 2,
            eventID: id,
            type: new.type,
            schemaVersion: new.schemaVersion,
            data: new.data,
            metadata: "{}",
            effectiveAtMicros: t0.epochMicroseconds,
            recordedAtMicros: t0.epochMicroseconds,
            prevHash: [],
            hash: []
        )
        #expect(try DomainEvent.decode(recorded) == event)
    }

    @Test func decodingErrorsAreTyped() {
        #expect(throws: EventCodingError(.unknownType, type: "OrderTeleported", "unknown event type")) {
            try DomainEvent.decode(type: "OrderTeleported", schemaVersion: 1, json: "{}")
        }
        #expect(throws: EventCodingError(.unsupportedSchemaVersion, type: "StockReceived", "schema version 2")) {
            try DomainEvent.decode(type: "StockReceived", schemaVersion: 2, json: #"{"product_id":"clock","quantity":1}"#)
        }
        func code(_ type: String, _ json: String) -> EventCodingError.Code? {
            do {
                _ = try DomainEvent.decode(type: type, schemaVersion: 1, json: json)
                return nil
            } catch { return error.code }
        }
        #expect(code("StockReceived", #"{"product_id":"clock"}"#) == .invalidPayload)
        #expect(code("StockReceived", #"{"product_id":"a/b","quantity":1}"#) == .invalidPayload)
        // Money as a JSON number, with too many digits, or in an unknown currency is refused.
        #expect(
            code(
                "ProductPriceChanged",
                #"{"price":{"amount":50.0,"currency":"USD"},"previous_price":{"amount":"1.00","currency":"USD"},"product_id":"clock"}"#
            ) == .invalidPayload
        )
        #expect(
            code(
                "ProductPriceChanged",
                #"{"price":{"amount":"50.001","currency":"USD"},"previous_price":{"amount":"1.00","currency":"USD"},"product_id":"clock"}"#
            ) == .invalidPayload
        )
        #expect(
            code(
                "ProductPriceChanged",
                #"{"price":{"amount":"50.00","currency":"XXX"},"previous_price":{"amount":"1.00","currency":"USD"},"product_id":"clock"}"#
            ) == .invalidPayload
        )
        #expect(
            code(
                "OrderAuthorized",
                #"{"amount":{"amount":"59.00","currency":"USD"},"authorized_at":"2025-06-15 15:06:40","order_id":"o-1","psp_reference":"P"}"#
            ) == .invalidPayload
        )
        #expect(code("PaymentDeclined", #"{"message":"m","order_id":"o-1","response_code":"5"}"#) == .invalidPayload)
        #expect(code("StockReceived", #"{"product_id":"clock","quantity":1}"#) == nil)
    }

    @Test func timestampFormat() {
        #expect(RFC3339.format(0) == "1970-01-01T00:00:00.000000Z")
        #expect(RFC3339.format(-1) == "1969-12-31T23:59:59.999999Z")
        #expect(RFC3339.exactMicros("1969-12-31T23:59:59.999999Z") == -1)
        #expect(RFC3339.exactMicros("2024-02-29T12:34:56.789012Z") == RFC3339.exactMicros("2024-02-29T00:00:00.000000Z")! + 45_296_789_012)
        #expect(RFC3339.exactMicros("2025-02-29T00:00:00.000000Z") == nil)
        #expect(RFC3339.exactMicros("2025-01-01T24:00:00.000000Z") == nil)
        #expect(RFC3339.exactMicros("2025-01-01T00:00:00Z") == nil)
        // Sub-microsecond input is normalised on the way in, so equality survives the round trip.
        let odd = OrderAuthorized(orderID: oid("o"), pspReference: "p", amount: usd("1.00"), authorizedAt: Date(timeIntervalSince1970: 1.0000004))
        #expect(odd.authorizedAt == Date(epochMicroseconds: 1_000_000))
    }

    @Test func rateFormat() {
        #expect(DecimalRate.format(Rate(numerator: 8, denominator: 100)) == "0.08")
        #expect(DecimalRate.format(Rate(numerator: 825, denominator: 10_000)) == "0.0825")
        #expect(DecimalRate.format(Rate(numerator: 3, denominator: 1)) == "3")
        #expect(DecimalRate.format(Rate(numerator: 125, denominator: 100)) == "1.25")
        #expect(DecimalRate.format(Rate(numerator: 2, denominator: 25)) == "2/25")
    }
}
