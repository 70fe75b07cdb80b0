import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore

import struct Foundation.Data
import struct Foundation.URL

extension AcquirerModelConfiguration {
    /// The model a supervising ledger asks for: its merchant account, fee schedules, calendar and funding lag, and
    /// the test issuer's credit limit, hold lifetimes (the ledger's per-network overrides before the standard rules)
    /// and dispute rate. Everything else is the standard model.
    public init(supervised settings: SupervisedAcquirerSettings) {
        self.init(
            merchantAccount: settings.merchantAccount,
            defaultCreditLimit: settings.defaultCreditLimit,
            holdLifetimes: settings.holdLifetimes.map { HoldLifetimeRule(network: $0.network, lifetimeSeconds: $0.seconds) }
                + HoldLifetimeRule.standard,
            pricing: settings.pricing,
            calendar: settings.calendar,
            fundingLagBusinessDays: settings.fundingLagBusinessDays,
            disputes: .perMille(settings.disputeRatePerMille)
        )
    }
}

extension AcquirerServiceConfiguration {
    /// The model `ledgerd acquirer serve` runs: a full model configuration (`--model-configuration`), or what a
    /// supervising ledger asks for (`--supervised-settings`), or the standard model; a dispute rate given on its own
    /// overrides the file's.
    public static func model(modelFile: String?, supervisedSettingsFile: String?, disputeRatePerMille: Int?) throws -> AcquirerModelConfiguration {
        guard modelFile == nil || supervisedSettingsFile == nil else {
            throw AcquirerConfigurationError("--model-configuration and --supervised-settings exclude each other")
        }
        var model = AcquirerModelConfiguration()
        if let modelFile {
            model = try LedgerJSON.decode(AcquirerModelConfiguration.self, from: Data(contentsOf: URL(fileURLWithPath: modelFile)))
        } else if let supervisedSettingsFile {
            let settings = try LedgerJSON.decode(
                SupervisedAcquirerSettings.self,
                from: Data(contentsOf: URL(fileURLWithPath: supervisedSettingsFile))
            )
            model = AcquirerModelConfiguration(supervised: settings)
        }
        if let rate = disputeRatePerMille {
            guard (0...1_000).contains(rate) else { throw AcquirerConfigurationError("--dispute-rate is per mille, 0…1000") }
            model.disputes = .perMille(rate)
        }
        return model
    }
}

/// A refused `ledgerd acquirer serve` configuration, said in the operator's words.
public struct AcquirerConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
