import Foundation
import LedgerAcquirer
import LedgerCore
import Testing

struct AuthorizationTests {
    @Test(
        "approving test tokens place a hold with network, funding and last four",
        arguments: [
            ("tok_visa", CardNetwork.visa, FundingType.credit),
            ("tok_mastercard", .mastercard, .credit),
            ("tok_amex", .amex, .credit),
            ("tok_discover", .discover, .credit),
            ("tok_visa_debit", .visa, .debit),
        ]
    )
    func approvingTokens(token: String, network: CardNetwork, funding: FundingType) throws {
        var state = AcquirerModelState(seed: 1)
        let response = try state.authorize(authorization("order-1", usd(5000), token: token), now: monday)
        #expect(response.responseCode == .approved)
        #expect(response.responseCode.isApproved && !response.responseCode.isUnknownOutcome)
        #expect(response.network == network && response.fundingType == funding)
        #expect(response.lastFour?.count == 4)
        #expect(response.authCode?.count == 6)
        #expect(response.pspReference?.count == 16)
        #expect(response.holdExpiresAt != nil)
        #expect(state.openToBuy(token: token) == usd(1_000_000 - 5000))
        #expect(state.balance(of: "order-1")?.open == usd(5000))
    }

    @Test(
        "declining test tokens answer their ISO 8583 code and hold nothing",
        arguments: [
            ("tok_chargeDeclined", "05"),
            ("tok_chargeDeclinedInsufficientFunds", "51"),
            ("tok_chargeDeclinedExpiredCard", "54"),
            ("tok_chargeDeclinedLostCard", "41"),
            ("tok_chargeDeclinedStolenCard", "43"),
            ("tok_chargeDeclinedTransactionNotAllowed", "57"),
            ("tok_chargeDeclinedRestrictedCard", "62"),
            ("tok_chargeDeclinedExceedsAmountLimit", "61"),
            ("tok_chargeDeclinedVelocityExceeded", "65"),
            ("tok_unknown_card", "14"),
        ]
    )
    func decliningTokens(token: String, code: String) throws {
        var state = AcquirerModelState(seed: 1)
        let response = try state.authorize(authorization("order-1", usd(5000), token: token), now: monday)
        #expect(response.responseCode.rawValue == code)
        #expect(!response.responseCode.isApproved && !response.responseCode.isUnknownOutcome)
        #expect(response.authCode == nil && response.holdExpiresAt == nil)
        #expect(response.pspReference != nil)
        #expect(state.balance(of: "order-1") == nil)
        #expect(state.openToBuy(token: token) == usd(1_000_000))
        // A decline is known to the acquirer: the query finds it, as declined.
        guard case .found(let details) = state.query(merchantReference: "order-1", now: monday) else {
            Issue.record("declined payment not found")
            return
        }
        #expect(details.status == .declined && details.balance == nil)
        // There is no hold to capture.
        #expect(
            errorCode {
                try state.capture(
                    CaptureRequest(
                        authorizationReference: "order-1",
                        modificationReference: "c",
                        amount: usd(100),
                        isFinal: false
                    ),
                    now: monday
                )
            } == .notAuthorized
        )
    }

    @Test("tok_chargeDeclinedProcessingError answers 91: unknown outcome, nothing placed, query says not found")
    func processingErrorIsUnknownOutcome() throws {
        var state = AcquirerModelState(seed: 1)
        let request = authorization("order-1", usd(5000), token: "tok_chargeDeclinedProcessingError")
        let response = try state.authorize(request, now: monday)
        #expect(response.responseCode == .issuerUnavailable)
        #expect(response.responseCode.isUnknownOutcome && !response.responseCode.isApproved)
        #expect(response.pspReference == nil)
        #expect(state.query(merchantReference: "order-1", now: monday) == .notFound(merchantReference: "order-1"))
        #expect(state.openToBuy(token: "tok_chargeDeclinedProcessingError") == usd(1_000_000))
        #expect(state.invariantViolations().isEmpty)
        let system = try state.authorize(authorization("order-2", usd(5000), token: "tok_chargeDeclinedSystemError"), now: monday)
        #expect(system.responseCode == .systemError && system.responseCode.isUnknownOutcome)
    }

    @Test("with placedButAnswerLost, a 91 hides a real hold that the query and a retry reveal")
    func processingErrorWithLostAnswer() throws {
        var state = AcquirerModelState(seed: 1, configuration: AcquirerModelConfiguration(unknownOutcome: .placedButAnswerLost))
        let request = authorization("order-1", usd(5000), token: "tok_chargeDeclinedProcessingError")
        let first = try state.authorize(request, now: monday)
        #expect(first.responseCode == .issuerUnavailable && first.pspReference == nil)
        guard case .found(let details) = state.query(merchantReference: "order-1", now: monday + 60) else {
            Issue.record("placed hold not found")
            return
        }
        #expect(details.status == .open && details.authorization.responseCode == .approved)
        #expect(details.balance?.open == usd(5000))
        let retry = try state.authorize(request, now: monday + 120)
        #expect(retry == details.authorization)
        #expect(state.openToBuy(token: "tok_chargeDeclinedProcessingError") == usd(1_000_000 - 5000))
    }

    @Test("holds consume open-to-buy; beyond it the issuer answers 51; releases restore it")
    func openToBuy() throws {
        let config = AcquirerModelConfiguration(creditLimits: [CreditLimit(token: "tok_visa", limit: usd(10_000))])
        var state = AcquirerModelState(seed: 7, configuration: config)
        _ = try state.approve("a", usd(6000))
        #expect(state.openToBuy(token: "tok_visa") == usd(4000))
        let over = try state.authorize(authorization("b", usd(4001)), now: monday)
        #expect(over.responseCode == .insufficientFunds)
        #expect(state.openToBuy(token: "tok_visa") == usd(4000))
        _ = try state.approve("c", usd(4000))
        #expect(state.openToBuy(token: "tok_visa") == usd(0))
        // Other cards have their own line.
        #expect(state.openToBuy(token: "tok_mastercard") == usd(1_000_000))
        // Void restores.
        _ = try state.reverse(ReversalRequest(authorizationReference: "c", modificationReference: "void-c"), now: monday)
        #expect(state.openToBuy(token: "tok_visa") == usd(4000))
        // Final capture of part restores the remainder, not the captured part.
        _ = try state.capture(
            CaptureRequest(authorizationReference: "a", modificationReference: "cap-a", amount: usd(2500), isFinal: true),
            now: monday
        )
        #expect(state.openToBuy(token: "tok_visa") == usd(7500))
        // A refund gives the credit back.
        _ = try state.refund(RefundRequest(authorizationReference: "a", modificationReference: "ref-a", amount: usd(500)), now: monday)
        #expect(state.openToBuy(token: "tok_visa") == usd(8000))
        #expect(state.invariantViolations().isEmpty)
    }

    @Test("an authorization in a currency other than the card account's is declined with 57")
    func foreignCurrency() throws {
        var state = AcquirerModelState(seed: 1)
        let response = try state.authorize(authorization("eur", Money(minorUnits: 500, currency: .eur)), now: monday)
        #expect(response.responseCode == .transactionNotPermitted)
    }

    @Test("authorizing the same merchant reference twice returns the first answer and consumes once")
    func idempotentAuthorize() throws {
        var state = AcquirerModelState(seed: 3)
        let request = authorization("order-1", usd(5000))
        let first = try state.authorize(request, now: monday)
        let again = try state.authorize(request, now: monday + 3600)
        #expect(first == again)
        #expect(state.openToBuy(token: "tok_visa") == usd(1_000_000 - 5000))
        // The same reference for a different request is a conflict, not a second hold.
        #expect(errorCode { try state.authorize(authorization("order-1", usd(5001)), now: monday) } == .duplicateReference)
        // Declines are idempotent too.
        let declined = authorization("order-2", usd(100), token: "tok_chargeDeclined")
        #expect(try state.authorize(declined, now: monday) == state.authorize(declined, now: monday + 10))
    }

    @Test("query by reference: approved payments with their details and history; unknown ones not found")
    func queryByReference() throws {
        var state = AcquirerModelState(seed: 3)
        let approved = try state.approve("order-1", usd(5000))
        _ = try state.capture(
            CaptureRequest(authorizationReference: "order-1", modificationReference: "cap-1", amount: usd(2000), isFinal: false),
            now: monday
        )
        guard case .found(let details) = state.query(merchantReference: "order-1", now: monday) else {
            Issue.record("not found")
            return
        }
        #expect(details.authorization == approved)
        #expect(details.status == .open)
        #expect(details.balance?.captured == usd(2000) && details.balance?.open == usd(3000))
        #expect(details.modifications.map(\.modificationReference) == ["cap-1"])
        #expect(state.query(merchantReference: "never-sent", now: monday) == .notFound(merchantReference: "never-sent"))
    }

    @Test("immediate capture intent captures the whole amount at authorization")
    func immediateCapture() throws {
        var state = AcquirerModelState(seed: 3)
        let response = try state.authorize(authorization("sale-1", usd(1234), intent: .immediate), now: monday)
        #expect(response.immediateCapture?.kind == .capture)
        #expect(response.immediateCapture?.modificationReference == "sale-1")
        #expect(state.balance(of: "sale-1")?.captured == usd(1234))
        guard case .found(let details) = state.query(merchantReference: "sale-1", now: monday) else {
            Issue.record("not found")
            return
        }
        #expect(details.status == .closed)
    }

    @Test("network tokens: approved with network and last four from the number; bad numbers 14; expired 54")
    func networkTokens() throws {
        var state = AcquirerModelState(seed: 3)
        let token = NetworkTokenData(tokenNumber: "4111111111111111", expiration: "281231", cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        let approved = try state.authorize(
            AuthorizationRequest(
                merchantReference: "nt-1",
                amount: usd(500),
                paymentMethod: .networkToken(token)
            ),
            now: monday
        )
        #expect(approved.responseCode == .approved && approved.network == .visa && approved.lastFour == "1111")
        var bad = token
        bad.tokenNumber = "4111111111111112"
        let invalid = try state.authorize(
            AuthorizationRequest(
                merchantReference: "nt-2",
                amount: usd(500),
                paymentMethod: .networkToken(bad)
            ),
            now: monday
        )
        #expect(invalid.responseCode == .invalidCardNumber)
        var expired = token
        expired.expiration = "241231"
        let old = try state.authorize(
            AuthorizationRequest(
                merchantReference: "nt-3",
                amount: usd(500),
                paymentMethod: .networkToken(expired)
            ),
            now: monday
        )
        #expect(old.responseCode == .expiredCard)
        // The number never reaches the persisted state.
        let snapshot = String(decoding: try state.snapshot(), as: UTF8.self)
        #expect(!snapshot.contains("4111111111111111"))
        #expect(!token.description.contains("4111111111111111"))
    }

    @Test("invalid requests are refused: empty reference, non-positive amount")
    func invalidRequests() {
        var state = AcquirerModelState(seed: 3)
        #expect(errorCode { try state.authorize(authorization("", usd(100)), now: monday) } == .invalidRequest)
        #expect(errorCode { try state.authorize(authorization("x", usd(0)), now: monday) } == .invalidAmount)
        #expect(errorCode { try state.authorize(authorization("x", usd(-5)), now: monday) } == .invalidAmount)
    }

    @Test("response codes: parsing, approval and unknown outcome")
    func responseCodes() throws {
        #expect(ResponseCode(rawValue: "00") == .approved)
        #expect(ResponseCode(rawValue: "0") == nil && ResponseCode(rawValue: "000") == nil)
        let codes = ["05", "14", "41", "43", "51", "54", "57", "61", "62", "65"].compactMap(ResponseCode.init(rawValue:))
        #expect(codes.count == 10 && codes.allSatisfy { !$0.isApproved && !$0.isUnknownOutcome })
        #expect(ResponseCode.issuerUnavailable.isUnknownOutcome && ResponseCode.systemError.isUnknownOutcome)
        let encoded = try JSONEncoder().encode([ResponseCode.insufficientFunds])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["51"]"#)
        #expect(try JSONDecoder().decode([ResponseCode].self, from: encoded) == [.insufficientFunds])
    }
}
