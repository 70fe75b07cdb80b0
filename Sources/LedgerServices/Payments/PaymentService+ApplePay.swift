import Crypto
import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPayments
import Logging
import Metrics

// `POST /payment` with `gateway: "applepay"`: the ledger verifies and decrypts the token itself.
//
//   verify (signature, chain, markers, freshness, merchant key) → applicationData → decrypt
//   → transaction id not used before (quick read of its marker stream)
//   → [placeOrder] token amount and currency = the order's server-computed total
//   → one append: order opened + stock reserved + ApplePayTokenAccepted on `applepay-<digest>` (no stream)
//   → authorize with the network token (device PAN, expiry, cryptogram, ECI) → record, as with any card.
//
// Every refusal happens before the order append and before any authorization. A refusal of a token that is
// genuinely Apple's (its chain verified) leaves one ApplePayTokenRejected audit event per token
// (see LedgerCore's ApplePay.swift); other refusals append nothing. The device PAN and the cryptogram exist
// only in ``AcceptedApplePayToken/payment`` (redacted when printed) and in the acquirer call.

/// A token that verified, matched the app's applicationData and decrypted.
struct AcceptedApplePayToken: Sendable {
    /// Cardholder data: its description, reflection and logging are redacted by `LedgerPayments`.
    let payment: ApplePayPaymentData
    let genuine: GenuineApplePayToken

    /// What the acquirer receives: exactly what a card network token carries.
    var networkToken: NetworkTokenData {
        NetworkTokenData(
            network: payment.network.flatMap { LedgerCore.CardNetwork(rawValue: $0.rawValue) },
            tokenNumber: payment.applicationPrimaryAccountNumber,
            expiration: payment.applicationExpirationDate,
            cryptogram: payment.onlinePaymentCryptogram ?? "",
            eci: payment.eciIndicator
        )
    }

    /// The marker append for the order `plan` opens: refused unless the token's amount and currency are the
    /// order's total as the server priced it.
    func markerAppend(for plan: AppendPlan, orderID: OrderID, now: Date) throws -> StreamAppend {
        guard let total = ApplePayLedger.openedOrderTotal(plan) else { throw ServiceError.internalFailure }
        let check = ApplePayLedger.check(
            tokenAmount: payment.transactionAmount,
            tokenCurrencyCode: payment.currencyCode,
            against: total
        )
        switch check {
        case .match: break
        case .currencyMismatch:
            throw ApplePayRejection(reason: "currency_mismatch", message: check.description, genuine: genuine)
        case .amountMismatch:
            throw ApplePayRejection(reason: "amount_mismatch", message: check.description, genuine: genuine)
        }
        let accepted = ApplePayTokenAccepted(
            orderID: orderID,
            transactionID: genuine.transactionID,
            network: payment.network?.rawValue,
            lastFour: payment.last4,
            paymentDataType: payment.paymentDataType.rawValue,
            amount: total,
            signedAt: genuine.signedAt
        )
        return StreamAppend(
            streamID: genuine.markerStream,
            expectedVersion: .noStream,
            events: [
                try NewEvent(
                    type: ApplePayTokenAccepted.eventType,
                    schemaVersion: ApplePayTokenAccepted.schemaVersion,
                    payload: accepted,
                    effectiveAt: now
                )
            ]
        )
    }
}

/// What identifies a token whose signature and chain verified: safe to store.
struct GenuineApplePayToken: Sendable, Hashable {
    /// `header.transactionId` as lowercase hex.
    let transactionID: String
    /// Lowercase hex SHA-256 of the transaction id bytes: names the token's streams.
    let transactionDigest: String
    let signedAt: Date

    init(fields: ApplePayToken.DecodedFields, signedAt: Date) {
        transactionID = fields.canonicalTransactionId
        transactionDigest = Hex.encode(SHA256.hash(data: fields.transactionId))
        self.signedAt = signedAt
    }

    var markerStream: StreamID { ApplePayLedger.markerStream(transactionDigest: transactionDigest) }
    var rejectionStream: StreamID { ApplePayLedger.rejectionStream(transactionDigest: transactionDigest) }
}

/// An Apple Pay token the ledger refuses. `reason` is the stable code (the `LedgerPayments` code, or
/// `amount_mismatch`, `currency_mismatch`, `replayed_transaction`, `unsupported_payment_data_type`); the
/// client sees it as `applepay_<reason>`.
@MemberwiseInit
struct ApplePayRejection: Error, Sendable {
    let reason: String
    let message: String
    /// Set when the token is genuinely Apple's: the rejection is then recorded (once per token).
    let genuine: GenuineApplePayToken?

    init(_ error: ApplePayError, genuine: GenuineApplePayToken?) {
        self.init(reason: error.code.rawValue, message: error.message, genuine: genuine)
    }

    /// Reasons that mean a misconfigured server, not a bad token.
    static let serverFaults: Set<String> = [
        ApplePayError.Code.invalidConfiguration.rawValue, ApplePayError.Code.invalidPrivateKey.rawValue,
        ApplePayError.Code.invalidCertificate.rawValue,
    ]

    var serviceError: ServiceError {
        if Self.serverFaults.contains(reason) { return ServiceError.internalFailure }
        switch reason {
        case "replayed_transaction":
            return ServiceError(.conflict, code: "applepay_" + reason, message: message, field: "source")
        case ApplePayError.Code.applicationDataMismatch.rawValue, ApplePayError.Code.applicationDataMissing.rawValue:
            return ServiceError(.invalidInput, code: "applepay_" + reason, message: message, field: "application_data")
        default:
            return ServiceError(.invalidInput, code: "applepay_" + reason, message: message, field: "source")
        }
    }
}

/// Parses, verifies and decrypts tokens with the merchant configuration; pure apart from the clock it is
/// handed and the counters it bumps.
@MemberwiseInit
package struct ApplePayProcessor: Sendable {

    let verifier: ApplePayTokenVerifier
    let metricsFactory: (any MetricsFactory)?

    package init(configuration: ApplePayMerchantConfiguration, metricsFactory: (any MetricsFactory)? = nil) {
        verifier = ApplePayTokenVerifier(configuration: configuration)
        self.metricsFactory = metricsFactory
    }

    /// Errors the verifier reports only after the signature and the chain verified.
    static let raisedAfterTheChainVerified: Set<ApplePayError.Code> = [
        .signingTimeStale, .signingTimeInFuture, .unknownMerchantKey,
    ]

    /// Verifies `json` as of `now`, checks the app's `applicationData` (base64, as the request carries it)
    /// and decrypts.
    func accept(json: String, applicationData: String?, now: Date) async throws(ApplePayRejection) -> AcceptedApplePayToken {
        let token: ApplePayToken
        let fields: ApplePayToken.DecodedFields
        do throws(ApplePayError) {
            token = try ApplePayToken.parse(json: Data(json.utf8))
            fields = try token.decodedFields()
        } catch {
            throw ApplePayRejection(error, genuine: nil)
        }
        let verified: VerifiedApplePayToken
        do throws(ApplePayError) {
            verified = try await verifier.verify(token, now: now)
        } catch {
            var genuine: GenuineApplePayToken? = nil
            if Self.raisedAfterTheChainVerified.contains(error.code), let cms = try? CMSSignedData.parse(fields.signature) {
                genuine = GenuineApplePayToken(fields: fields, signedAt: cms.signer.signingTime)
            }
            throw ApplePayRejection(error, genuine: genuine)
        }
        let genuine = GenuineApplePayToken(fields: verified.fields, signedAt: verified.signingTime)
        let payment: ApplePayPaymentData
        do throws(ApplePayError) {
            try token.verifyApplicationData(applicationData.flatMap { Data(base64Encoded: $0) })
            payment = try verified.decrypt()
        } catch {
            throw ApplePayRejection(error, genuine: genuine)
        }
        guard payment.paymentDataType == .threeDSecure, payment.onlinePaymentCryptogram != nil else {
            throw ApplePayRejection(
                reason: "unsupported_payment_data_type",
                message: "paymentDataType \(payment.paymentDataType.rawValue) is not accepted: the acquirer takes 3-D Secure cryptograms only",
                genuine: genuine
            )
        }
        return AcceptedApplePayToken(payment: payment, genuine: genuine)
    }

    func countRejection(_ reason: String) {
        guard let metricsFactory else { return }
        Counter(label: "applepay_token_rejections_total", dimensions: [("reason", reason)], factory: metricsFactory).increment()
    }

    func countAcceptance() {
        guard let metricsFactory else { return }
        Counter(label: "applepay_tokens_accepted_total", factory: metricsFactory).increment()
    }
}

extension ApplePayPaymentData {
    /// The 3-D Secure cryptogram, if the payload is 3-D Secure.
    var onlinePaymentCryptogram: String? {
        if case .threeDSecure(let cryptogram, _) = details { return cryptogram }
        return nil
    }
}

extension PaymentService {
    /// Verifies and decrypts the request's token and checks that its transaction id was not used before —
    /// all before anything is stored. A retry carrying the Idempotency-Key of the payment that used the
    /// transaction id passes the check: the append then answers with that payment.
    func acceptApplePayToken(
        json: String,
        request: PaymentRequest,
        idempotency: IdempotencyKey?,
        correlation: String
    ) async throws -> AcceptedApplePayToken {
        guard let applePay else {
            throw ServiceError(
                .invalidInput,
                code: "applepay_not_configured",
                message: "this ledger does not accept Apple Pay tokens (no LEDGERD_APPLEPAY_PRIVATE_KEYS)",
                field: "gateway"
            )
        }
        do {
            let accepted = try await applePay.accept(json: json, applicationData: request.applicationData, now: clock())
            if let earlier = try await aggregates.store.readStream(accepted.genuine.markerStream).first {
                let metadata = try? JSONDecoder().decode(EventMetadata.self, from: Data(earlier.metadata.utf8))
                if idempotency == nil || metadata?.idempotencyKey != idempotency?.key {
                    throw Self.replayed(accepted.genuine)
                }
            }
            return accepted
        } catch {
            throw await applePayRefusal(error, correlation: correlation)
        }
    }

    static func replayed(_ genuine: GenuineApplePayToken) -> ApplePayRejection {
        ApplePayRejection(
            reason: "replayed_transaction",
            message: "this Apple Pay token (transaction \(genuine.transactionID)) was already used for a payment",
            genuine: genuine
        )
    }

    /// Whether the token's transaction id has been used (after an append conflicted: was it on its marker?).
    func applePayTransactionUsed(_ token: AcceptedApplePayToken) async throws -> Bool {
        try await !aggregates.store.readStream(token.genuine.markerStream).isEmpty
    }

    /// Turns an ``ApplePayRejection`` into the client's error, logging it and, for a genuine token, recording
    /// it once; any other error is returned as it is.
    func applePayRefusal(_ error: any Error, correlation: String) async -> any Error {
        guard let rejection = error as? ApplePayRejection else { return error }
        applePay?.countRejection(rejection.reason)
        var metadata: Logger.Metadata = ["reason": "\(rejection.reason)", "correlation": "\(correlation)"]
        if let genuine = rejection.genuine { metadata["transaction"] = "\(genuine.transactionID)" }
        if ApplePayRejection.serverFaults.contains(rejection.reason) {
            logger.error("Apple Pay token could not be processed: \(rejection.message)", metadata: metadata)
        } else {
            logger.notice("Apple Pay token refused", metadata: metadata)
        }
        if let genuine = rejection.genuine {
            await recordRejection(rejection, of: genuine, correlation: correlation)
        }
        return rejection.serviceError
    }

    /// Appends the audit event of a genuine token's refusal, unless one is recorded for this token already
    /// (its stream exists): a replayed token cannot grow the log. Best effort: the refusal stands either way.
    func recordRejection(_ rejection: ApplePayRejection, of genuine: GenuineApplePayToken, correlation: String) async {
        let now = clock()
        do {
            let event = ApplePayTokenRejected(
                reason: rejection.reason,
                message: rejection.message,
                transactionID: genuine.transactionID,
                signedAt: genuine.signedAt,
                rejectedAt: now
            )
            // This token's refusal is on record already (its stream exists): nothing appended.
            let record = StreamCommand<Void>(stream: genuine.rejectionStream, now: now, metadata: metadata(correlation, "PayWithApplePay", nil)) {
                recorded in
                guard recorded.isEmpty else { return .nothing(()) }
                return .append([event], ())
            }
            _ = try await aggregates.run(record)
        } catch {
            logger.error(
                "the refusal of an Apple Pay token could not be recorded",
                metadata: ["transaction": "\(genuine.transactionID)", "error": "\(String(reflecting: error))"]
            )
        }
    }
}
