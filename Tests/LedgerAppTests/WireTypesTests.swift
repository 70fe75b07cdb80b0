import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerHTTP
import LedgerServices
import Testing

/// The wire types of `LedgerAPI` (the types generated from `openapi.yaml`, which the routes encode and the CLI and the
/// tests decode): each round-trips through ``WireJSON``, a few have golden encodings (the bytes the golden transcripts
/// recorded for them), every domain status has its case in the document, and ``RawJSON`` keeps its members in the
/// order given.
@Suite struct WireTypesTests {
    static let usd = Currency.usd
    static func money(_ minorUnits: Int64) -> Money { Money(minorUnits: minorUnits, currency: usd) }
    static func date(_ text: String) -> BusinessDate { BusinessDate(text)! }
    static let cutOff = ISO8601DateFormatter().date(from: "2026-06-17T22:00:00Z")!
    static let batchID = "OrderLedgerStore-USD-2026-06-17"

    /// A batch folded up to `stage` (opened … paid).
    static func batch(through stage: SettlementBatchState.Stage) -> SettlementBatchState {
        let id = batchID
        let events: [SettlementEvent] = [
            .opened(
                SettlementBatchOpened(
                    batchID: id,
                    merchantAccount: "OrderLedgerStore",
                    currency: usd,
                    businessDate: date("2026-06-17"),
                    cutOffAt: cutOff,
                    pinnedPosition: 40
                )
            ),
            .closed(
                SettlementBatchClosed(
                    batchID: id,
                    captureCount: 2,
                    refundCount: 1,
                    grossCredit: money(6900),
                    grossDebit: money(500),
                    gross: money(6400),
                    itemsSHA256: String(repeating: "a", count: 64)
                )
            ),
            .submitted(
                SettlementBatchSubmitted(
                    batchID: id,
                    batchNumber: 1_664_749,
                    reportSHA256: String(repeating: "b", count: 64),
                    reportLineCount: 4
                )
            ),
            .cleared(
                SettlementBatchCleared(
                    batchID: id,
                    lineCount: 4,
                    gross: money(6400),
                    interchange: money(97),
                    schemeFees: money(9),
                    markup: money(55),
                    commission: money(0),
                    net: money(6239)
                )
            ),
            .payoutScheduled(
                SettlementPayoutScheduled(
                    batchID: id,
                    payoutReference: "19C516E65415CDF9",
                    amount: money(6239),
                    valueDate: date("2026-06-18"),
                    expectedValueDate: date("2026-06-18")
                )
            ),
            .paid(SettlementPayoutPaid(batchID: id, payoutReference: "19C516E65415CDF9", amount: money(6239), valueDate: date("2026-06-18"))),
        ]
        let stages: [SettlementBatchState.Stage] = [.opened, .closed, .submitted, .cleared, .payoutScheduled, .paid]
        return SettlementBatchState.fold(Array(events.prefix(stages.firstIndex(of: stage)! + 1)))!
    }

    static let reconciliation: ReconciliationView = {
        let found = [
            ReconciliationBreak(
                batchID: batchID,
                breakClass: .amountMismatch,
                reference: "o-1-capture-1",
                expected: "5900",
                actual: "5901",
                detail: "gross differs from the ledger"
            ),
            ReconciliationBreak(
                batchID: batchID,
                breakClass: .missingAtAcquirer,
                reference: "o-2-capture-1",
                expected: "1000",
                actual: nil,
                detail: "absent from this report and the next"
            ),
        ]
        let result = ReconciliationRecorded(batchID: batchID, windowClosed: true, reportLines: 4, ledgerItems: 3, matched: 1, breaks: found)
        let resolved = ReconciliationBreakResolved(
            batchID: batchID,
            breakID: found[1].breakID,
            reason: "acquirer ticket 42",
            resolvedBy: "operator:env-operator-1"
        )
        let events: [SettlementEvent] = [.reconciled(result)] + found.map { .breakFound(ReconciliationBreakFound(batchID: batchID, found: $0)) }
        return ReconciliationView(
            currency: .usd,
            merchantAccount: "OrderLedgerStore",
            events: (events + [.breakResolved(resolved)]).map { ($0, cutOff) },
            reflecting: nil
        )!
    }()

    static func roundTrips<T: Codable & Hashable>(_ value: T) throws -> Bool {
        try WireJSON.decode(T.self, from: try WireJSON.encode(value)) == value
    }

    @Test func everyWireTypeRoundTrips() throws {
        let stages: [SettlementBatchState.Stage] = [.opened, .closed, .submitted, .cleared, .payoutScheduled, .paid]
        for stage in stages {
            #expect(try Self.roundTrips(SettlementBatchReply(Self.batch(through: stage))), "\(stage)")
        }
        #expect(try Self.roundTrips(SettlementListReply(stages.map { Self.batch(through: $0) })))
        let summary = SettlementRunSummary(
            businessDate: Self.date("2026-06-17"),
            cutOffAt: Self.cutOff,
            batches: [
                SettlementBatchOutcome(batch: Self.batch(through: .opened), appendedEvents: 1),
                SettlementBatchOutcome(batch: Self.batch(through: .payoutScheduled), appendedEvents: 5),
            ]
        )
        #expect(try Self.roundTrips(SettlementRunReply(summary)))
        #expect(try Self.roundTrips(SettlementRunLine(summary)))
        #expect(try Self.roundTrips(SettlementRunLine(SettlementProgress(batchID: Self.batchID, step: "selected", items: 3))))
        #expect(try Self.roundTrips(SettlementRunLine(failure: .init(code: "acquirer_refused", message: "the acquirer refused the batch"))))
        #expect(try Self.roundTrips(ReconciliationReply(Self.reconciliation)))
        let erased = [PrivacyService.Erasure(contactRef: "contact-1", orderIDs: ["o-1", "o-2"], position: 59)]
        #expect(try Self.roundTrips(ErasureReply(erased)))
    }

    /// Every case of the domain's enums that a reply carries has the document's case of the same spelling, so
    /// `documented(_:)` never misses at run time. The first run of this test found `cancelled`, `disputed` and
    /// `charged_back` missing from the document's `OrderStatus`: replies had carried them against the contract.
    @Test func everyDomainCaseARepliesCarriesIsInTheDocument() {
        func missing<Domain: CaseIterable & RawRepresentable<String>, Wire: RawRepresentable<String>>(
            _: Domain.Type,
            _: Wire.Type
        ) -> [String] {
            Domain.allCases.map(\.rawValue).filter { Wire(rawValue: $0) == nil }
        }
        #expect(missing(OrderStatus.self, Components.Schemas.OrderStatus.self) == [])
        #expect(missing(DisputeStatus.self, Components.Schemas.DisputeStatus.self) == [])
        #expect(missing(SettlementBatchState.Stage.self, Components.Schemas.SettlementStage.self) == [])
        #expect(missing(BreakClass.self, Components.Schemas.ReconciliationBreak.ClassPayload.self) == [])
        #expect(missing(HoldOperationRequest.Kind.self, Components.Schemas.HoldOperationReply.OperationPayload.self) == [])
        #expect(missing(HoldOperationOutcome.Result.self, Components.Schemas.HoldOperationReply.ResultPayload.self) == [])
    }

    @Test func aRunsLinesAndSummaryAreEncodedAsRecorded() throws {
        let progress = SettlementRunLine(SettlementProgress(batchID: Self.batchID, step: "accepted", items: 1, detail: "batch number 2975074"))
        #expect(
            try WireJSON.encode(progress)
                == #"{"progress":{"batch_id":"OrderLedgerStore-USD-2026-06-17","detail":"batch number 2975074","items":1,"step":"accepted"}}"#
        )
        let failure = SettlementRunLine(failure: .init(code: "report_changed", message: "the report for a/b differs"))
        #expect(try WireJSON.encode(failure) == #"{"error":{"code":"report_changed","message":"the report for a/b differs"}}"#)

        let summary = SettlementRunSummary(
            businessDate: Self.date("2026-06-17"),
            cutOffAt: Self.cutOff,
            batches: [
                SettlementBatchOutcome(batch: Self.batch(through: .opened), appendedEvents: 1),
                SettlementBatchOutcome(batch: Self.batch(through: .payoutScheduled), appendedEvents: 0),
            ]
        )
        let opened =
            #"{"appended_events":1,"batch_id":"OrderLedgerStore-USD-2026-06-17","captures":0,"currency":"USD","gross":"0","#
            + #""refunds":0,"stage":"opened"}"#
        let scheduled =
            #"{"appended_events":0,"batch_id":"OrderLedgerStore-USD-2026-06-17","batch_number":1664749,"captures":2,"#
            + #""currency":"USD","gross":"64.00","net":"62.39","payout":"62.39","refunds":1,"report_sha256":""#
            + String(repeating: "b", count: 64) + #"","stage":"payout_scheduled","value_date":"2026-06-18"}"#
        let expected =
            #"{"batches":["# + opened + "," + scheduled + #"],"business_date":"2026-06-17","#
            + #""cut_off_at":"2026-06-17T22:00:00.000000Z"}"#
        #expect(try WireJSON.encode(SettlementRunReply(summary)) == expected)
        #expect(try WireJSON.encode(SettlementRunLine(summary)) == #"{"summary":"# + expected + "}")
    }

    /// `ledgerd settle --json` used to print the summary re-serialized by JSONSerialization (keys sorted its
    /// way, slashes escaped); it now prints the summary its generated client decoded (the document's
    /// `SettlementRunLine`, `Components.Schemas`) encoded again in the API's form: the same bytes.
    @Test func theCLIsJSONSummaryIsTheBytesItAlwaysPrinted() throws {
        let summary = SettlementRunSummary(
            businessDate: Self.date("2026-06-17"),
            cutOffAt: Self.cutOff,
            batches: [
                SettlementBatchOutcome(batch: Self.batch(through: .paid), appendedEvents: 1),
                SettlementBatchOutcome(batch: Self.batch(through: .closed), appendedEvents: 2),
            ]
        )
        let line = try WireJSON.encode(SettlementRunLine(summary))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let before = try JSONSerialization.data(withJSONObject: try #require(object["summary"]), options: [.sortedKeys])
        let decoded = try #require(try WireJSON.decode(SettlementRunLine.self, from: line).summary)
        #expect(try WireJSON.encode(decoded) == String(decoding: before, as: UTF8.self))
        let generated = try #require(try JSONDecoder().decode(Components.Schemas.SettlementRunLine.self, from: Data(line.utf8)).summary)
        #expect(try WireJSON.encode(generated) == String(decoding: before, as: UTF8.self))
        // A run that failed after it started ends with an `error` line; a refusal before it started is an error reply
        // with its status (the client's 4xx cases), never a line: a line's `error` has no `field`, and the document
        // (`additionalProperties: false`) refuses a member it does not name.
        let failed = #"{"error":{"code":"acquirer_refused","message":"the acquirer refused the batch"}}"#
        #expect(
            try WireJSON.decode(SettlementRunLine.self, from: failed).error
                == .init(code: "acquirer_refused", message: "the acquirer refused the batch")
        )
        let refusal = #"{"error":{"code":"cut_off_not_reached","field":"business_date","message":"not yet"}}"#
        #expect(throws: DecodingError.self) { try WireJSON.decode(SettlementRunLine.self, from: refusal) }
    }

    @Test func aBatchAndAReconciliationAreEncodedAsRecorded() throws {
        let paid = try WireJSON.encode(SettlementBatchReply(Self.batch(through: .paid)))
        #expect(
            paid == #"{"batch_id":"OrderLedgerStore-USD-2026-06-17","batch_number":1664749,"business_date":"2026-06-17","captures":2,"#
                + #""commission":"0.00","currency":"USD","cut_off_at":"2026-06-17T22:00:00.000000Z","expected_value_date":"2026-06-18","#
                + #""gross":"64.00","gross_credit":"69.00","gross_debit":"5.00","interchange":"0.97","markup":"0.55","#
                + #""merchant_account":"OrderLedgerStore","net":"62.39","paid_amount":"62.39","paid_value_date":"2026-06-18","#
                + #""payout":"62.39","payout_reference":"19C516E65415CDF9","pinned_position":40,"refunds":1,"report_sha256":""#
                + String(repeating: "b", count: 64) + #"","scheme_fees":"0.09","stage":"paid","value_date":"2026-06-18"}"#
        )
        let opened = try WireJSON.encode(SettlementBatchReply(Self.batch(through: .opened)))
        #expect(
            opened == #"{"batch_id":"OrderLedgerStore-USD-2026-06-17","business_date":"2026-06-17","captures":0,"currency":"USD","#
                + #""cut_off_at":"2026-06-17T22:00:00.000000Z","merchant_account":"OrderLedgerStore","pinned_position":40,"refunds":0,"#
                + #""stage":"opened"}"#
        )

        let reply = ReconciliationReply(Self.reconciliation)
        #expect(reply.openBreaks == 1 && reply.breaks.map(\.resolved) == [false, true])
        // Amounts as decimal strings in the batch's currency; the view lists every report's
        // reconciliation and every resolution.
        let amountBreak =
            #"{"actual":"59.01","break_id":"OrderLedgerStore-USD-2026-06-17.amount_mismatch.o-1-capture-1","class":"amount_mismatch","#
            + #""detail":"gross differs from the ledger","expected":"59.00","reference":"o-1-capture-1","resolved":false}"#
        let resolvedBreak =
            #"{"break_id":"OrderLedgerStore-USD-2026-06-17.missing_at_acquirer.o-2-capture-1","class":"missing_at_acquirer","#
            + #""detail":"absent from this report and the next","expected":"10.00","reference":"o-2-capture-1","#
            + #""resolution_reason":"acquirer ticket 42","resolved":true,"resolved_by":"operator:env-operator-1"}"#
        let breaks = "[\(amountBreak),\(resolvedBreak)]"
        let acquirers =
            #"{"breaks":\#(breaks),"ledger_items":3,"matched":1,"open_breaks":1,"recorded_at":"2026-06-17T22:00:00.000000Z","#
            + #""report":"acquirer","report_lines":4,"window_closed":true}"#
        #expect(
            try WireJSON.encode(reply)
                == #"{"batch_id":"OrderLedgerStore-USD-2026-06-17","breaks":\#(breaks),"currency":"USD","ledger_items":3,"#
                + #""matched":1,"merchant_account":"OrderLedgerStore","open_breaks":1,"reconciliations":[\#(acquirers)],"report":"acquirer","report_lines":4,"#
                + #""resolutions":[\#(resolvedBreak)],"window_closed":true}"#
        )

        let erased = [
            PrivacyService.Erasure(contactRef: "contact-1", orderIDs: ["o-1"], position: 59),
            PrivacyService.Erasure(contactRef: "contact-2", orderIDs: [], position: 60),
        ]
        #expect(
            try WireJSON.encode(ErasureReply(erased))
                == #"{"erased":[{"contact_ref":"contact-1","order_ids":["o-1"],"position":59},"#
                + #"{"contact_ref":"contact-2","order_ids":[],"position":60}]}"#
        )
    }

    @Test func rawJSONKeepsItsMembersInTheOrderGivenAndLeavesOutNil() throws {
        let events = RawJSON(stored: #"[{"data": {"b": 1, "a": 2}}]"#)
        #expect(
            RawJSON.object(["stream": .string("order-1"), "events": events]).text
                == #"{"stream":"order-1","events":[{"data": {"b": 1, "a": 2}}]}"#
        )
        let point = StateAnswer.Point(position: 31, micros: 1_781_690_400_000_000)
        #expect(
            RawJSON.object(["order": RawJSON(stored: "{}"), "as_of": point.asOfJSON, "links": nil]).text
                == #"{"order":{},"as_of":{"position":31,"time":"2026-06-17T10:00:00.000000Z"}}"#
        )
        #expect(
            RawJSON.object(["next_after": .integer(nil), "next_cursor": .optionalString("12"), "n": .integer(-3)]).text
                == #"{"next_after":null,"next_cursor":"12","n":-3}"#
        )
        #expect(RawJSON.string("a\"b\\c\nd\u{1}/é").text == #""a\"b\\c\nd\u0001/é""#)
        #expect(RawJSON.array([.null, .string("x"), RawJSON(stored: "[]")]).text == #"[null,"x",[]]"#)
        #expect(RawJSON.object([:]).text == "{}")
        // A typed value among spliced members is encoded by WireJSON: keys sorted, slashes as they are.
        #expect(try RawJSON(encoding: ["z": "a/b", "a": "c"]).text == #"{"a":"c","z":"a/b"}"#)
    }

    /// `POST /payment` decodes its body once; an Apple Pay token sent as an object is kept in the text the
    /// earlier parse-and-rewrite (JSONSerialization, keys sorted) gave, which the idempotency hash covers.
    @Test(arguments: [
        #"{"version":"EC_v1","data":"ab/cd+ef==","signature":"MIA/+x","#
            + #""header":{"ephemeralPublicKey":"MFk/","publicKeyHash":"x/y","transactionId":"0fe"}}"#,
        #"{"paymentData":{"version":"RSA_v1","data":"q","signature":"s","header":{"wrappedKey":"w/","publicKeyHash":"p","transactionId":"t"}},"#
            + #""paymentMethod":{"displayName":"Visa 0224","network":"Visa","type":"debit"},"transactionIdentifier":"ABC/1"}"#,
        #"{"b":1,"B":2,"a10":3,"a9":4,"_x":5,"a_b":6,"a-b":7,"ä":8,"Z":null,"t":true,"f":false,"n":[1,-1,2.5,0.1,1e3,9223372036854775807]}"#,
        #"{"s":"é\u00e9\"\\\n\t\u0001\u007f\u2028😀 \/ <>&'","nested":{"y":{},"x":[[],{"k":"v"}]}}"#,
    ])
    func anApplePayTokenObjectKeepsItsCanonicalText(token: String) throws {
        let before = try JSONSerialization.data(withJSONObject: try JSONSerialization.jsonObject(with: Data(token.utf8)), options: [.sortedKeys])
        var body: [String: Any] = [
            "gateway": "stripe", "source": "tok_visa", "amount": 5900, "currency": "USD", "description": "Clock",
            "shipping_contact": "Jane Appleseed", "shipping_email": "jane@example.com", "shipping_street": "1 Infinite Loop",
            "shipping_city": "Cupertino", "shipping_state": "CA", "shipping_zip": "95014", "shipping_method_name": "Standard",
        ]
        body["gateway"] = "applepay"
        body["source"] = try JSONSerialization.jsonObject(with: Data(token.utf8))
        let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            .replacingOccurrences(of: #""source":"#, with: #""source" :  "#)
        let request = try PaymentRequest.parse(body: ByteBuffer(string: text), contentType: "application/json")
        #expect(request.source == .applePayToken(json: String(decoding: before, as: UTF8.self)))
    }
}
