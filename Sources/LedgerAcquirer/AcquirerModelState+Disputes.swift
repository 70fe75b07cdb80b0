import LedgerCore

import struct Foundation.Date

/// A chargeback the model decided at settlement: raised at ``raiseAt`` (the start of the business day
/// after the capture's batch, in the cut-off's time zone), then reported in the dispute feed and
/// debited in the first batch settled once it is raised.
struct ModelDispute: Hashable, Sendable, Codable {
    var disputeID: String
    /// Our authorization reference (the merchant reference: the order).
    var holdReference: String
    var pspReference: String
    var reason: DisputeReason
    var amount: Money
    var raiseAt: Date
    /// The batch whose report debits it (nil until then).
    var debitedInBatch: Int?
    /// The card's network and funding, kept with the dispute: its Chargeback line is written after the
    /// payment may have left memory (a finished payment of the acquirer service is read back only when
    /// a command names it). Nil in a snapshot from before they were kept: then the hold's.
    var network: CardNetwork?
    var fundingType: FundingType?
}

extension AcquirerModelState {
    /// The disputes decided so far, in feed order.
    var disputeList: [ModelDispute] { disputeFeed ?? [] }

    /// Decides whether the capture `item`, just settled in a batch of `businessDate`, draws a
    /// chargeback: always for a test card with a dispute, else by the seeded ``AcquirerModelConfiguration/disputes``
    /// knob (Visa and Mastercard only, drawing nothing when it is off). A payment draws at most one.
    mutating func drawDispute(for item: SettlementItem, businessDate: BusinessDate) {
        guard item.kind == .capture, let hold = holds[item.authorizationReference] else { return }
        let reason: DisputeReason
        if let always = configuration.alwaysDisputes(accountKey: hold.accountKey) {
            reason = always
        } else {
            let codes = DisputeReason.known.keys.filter { $0.network == hold.network }.sorted { $0.code < $1.code }
            guard !codes.isEmpty, configuration.disputes.fires(for: item.modificationReference, random: &random) else { return }
            reason = codes[Int(random.next(below: UInt64(codes.count)))]
        }
        guard !disputeList.contains(where: { $0.holdReference == item.authorizationReference }) else { return }
        let disputable = min(item.amount.minorUnits, hold.captured - hold.refunded)
        guard disputable > 0 else { return }
        let day = configuration.calendar.adding(businessDays: 1, to: businessDate)
        let midnight = day.daysSinceEpoch * 86_400 - Int64(configuration.cutOff.timeZone.secondsFromGMT)
        var feed = disputeList
        feed.append(
            ModelDispute(
                disputeID: DerivedIdentifier.disputeReference.hex(seed: seed, counter: UInt64(feed.count + 1)),
                holdReference: item.authorizationReference,
                pspReference: hold.pspReference,
                reason: reason,
                amount: Money(minorUnits: disputable, currency: item.amount.currency),
                raiseAt: Date(timeIntervalSince1970: Double(midnight)),
                network: hold.network,
                fundingType: hold.fundingType
            )
        )
        disputeFeed = feed
    }

    /// What the raised chargebacks of the payment with our `reference` took back, in minor units.
    func chargedBack(_ reference: String, at now: Date) -> Int64 {
        disputeList.prefix(raisedDisputes(at: now)).reduce(0) { $0 + ($1.holdReference == reference ? $1.amount.minorUnits : 0) }
    }

    /// How many disputes of the feed are raised at `now`: its longest prefix raised by then, so that a
    /// notification's position never changes once it was read.
    func raisedDisputes(at now: Date) -> Int {
        disputeList.firstIndex { $0.raiseAt > now } ?? disputeList.count
    }

    /// The Chargeback lines of a batch in `currency` settled at `now`: every raised dispute not yet
    /// debited, marked as debited in `batchNumber`.
    mutating func chargebackLines(batchNumber: Int, currency: Currency, now: Date) -> [SettlementReportLine] {
        guard var feed = disputeFeed else { return [] }
        var lines: [SettlementReportLine] = []
        for index in 0..<raisedDisputes(at: now) where feed[index].debitedInBatch == nil && feed[index].amount.currency == currency {
            let dispute = feed[index]
            guard let network = dispute.network ?? holds[dispute.holdReference]?.network,
                let funding = dispute.fundingType ?? holds[dispute.holdReference]?.fundingType
            else { continue }
            feed[index].debitedInBatch = batchNumber
            lines.append(
                SettlementReportLine(
                    companyAccount: configuration.companyAccount,
                    merchantAccount: configuration.merchantAccount,
                    pspReference: dispute.pspReference,
                    merchantReference: dispute.holdReference,
                    paymentMethod: SettlementLines.paymentMethod(network),
                    creationDate: SettlementLines.wholeSecond(dispute.raiseAt),
                    timeZone: configuration.cutOff.timeZone.name,
                    type: .chargeback,
                    modificationReference: dispute.disputeID,
                    grossCurrency: currency,
                    grossDebit: dispute.amount,
                    grossCredit: nil,
                    exchangeRate: Rate(numerator: 1, denominator: 1),
                    netCurrency: currency,
                    netDebit: dispute.amount,
                    netCredit: nil,
                    commission: nil,
                    markup: nil,
                    schemeFees: nil,
                    interchange: nil,
                    paymentMethodVariant: SettlementLines.paymentMethodVariant(network, funding),
                    modificationMerchantReference: "",
                    batchNumber: batchNumber
                )
            )
        }
        disputeFeed = feed
        return lines
    }

    /// The dispute feed after position `after`, at most `limit` notifications, as raised at `now`.
    /// A pure read: the feed is decided at settlement (journalled), and time only reveals it.
    public func disputeNotifications(after: Int, limit: Int, now: Date) throws(AcquirerError) -> [AcquirerDisputeNotification] {
        guard after >= 0, limit >= 0 else { throw AcquirerError(.invalidRequest, "a feed position and a limit are 0 or more") }
        let raised = raisedDisputes(at: now)
        guard after < raised else { return [] }
        return disputeList[after..<min(raised, after + limit)].enumerated().map { offset, dispute in
            AcquirerDisputeNotification(
                sequence: after + offset + 1,
                disputeID: dispute.disputeID,
                stage: .chargeback,
                stageNumber: 1,
                merchantReference: dispute.holdReference,
                pspReference: dispute.pspReference,
                reason: dispute.reason,
                amount: dispute.amount,
                raisedAt: dispute.raiseAt
            )
        }
    }
}
