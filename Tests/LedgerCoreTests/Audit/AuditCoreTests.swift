import Foundation
import LedgerCore
import Testing

@Suite struct RFC3339Tests {
    @Test(arguments: [
        ("2026-11-21T09:30:00Z", "2026-11-21T09:30:00.000000Z"),
        ("2026-11-21T09:30:00.25Z", "2026-11-21T09:30:00.250000Z"),
        ("2026-11-21t09:30:00.123456789z", "2026-11-21T09:30:00.123456Z"),
        ("2026-11-21 10:30:00+01:00", "2026-11-21T09:30:00.000000Z"),
        ("2026-11-21T04:00:00.5-05:30", "2026-11-21T09:30:00.500000Z"),
        ("1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:59.999999Z"),
        ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000000Z"),
    ])
    func parsesToExactMicroseconds(_ text: String, _ canonical: String) throws {
        let micros = try #require(RFC3339.micros(text))
        #expect(RFC3339.format(micros) == canonical)
        #expect(RFC3339.micros(canonical) == micros)
    }

    @Test(arguments: [
        "", "2026-11-21", "2026-11-21T09:30:00", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T09:30:00.Z", "2026-11-21T09:30:00+0100", "2026-11-21T09:30:00Zjunk",
        "２026-11-21T09:30:00Z",
    ])
    func refusesWhatIsNotRFC3339(_ text: String) {
        #expect(RFC3339.micros(text) == nil)
    }

    @Test func formatAgreesWithTheEventTimestampsForRandomInstants() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let micros = Int64.random(in: -2_000_000_000_000_000...4_000_000_000_000_000, using: &rng)
            #expect(RFC3339.micros(RFC3339.format(micros)) == micros, "\(micros)")
        }
    }

    @Test func asOfIsAPositionOrATime() {
        #expect(AsOf("0") == .position(0))
        #expect(AsOf("42") == .position(42))
        #expect(AsOf("2026-11-21T09:30:00Z") == .time(micros: RFC3339.micros("2026-11-21T09:30:00Z")!))
        #expect(AsOf("-1") == nil && AsOf("") == nil && AsOf("99999999999999999999") == nil && AsOf("yesterday") == nil)
    }
}

@Suite struct CSVWriterTests {
    @Test func quotedFieldsReadBackFieldForField() throws {
        let records = [
            ["plain", "with, comma", "with \"quotes\"", "line\nbreak", "crlf\r\nbreak", "", " padded "],
            [#"{"a": "b, \"c\""}"#, "ü ✓", "\r", ","],
        ]
        let text = records.map { CSVWriter.record($0, .exact) }.joined()
        #expect(try CSVReader.records(text) == records)
        #expect(CSVWriter.field("plain", .exact) == "plain")
        #expect(CSVWriter.field("a\"b", .exact) == "\"a\"\"b\"")
    }
}

@Suite struct EventFilterTests {
    func event(_ position: Int64, stream: String, type: String, recorded: Int64) -> RecordedEvent {
        RecordedEvent(
            position: position,
            streamID: StreamID(stream)!,
            streamVersion: 1,
            eventID: UUID(),
            type: type,
            schemaVersion: 1,
            data: "{}",
            metadata: "{}",
            effectiveAtMicros: 0,
            recordedAtMicros: recorded,
            prevHash: [],
            hash: []
        )
    }

    @Test func everyGivenConditionMustHold() {
        let e = event(5, stream: "order-1", type: "OrderOpened", recorded: 1_000)
        #expect(EventFilter().matches(e, correlationID: nil))
        #expect(EventFilter(types: ["OrderOpened", "X"]).matches(e, correlationID: nil))
        #expect(!EventFilter(types: ["X"]).matches(e, correlationID: nil))
        #expect(EventFilter(streamPrefix: "order-").matches(e, correlationID: nil))
        #expect(!EventFilter(streamPrefix: "hold-").matches(e, correlationID: nil))
        #expect(EventFilter(fromMicros: 1_000, toMicros: 1_001).matches(e, correlationID: nil))
        #expect(!EventFilter(fromMicros: 1_001).matches(e, correlationID: nil))
        #expect(!EventFilter(toMicros: 1_000).matches(e, correlationID: nil))
        #expect(EventFilter(correlationID: "c").matches(e, correlationID: "c"))
        #expect(!EventFilter(correlationID: "c").matches(e, correlationID: nil))
    }
}

@Suite struct CheckpointFormatTests {
    @Test func theSignedMessageIsTheDocumentedText() throws {
        let checkpoint = Checkpoint(
            position: 1234,
            hash: String(repeating: "ab", count: 32),
            recordedAt: "2026-11-21T23:59:00.000001Z",
            signedAt: "2026-11-21T23:59:01.000000Z",
            publicKey: String(repeating: "01", count: 32),
            signature: "ff"
        )
        #expect(
            String(decoding: checkpoint.signedMessage, as: UTF8.self) == """
                ledgerd-checkpoint-v1
                position=1234
                hash=\(String(repeating: "ab", count: 32))
                recorded_at=2026-11-21T23:59:00.000001Z
                signed_at=2026-11-21T23:59:01.000000Z
                public_key=\(String(repeating: "01", count: 32))

                """
        )
        let file = try JSONEncoder().encode(CheckpointFile(checkpoint))
        let text = String(decoding: file, as: UTF8.self)
        #expect(text.contains(#""format":"ledgerd-checkpoint-v1""#) && text.contains(#""recorded_at""#))
        #expect(try JSONDecoder().decode(CheckpointFile.self, from: file).checkpoint == checkpoint)
        let other = Data(text.replacingOccurrences(of: "ledgerd-checkpoint-v1", with: "something-else").utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CheckpointFile.self, from: other) }
    }

    @Test func hexRoundTrips() {
        let bytes: [UInt8] = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(bytes)) == bytes)
        #expect(Hex.decode("ABcd") == [0xAB, 0xCD])
        #expect(Hex.decode("abc") == nil && Hex.decode("zz") == nil)
    }
}
