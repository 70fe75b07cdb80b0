import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// One sample of every event type in the catalogue: the domain's (``EventSamples``), the settlement
/// family's and the standalone ones. ``EventCatalogueTests/samplesCoverEveryKindExactlyOnce()`` fails
/// until a new type has its sample here.
enum CatalogueSamples {
    static let batchID = "M-USD-2025-06-13"
    static let digest = String(repeating: "ab", count: 32)
    static let day = BusinessDate(year: 2025, month: 6, day: 16)!
    static let found = ReconciliationBreak(
        batchID: batchID,
        breakClass: .amountMismatch,
        reference: "o-1-capture-k2",
        expected: "40.00",
        actual: "41.00",
        detail: "the report's gross differs / see line 3"
    )

    static let settlement: [SettlementEvent] = [
        .opened(
            SettlementBatchOpened(
                batchID: batchID,
                merchantAccount: "Merchant",
                currency: .usd,
                businessDate: BusinessDate(year: 2025, month: 6, day: 13)!,
                cutOffAt: t0.addingTimeInterval(0.5),
                pinnedPosition: 42
            )
        ),
        .closed(
            SettlementBatchClosed(
                batchID: batchID,
                captureCount: 1,
                refundCount: 1,
                grossCredit: usd("40.00"),
                grossDebit: usd("3.00"),
                gross: usd("37.00"),
                itemsSHA256: digest
            )
        ),
        .submitted(SettlementBatchSubmitted(batchID: batchID, batchNumber: 7, reportSHA256: digest, reportLineCount: 3)),
        .cleared(
            SettlementBatchCleared(
                batchID: batchID,
                lineCount: 2,
                gross: usd("37.00"),
                interchange: usd("0.07"),
                schemeFees: usd("0.01"),
                markup: usd("0.04"),
                commission: usd("0.00"),
                net: usd("36.88")
            )
        ),
        .payoutScheduled(
            SettlementPayoutScheduled(
                batchID: batchID,
                payoutReference: "P-1",
                amount: usd("36.88"),
                valueDate: day,
                expectedValueDate: day
            )
        ),
        .paid(SettlementPayoutPaid(batchID: batchID, payoutReference: "P-1", amount: usd("36.88"), valueDate: day)),
        .reconciled(ReconciliationRecorded(batchID: batchID, windowClosed: true, reportLines: 3, ledgerItems: 2, matched: 1, breaks: [found])),
        .breakFound(ReconciliationBreakFound(batchID: batchID, found: found)),
        .breakResolved(ReconciliationBreakResolved(batchID: batchID, breakID: found.breakID, reason: "fee agreed", resolvedBy: "op:ann")),
    ]

    static let checkpoint = Checkpoint(
        position: 42,
        hash: digest,
        recordedAt: RFC3339.format(t0.epochMicroseconds),
        signedAt: "2025-06-15T15:06:41.000001Z",
        publicKey: String(repeating: "cd", count: 32),
        signature: String(repeating: "ef", count: 64)
    )

    static let standalone: [LedgerEvent] = [
        .applePayTokenAccepted(
            ApplePayTokenAccepted(
                orderID: oid("o-1"),
                transactionID: "c0ffee",
                network: nil,
                lastFour: "3478",
                paymentDataType: "3DSecure",
                amount: usd("59.00"),
                signedAt: t0
            )
        ),
        .applePayTokenRejected(
            ApplePayTokenRejected(
                reason: "amount_mismatch",
                message: "the token's amount 5800 is not the order total",
                transactionID: "c0ffee",
                signedAt: t0,
                rejectedAt: t0.addingTimeInterval(1.25)
            )
        ),
        .checkpointSigned(CheckpointSigned(checkpoint)),
        .contactErased(ContactErased(contactRef: "contact-1", orderIDs: ["o-1", "o-2"], erasedAt: t0, reason: "data_subject_request")),
        .bankStatementReceived(
            BankStatementReceived(
                format: "camt.053",
                account: "DE89370400440532013000",
                statementID: "STMT-1",
                sequence: "338",
                currency: .eur,
                opening: BankStatementBalance(amount: Money(minorUnits: 1_000_000, currency: .eur), date: day),
                closing: BankStatementBalance(amount: Money(minorUnits: 1_123_456, currency: .eur), date: nil),
                entryCount: 1,
                net: Money(minorUnits: 123_456, currency: .eur),
                fileSHA256: digest,
                contentSHA256: digest
            )
        ),
        .bankEntryBooked(
            BankEntryBooked(
                account: "DE89370400440532013000",
                statementID: "STMT-1",
                entry: 1,
                amount: Money(minorUnits: 123_456, currency: .eur),
                bookingDate: day,
                valueDate: day,
                bankReference: "BNK-1",
                ownerReference: nil,
                endToEndIDs: ["ACQ-BATCH-1"],
                remittanceInformation: "Settlement batch 1",
                transactionCode: "PMNT/RCDT/ESCT",
                reversal: false,
                booked: true
            )
        ),
        .bankPayoutMatched(
            BankPayoutMatched(
                matchID: "M-1",
                rule: "reference",
                payouts: [bankPayout],
                deposits: [bankDeposit],
                amount: Money(minorUnits: 123_456, currency: .eur),
                outstanding: Money(minorUnits: 0, currency: .eur),
                file: digest
            )
        ),
        .bankBreakFound(
            BankBreakFound(
                breakID: "B-1",
                breakClass: .amountDiffers,
                payouts: [bankPayout],
                deposits: [bankDeposit],
                expected: Money(minorUnits: 123_500, currency: .eur),
                actual: Money(minorUnits: 123_456, currency: .eur),
                difference: Money(minorUnits: -44, currency: .eur),
                detail: "short by 0.44 EUR",
                file: digest
            )
        ),
        .bankBreakResolved(BankBreakResolved(breakID: "B-1", reason: "the acquirer's fee", resolvedBy: "operator:k", file: "")),
    ]
    static let bankPayout = BankPayoutRef(
        batchID: batchID,
        payoutReference: "PAYOUT-1",
        merchantAccount: "OrderLedgerStore",
        amount: Money(minorUnits: 123_500, currency: .eur)
    )
    static let bankDeposit = BankDepositRef(
        stream: BankStatementReceived.stream(account: "DE89370400440532013000", statementID: "STMT-1", sequence: "338").rawValue,
        account: "DE89370400440532013000",
        statementID: "STMT-1",
        entry: 1,
        amount: Money(minorUnits: 123_456, currency: .eur),
        valueDate: day,
        bankReference: "BNK-1",
        ownerReference: nil,
        endToEndIDs: ["PAYOUT-1"],
        remittanceInformation: "Settlement batch 1",
        position: 7
    )

    static let disputeID = "d-PSP1-1"
    static let disputeAmount = Money(minorUnits: 5900, currency: .usd)
    static let dispute: [DisputeEvent] = [
        .inquiryRaised(
            DisputeInquiryRaised(
                disputeID: disputeID,
                orderID: OrderID("o-1")!,
                pspReference: "PSP1",
                reason: .visaNotReceived,
                amount: disputeAmount,
                raisedAt: t0,
                dueAt: t0.addingTimeInterval(30 * 86_400)
            )
        ),
        .chargeback(
            ChargebackReceived(
                disputeID: disputeID,
                orderID: OrderID("o-1")!,
                pspReference: "PSP1",
                reason: .visaFraudCardAbsent,
                amount: disputeAmount,
                raisedAt: t0,
                dueAt: t0.addingTimeInterval(30 * 86_400)
            )
        ),
        .defenseSubmitted(DisputeDefenseSubmitted(disputeID: disputeID, evidenceRefs: ["ev-1"], submittedBy: "operator:k", submittedAt: t0)),
        .secondPresentment(DisputeSecondPresentment(disputeID: disputeID, presentedAt: t0)),
        .reversed(ChargebackReversed(disputeID: disputeID, amount: disputeAmount, reversedAt: t0)),
        .preArbitration(DisputePreArbitrationOpened(disputeID: disputeID, openedAt: t0, dueAt: t0.addingTimeInterval(30 * 86_400))),
        .secondChargeback(
            SecondChargebackReceived(disputeID: disputeID, amount: disputeAmount, raisedAt: t0, dueAt: t0.addingTimeInterval(30 * 86_400))
        ),
        .closed(
            DisputeClosed(
                disputeID: disputeID,
                outcome: .lost,
                credited: Money(minorUnits: 0, currency: .usd),
                debited: Money(minorUnits: 0, currency: .usd),
                closedBy: "acquirer",
                closedAt: t0
            )
        ),
    ]
    static let all: [LedgerEvent] =
        EventSamples.all.map(LedgerEvent.domain) + settlement.map(LedgerEvent.settlement) + standalone + dispute.map(LedgerEvent.dispute)

    /// The stream a sample is written to, by the production code that names streams.
    static func stream(of event: LedgerEvent) -> StreamID {
        switch event {
        case .domain(let e): return e.streamID
        case .settlement(.reconciled(let e)): return Reconciliation.streamID(batchID: e.batchID)
        case .settlement(.breakFound(let e)): return Reconciliation.streamID(batchID: e.batchID)
        case .settlement(.breakResolved(let e)): return Reconciliation.streamID(batchID: e.batchID)
        case .settlement: return SettlementBatch.streamID(batchID: batchID)
        case .applePayTokenAccepted: return ApplePayLedger.markerStream(transactionDigest: digest)
        case .applePayTokenRejected: return ApplePayLedger.rejectionStream(transactionDigest: digest)
        case .checkpointSigned: return CheckpointSigned.stream
        case .dispute(let e): return e.streamID
        case .contactErased(let e): return ContactErased.stream(for: e.contactRef)!
        case .bankStatementReceived(let e): return BankStatementReceived.stream(account: e.account, statementID: e.statementID, sequence: e.sequence)
        case .bankEntryBooked(let e): return BankStatementReceived.stream(account: e.account, statementID: e.statementID, sequence: "338")
        case .bankPayoutMatched, .bankBreakFound, .bankBreakResolved: return BankMatching.stream
        }
    }
}

/// A payload that claims another type's catalogue entry: what a copied payload with a forgotten
/// `eventKind` looks like. The catalogue must refuse to write it.
private struct Impostor: LedgerEventPayload {
    static let eventType = "ContactErased"
    static let schemaVersion: Int32 = 1
    static let eventKind = EventKind.contactErased
    var contactRef = "contact-1"

    enum CodingKeys: String, CodingKey { case contactRef = "contact_ref" }
}

struct EventCatalogueTests {
    /// Every type name the ledger has ever written. Names are never removed or renamed: events of them
    /// are in the chain for good, and a replay must still decode them.
    static let writtenTypeNames: Set<String> = [
        "ProductListed", "ProductPriceChanged", "StockReceived", "StockReserved", "ReservationReleased", "StockSold",
        "ShippingMethodListed", "ShippingMethodPriceChanged",
        "OrderOpened", "OrderAuthorized", "PaymentDeclined", "PaymentOutcomeUnknown", "OrderCancelled", "OrderPaymentUpdated", "OrderShipped",
        "AuthorizationHoldPlaced", "HoldIncremented", "HoldCaptured", "HoldReversed", "HoldExpired", "HoldRefunded",
        "SettlementBatchOpened", "SettlementBatchClosed", "SettlementBatchSubmitted", "SettlementBatchCleared",
        "SettlementPayoutScheduled", "SettlementPayoutPaid",
        "ReconciliationRecorded", "ReconciliationBreakFound", "ReconciliationBreakResolved",
        "ApplePayTokenAccepted", "ApplePayTokenRejected", "CheckpointSigned", "ContactErased",
        "BankStatementReceived", "BankEntryBooked", "BankPayoutMatched", "BankBreakFound", "BankBreakResolved",
        "DisputeInquiryRaised", "ChargebackReceived", "DisputeDefenseSubmitted", "DisputeSecondPresentment", "ChargebackReversed",
        "DisputePreArbitrationOpened", "SecondChargebackReceived", "DisputeClosed",
    ]

    @Test func everyKindHasOneEntryThatNamesItsPayloadBack() {
        #expect(EventCatalogue.entries.map(\.kind) == EventKind.allCases)
        for kind in EventKind.allCases {
            let entry = EventCatalogue.entry(kind)
            #expect(entry.kind == kind)
            #expect(entry.payloadType.eventKind == kind, "\(entry.payloadType) names \(entry.payloadType.eventKind), not \(kind)")
            #expect(entry.type == entry.payloadType.eventType)
            #expect(entry.schemaVersion == entry.payloadType.schemaVersion && entry.schemaVersion >= 1)
            #expect(entry.readableSchemaVersions.last == entry.schemaVersion, "\(entry.type)")
            #expect(entry.readableSchemaVersions == Array(Set(entry.readableSchemaVersions)).sorted(), "\(entry.type)")
            // The kind is the type's name with a lower-case first letter.
            #expect(String(describing: kind) == entry.type.prefix(1).lowercased() + entry.type.dropFirst())
        }
    }

    @Test func typeNamesAndPayloadTypesAreUnique() {
        let types = EventCatalogue.entries.map(\.type)
        #expect(Set(types).count == types.count, "duplicate type names: \(types.sorted())")
        #expect(Set(EventCatalogue.entries.map { ObjectIdentifier($0.payloadType) }).count == types.count)
        for entry in EventCatalogue.entries {
            #expect(EventCatalogue.entry(forType: entry.type)?.kind == entry.kind)
        }
        #expect(EventCatalogue.entry(forType: "OrderTeleported") == nil)
    }

    @Test func noTypeEverWrittenIsMissing() {
        let registered = Set(EventCatalogue.entries.map(\.type))
        #expect(Self.writtenTypeNames.subtracting(registered).isEmpty, "\(Self.writtenTypeNames.subtracting(registered))")
        // A registered type that is not listed above is new: list it there too.
        #expect(registered.subtracting(Self.writtenTypeNames).isEmpty, "\(registered.subtracting(Self.writtenTypeNames))")
    }

    @Test func samplesCoverEveryKindExactlyOnce() {
        let kinds = CatalogueSamples.all.map(\.kind)
        #expect(Set(kinds) == Set(EventKind.allCases), "no sample for \(Set(EventKind.allCases).subtracting(kinds))")
        #expect(kinds.count == EventKind.allCases.count)
    }

    @Test(arguments: CatalogueSamples.all)
    func everySampleRoundTripsByteForByte(event: LedgerEvent) throws {
        let data = try event.encodedData()
        let decoded = try LedgerEvent.decode(type: event.type, schemaVersion: event.schemaVersion, data: data)
        #expect(decoded == event)
        #expect(try decoded.encodedData() == data)
        #expect(try event.encodedData() == data)
        // The same bytes as a freshly configured encoder of the historical form: event bytes never change.
        let historical = JSONEncoder()
        historical.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(try historical.encode(event.payload) == data)
        // What is appended carries the entry's type and version and exactly these bytes.
        let id = UUID()
        let new = try event.newEvent(eventID: id, effectiveAt: t0)
        #expect(new.eventID == id && new.effectiveAt == t0)
        #expect(new.type == event.kind.entry.type && new.schemaVersion == event.kind.entry.schemaVersion)
        #expect(new.data == String(decoding: data, as: UTF8.self))
        let recorded = RecordedEvent(
            position: 1,
            streamID: CatalogueSamples.stream(of: event),
            streamVersion: 1,
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
        #expect(try LedgerEvent.decode(recorded) == event)
    }

    @Test(arguments: CatalogueSamples.all)
    func theFamilyEnumsDecodeExactlyTheirOwnTypes(event: LedgerEvent) throws {
        let entry = event.kind.entry
        let json = String(decoding: try event.encodedData(), as: UTF8.self)
        func decodeDomain() throws(EventCodingError) -> DomainEvent {
            try DomainEvent.decode(type: event.type, schemaVersion: event.schemaVersion, json: json)
        }
        func decodeSettlement() throws(EventCodingError) -> SettlementEvent {
            try SettlementEvent.decode(type: event.type, schemaVersion: event.schemaVersion, json: json)
        }
        switch event {
        case .domain(let e):
            #expect(entry.category.family == .domain)
            #expect(try decodeDomain() == e)
            #expect(try e.newEvent(eventID: UUID(), effectiveAt: t0).data == json)
            #expect(throws: EventCodingError(.unknownType, type: event.type, "not a settlement event")) { try decodeSettlement() }
        case .settlement(let e):
            #expect(entry.category.family == .settlement)
            #expect(try decodeSettlement() == e)
            #expect(try e.newEvent(eventID: UUID(), effectiveAt: t0).data == json)
            #expect(throws: EventCodingError(.unknownType, type: event.type, "unknown event type")) { try decodeDomain() }
        case .dispute(let e):
            #expect(entry.category.family == .dispute)
            let recorded = RecordedEvent(
                position: 1,
                streamID: e.streamID,
                streamVersion: 1,
                eventID: UUID(),
                type: event.type,
                schemaVersion: event.schemaVersion,
                data: json,
                metadata: "{}",
                effectiveAtMicros: t0.epochMicroseconds,
                recordedAtMicros: t0.epochMicroseconds,
                prevHash: [],
                hash: []
            )
            #expect(try DisputeEvent.decode(recorded) == e)
            #expect(throws: EventCodingError(.unknownType, type: event.type, "unknown event type")) { try decodeDomain() }
            #expect(throws: EventCodingError(.unknownType, type: event.type, "not a settlement event")) { try decodeSettlement() }
        case .applePayTokenAccepted, .applePayTokenRejected, .checkpointSigned, .contactErased, .bankStatementReceived, .bankEntryBooked,
            .bankPayoutMatched, .bankBreakFound, .bankBreakResolved:
            #expect(entry.category.family == .standalone)
            #expect(throws: EventCodingError(.unknownType, type: event.type, "unknown event type")) { try decodeDomain() }
            #expect(throws: EventCodingError(.unknownType, type: event.type, "not a settlement event")) { try decodeSettlement() }
        }
        #expect(ObjectIdentifier(type(of: event.payload)) == ObjectIdentifier(entry.payloadType))
    }

    @Test(arguments: CatalogueSamples.all)
    func eachTypeIsWrittenToTheStreamsOfItsCategory(event: LedgerEvent) {
        let stream = CatalogueSamples.stream(of: event).rawValue
        let prefix = stream.split(separator: "-", maxSplits: 1).first.map(String.init) ?? stream
        #expect(prefix == event.kind.entry.streamCategory, "\(event.type) on \(stream)")
    }

    @Test func theFamilyListsAreTheCatalogues() {
        let domain = EventCatalogue.entries.filter { $0.category.family == .domain }
        #expect(DomainEvent.knownTypes.map(\.type) == domain.map(\.type).sorted())
        #expect(DomainEvent.knownTypes.allSatisfy { EventCatalogue.entry(forType: $0.type)?.schemaVersion == $0.schemaVersion })
        #expect(Set(SettlementEvent.knownTypes) == Set(EventCatalogue.entries.filter { $0.category.family == .settlement }.map(\.type)))
        #expect(Set(DomainEvent.knownTypes.map(\.type)).isDisjoint(with: SettlementEvent.knownTypes))
    }

    @Test(arguments: CatalogueSamples.all)
    func versionsOutsideTheReadableOnesAreRefused(event: LedgerEvent) throws {
        let entry = event.kind.entry
        let data = try event.encodedData()
        for version in [0, entry.schemaVersion + 1] where !entry.readableSchemaVersions.contains(version) {
            #expect(throws: EventCodingError(.unsupportedSchemaVersion, type: entry.type, "schema version \(version)")) {
                try entry.decode(schemaVersion: version, data: data)
            }
        }
        #expect(throws: EventCodingError.self) { try entry.decode(schemaVersion: entry.schemaVersion, data: Data("[]".utf8)) }
    }

    @Test func aSchemaOneClosedBatchIsStillReadable() {
        #expect(EventKind.settlementBatchClosed.entry.readableSchemaVersions == [1, 2])
        #expect(
            EventCatalogue.entries.filter { $0.readableSchemaVersions.count > 1 }.map(\.kind) == [
                .settlementBatchClosed, .reconciliationRecorded,
            ]
        )
    }

    /// Schema 2 of ReconciliationRecorded added `report` (an upload's key); a schema 1 result, written
    /// before uploads were reconciliations of their own, reads as the acquirer's.
    @Test func aSchemaOneReconciliationReadsAsTheAcquirers() throws {
        #expect(EventKind.reconciliationRecorded.entry.readableSchemaVersions == [1, 2])
        let v1 = #"{"batch_id":"b","breaks":[],"ledger_items":1,"matched":1,"report_lines":2,"window_closed":false}"#
        let decoded = try EventCatalogue.decode(type: "ReconciliationRecorded", schemaVersion: 1, data: Data(v1.utf8))
        guard case .settlement(.reconciled(let result)) = decoded else {
            Issue.record("decoded \(decoded)")
            return
        }
        #expect(result.report == nil && result.matched == 1)
        // The acquirer's result is written without `report`, an upload's with it.
        #expect(try String(decoding: LedgerJSON.encode(result), as: UTF8.self) == v1)
        var upload = result
        upload.report = "upload-00"
        #expect(try String(decoding: LedgerJSON.encode(upload), as: UTF8.self).contains(#""report":"upload-00""#))
    }

    @Test func newEventWritesOnlyRegisteredPayloadsUnderTheirOwnName() throws {
        let erased = ContactErased(contactRef: "contact-1", orderIDs: ["o-1"], erasedAt: t0, reason: "data_subject_request")
        let new = try NewEvent(payload: erased, effectiveAt: t0)
        #expect(new.type == "ContactErased" && new.schemaVersion == 1)
        #expect(
            new.data == #"{"contact_ref":"contact-1","erased_at":"2025-06-15T15:06:40.000000Z","order_id":"o-1","order_ids":["o-1"],"#
                + #""reason":"data_subject_request"}"#
        )
        #expect(
            try NewEvent(type: ContactErased.eventType, schemaVersion: ContactErased.schemaVersion, payload: erased, effectiveAt: t0)
                .data == new.data
        )
        func code(_ build: () throws(EventCodingError) -> NewEvent) -> EventCodingError.Code? {
            do {
                _ = try build()
                return nil
            } catch { return error.code }
        }
        #expect(code { () throws(EventCodingError) in try NewEvent(type: "CheckpointSigned", payload: erased, effectiveAt: t0) } == .unknownType)
        #expect(code { () throws(EventCodingError) in try NewEvent(schemaVersion: 2, payload: erased, effectiveAt: t0) } == .unknownType)
        // A payload that is not the one its kind registers is refused by every way of writing it.
        #expect(code { () throws(EventCodingError) in try NewEvent(payload: Impostor(), effectiveAt: t0) } == .unknownType)
        #expect(throws: EventCodingError.self) { try EventCatalogue.encode(Impostor()) }
        #expect(throws: EventCodingError.self) { try EventCatalogue.registration(of: Impostor.self) }
        #expect(try EventCatalogue.registration(of: ContactErased.self).kind == .contactErased)
    }

    @Test func goldenBytesOfTheNonDomainFamilies() throws {
        func json(_ event: LedgerEvent) throws -> String { String(decoding: try event.encodedData(), as: UTF8.self) }
        #expect(
            try json(.settlement(CatalogueSamples.settlement[0])) == #"{"batch_id":"M-USD-2025-06-13","business_date":"2025-06-13","#
                + #""currency":"USD","cut_off_at":"2025-06-15T15:06:40.500000Z","merchant_account":"Merchant","pinned_position":42}"#
        )
        #expect(
            try json(.settlement(CatalogueSamples.settlement[7])) == #"{"batch_id":"M-USD-2025-06-13","break":{"actual":"41.00","#
                + #""break_id":"M-USD-2025-06-13.amount_mismatch.o-1-capture-k2","class":"amount_mismatch","#
                + #""detail":"the report's gross differs / see line 3","expected":"40.00","reference":"o-1-capture-k2"}}"#
        )
        #expect(
            try json(CatalogueSamples.standalone[1]) == #"{"message":"the token's amount 5800 is not the order total","#
                + #""reason":"amount_mismatch","rejected_at":"2025-06-15T15:06:41.250000Z","signed_at":"2025-06-15T15:06:40.000000Z","#
                + #""transaction_id":"c0ffee"}"#
        )
        #expect(
            try json(.dispute(CatalogueSamples.dispute[1])) == #"{"amount":{"amount":"59.00","currency":"USD"},"dispute_id":"d-PSP1-1","#
                + #""due_at":"2025-07-15T15:06:40.000000Z","order_id":"o-1","psp_reference":"PSP1","raised_at":"2025-06-15T15:06:40.000000Z","#
                + #""reason":{"code":"10.4","network":"visa"}}"#
        )
        let checkpoint = try json(CatalogueSamples.standalone[2])
        #expect(checkpoint.hasPrefix(#"{"hash":"abab"#) && checkpoint.contains(#""position":42,"public_key":"cdcd"#))
    }

    @Test func theSharedCodersAreSafeToUseConcurrently() async throws {
        let expected = try CatalogueSamples.all.map { try $0.encodedData() }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<50 {
                        let index = (worker * 7 + round) % CatalogueSamples.all.count
                        let event = CatalogueSamples.all[index]
                        let data = try event.encodedData()
                        if data != expected[index] { wrong += 1 }
                        if try LedgerEvent.decode(type: event.type, schemaVersion: event.schemaVersion, data: data) != event { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test func ledgerJSONIsCompactSortedAndLeavesSlashesAlone() throws {
        struct Sample: Codable, Equatable {
            var zeta = "a/b"
            var alpha = 1
        }
        #expect(try LedgerJSON.string(Sample()) == #"{"alpha":1,"zeta":"a/b"}"#)
        #expect(try LedgerJSON.prettyString(Sample()) == "{\n  \"alpha\" : 1,\n  \"zeta\" : \"a/b\"\n}")
        #expect(try LedgerJSON.decode(Sample.self, from: #"{"zeta":"a\/b","alpha":1}"#) == Sample())
        #expect(try LedgerJSON.decode(Sample.self, from: LedgerJSON.encode(Sample())) == Sample())
    }

    @Test func hexIsLowerCaseBothWays() {
        #expect(Hex.encode([0x00, 0x0f, 0xab, 0xff]) == "000fabff")
        #expect(Hex.decode("000FabFF") == [0x00, 0x0f, 0xab, 0xff])
        #expect(Hex.decode("0g") == nil && Hex.decode("abc") == nil)
    }

    @Test func timestampsUseTheOneRFC3339FormAndPayloadsAcceptOnlyIt() throws {
        #expect(RFC3339.exactMicros("2025-06-15T15:06:40.250000Z") == RFC3339.micros("2025-06-15T15:06:40.25Z"))
        for loose in [
            "2025-06-15T15:06:40.25Z", "2025-06-15t15:06:40.250000Z", "2025-06-15 15:06:40.250000Z",
            "2025-06-15T15:06:40.250000z", "2025-06-15T17:06:40.250000+02:00", "2025-06-15T15:06:40.2500000Z",
        ] {
            #expect(RFC3339.micros(loose) != nil, "\(loose)")
            #expect(RFC3339.exactMicros(loose) == nil, "\(loose)")
        }
        let json = #"{"amount":{"amount":"59.00","currency":"USD"},"authorized_at":"2025-06-15T15:06:40Z","order_id":"o-1","psp_reference":"P"}"#
        #expect(throws: EventCodingError.self) { try DomainEvent.decode(type: "OrderAuthorized", schemaVersion: 1, json: json) }
    }
}
