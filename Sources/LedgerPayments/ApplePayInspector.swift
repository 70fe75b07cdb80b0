import Foundation
import X509

/// The offline inspector behind the CLI's "inspect an Apple Pay token" command: verify and decrypt one token
/// with keys given as PEM text, and print only the redacted summary.
///
/// Pure: the caller reads the files and supplies the time; nothing here touches the file system, network or
/// clock, so the command is reproducible (pass the token's signing time to inspect an old sample).
public enum ApplePayInspector {
    /// Verifies and decrypts `tokenJSON` (JSON, or base64 of JSON) and returns the pretty, key-sorted JSON of
    /// ``ApplePayPaymentData/RedactedSummary``.
    ///
    /// - Parameters:
    ///   - privateKeyPEM: the merchant processing key (PKCS#8, SEC1 or PKCS#1).
    ///   - certificatePEM: the merchant processing certificate; supplies the merchant identifier hash.
    ///   - merchantIdentifier: used when no certificate is given (e.g. `merchant.com.example`).
    ///   - rootPEM: trusted root(s); `nil` means the bundled Apple Root CA - G3.
    ///   - applicationData: the app's applicationData, checked against the token when given; when `nil` the
    ///     check is skipped (an inspector has usually no copy of it).
    ///   - now: the verification time.
    public static func inspect(
        tokenJSON: Data,
        privateKeyPEM: String,
        certificatePEM: String?,
        merchantIdentifier: String?,
        rootPEM: String?,
        applicationData: Data? = nil,
        at now: Date,
        signingTimeTolerance: TimeInterval = ApplePayMerchantConfiguration.defaultSigningTimeTolerance
    ) async -> Result<String, ApplePayError> {
        do throws(ApplePayError) {
            let token = try ApplePayToken.parse(jsonOrBase64: tokenJSON)
            let key = try ApplePayMerchantKey.fromPEM(
                privateKeyPEM: privateKeyPEM,
                certificatePEM: certificatePEM,
                merchantIdentifier: merchantIdentifier
            )
            let roots: [Certificate]
            if let rootPEM {
                roots = try ApplePayPEM.certificates(rootPEM)
            } else {
                roots = [try ApplePayPEM.appleRootCAG3()]
            }
            let verifier = ApplePayTokenVerifier(
                configuration: ApplePayMerchantConfiguration(
                    merchantKeys: [key],
                    trustedRoots: roots,
                    signingTimeTolerance: signingTimeTolerance
                )
            )
            let verified = try await verifier.verify(token, now: now)
            if let applicationData {
                try token.verifyApplicationData(applicationData)
            }
            return .success(try verified.decrypt().redactedSummary.prettyJSON())
        } catch {
            return .failure(error)
        }
    }
}
