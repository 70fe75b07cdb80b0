import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

struct ApplePayLedgerTests {
    @Test(arguments: [
        (5900, "840", usd("59.00"), ApplePayLedger.AmountCheck.match),
        (5800, "840", usd("59.00"), .amountMismatch(tokenMinorUnits: 5800, expected: usd("59.00"))),
        (590_000, "840", usd("59.00"), .amountMismatch(tokenMinorUnits: 590_000, expected: usd("59.00"))),
        (5900, "978", usd("59.00"), .currencyMismatch(tokenCurrency: "978", expected: .usd)),
        (5900, "999", usd("59.00"), .currencyMismatch(tokenCurrency: "999", expected: .usd)),
        (5900, "USD", usd("59.00"), .currencyMismatch(tokenCurrency: "USD", expected: .usd)),
        (5900, "978", eur("59.00"), .match),
        (59, "392", Money(minorUnits: 59, currency: .jpy), .match),
        (Int.max, "840", usd("59.00"), .amountMismatch(tokenMinorUnits: Int.max, expected: usd("59.00"))),
    ])
    func theTokenAmountMustBeTheOrderTotal(amount: Int, currency: String, total: Money, expected: ApplePayLedger.AmountCheck) {
        #expect(ApplePayLedger.check(tokenAmount: amount, tokenCurrencyCode: currency, against: total) == expected)
    }

    @Test func theOpenedOrdersTotalIsReadFromThePlan() throws {
        let ledger = InMemoryLedger.seeded()
        let plan = try PaymentFlow.placeOrder(
            PlaceOrder(
                orderID: oid("o-1"),
                lines: [RequestedLine(productID: pid("clock"))],
                shippingMethodID: sid("standard"),
                contactRef: "contact-1",
                claimedAmount: nil
            ),
            order: nil,
            products: ledger.products,
            shippingMethod: ledger.shippingMethods[sid("standard")],
            context: ctx
        ).get()
        #expect(ApplePayLedger.openedOrderTotal(plan) == usd("59.00"))
        #expect(ApplePayLedger.openedOrderTotal(AppendPlan([])) == nil)
    }

    @Test func streamsAreNamedByTheTransactionDigest() {
        let digest = String(repeating: "ab", count: 32)
        #expect(ApplePayLedger.markerStream(transactionDigest: digest).rawValue == "applepay-" + digest)
        #expect(ApplePayLedger.rejectionStream(transactionDigest: digest).rawValue == "applepay_rejected-" + digest)
    }

    @Test func eventsRoundTripWithSnakeCaseKeysAndNoCardholderFields() throws {
        let accepted = ApplePayTokenAccepted(
            orderID: oid("o-1"),
            transactionID: "c0ffee",
            network: "visa",
            lastFour: "3478",
            paymentDataType: "3DSecure",
            amount: usd("59.00"),
            signedAt: t0
        )
        let event = try NewEvent(type: ApplePayTokenAccepted.eventType, payload: accepted, effectiveAt: t0)
        #expect(
            event.data
                == #"{"amount":{"amount":"59.00","currency":"USD"},"last_four":"3478","network":"visa","order_id":"o-1","payment_data_type":"3DSecure","signed_at":"2025-06-15T15:06:40.000000Z","transaction_id":"c0ffee"}"#
        )
        #expect(try JSONDecoder().decode(ApplePayTokenAccepted.self, from: Data(event.data.utf8)) == accepted)

        let rejected = ApplePayTokenRejected(
            reason: "amount_mismatch",
            message: "the token's amount 5800 is not the order total",
            transactionID: "c0ffee",
            signedAt: t0,
            rejectedAt: t0.addingTimeInterval(1)
        )
        let data = try JSONEncoder().encode(rejected)
        #expect(try JSONDecoder().decode(ApplePayTokenRejected.self, from: data) == rejected)
        let keys = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]).keys.sorted()
        #expect(keys == ["message", "reason", "rejected_at", "signed_at", "transaction_id"])
        // Not domain events: a replay of the log skips them.
        #expect(!DomainEvent.knownTypes.map(\.type).contains(ApplePayTokenAccepted.eventType))
    }
}
