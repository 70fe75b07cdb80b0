import Foundation
import LedgerAcquirer
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// The direct JSON writer must write exactly what Foundation's `JSONEncoder` writes in ``LedgerJSON``'s form:
/// event bytes are hashed into the chain and idempotency hashes compare bytes written before and after it.
@Suite struct CanonicalJSONEncoderTests {
    private func both(_ value: some Encodable) throws -> (direct: String, foundation: String) {
        (
            String(decoding: try CanonicalJSONEncoder.encode(value), as: UTF8.self),
            String(decoding: try LedgerJSON.foundationEncode(value), as: UTF8.self)
        )
    }

    @Test(arguments: CatalogueSamples.all)
    func everyEventSampleIsWrittenDirectlyAndByteForByteAsFoundationWritesIt(event: LedgerEvent) throws {
        let (direct, foundation) = try both(event.payload)  // throws if the direct writer refused it
        #expect(direct == foundation)
        #expect(try event.encodedData() == Data(foundation.utf8))
    }

    @Test func metadataIsWrittenDirectly() throws {
        var metadata = EventMetadata(correlationID: "corr\"1\n", actor: "operator:ops/key-1", command: "PlaceOrder")
        metadata.idempotencyKey = "k-é-\u{1}"
        let (direct, foundation) = try both(metadata)
        #expect(direct == foundation)
    }

    @Test func namesSortByTheirBytesAndEscapesMatch() throws {
        let keys = ["a10", "a9", "B", "a", "_x", "a_b", "ab", "A", "é", "ａ", "Z", "1", "10", "9", "", "a\"b", "a\\b", "a/b"]
        let object = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        let (direct, foundation) = try both(object)
        #expect(direct == foundation)
        #expect(direct.hasPrefix(#"{"":14,"1":11,"10":12,"9":13,"A":7,"B":2,"Z":10,"_x":4,"a":3,"a\"b":15,"a/b":17,"a10":0,"a9":1,"#))
        let text = "a/b\"\\\u{8}\u{c}\n\r\t\u{0}\u{1}\u{1f}\u{7f}é\u{2028}😀 end"
        let (directText, foundationText) = try both(["s": text])
        #expect(directText == foundationText)
        #expect(directText == "{\"s\":\"a/b\\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\u{7f}é\u{2028}😀 end\"}")
    }

    @Test func integersOfEveryWidthAndTheirExtremes() throws {
        struct Integers: Encodable {
            var a = Int.min, b = Int.max, c = Int8.min, d = Int16.min, e = Int32.min, f = Int64.min
            var g = UInt.max, h = UInt8.max, i = UInt16.max, j = UInt32.max, k = UInt64.max, l = 0, m = -7, n = 10
        }
        let (direct, foundation) = try both(Integers())
        #expect(direct == foundation)
        #expect(try both([Int64.min, 0, 42, -1]) == ("[-9223372036854775808,0,42,-1]", "[-9223372036854775808,0,42,-1]"))
    }

    @Test func optionalsNullsNestingAndEmptyContainers() throws {
        struct Inner: Encodable, Sendable {
            var name: String?
            var tags: [String] = []
            var nested: [[Int]] = [[], [1, 2], [3]]
        }
        struct Outer: Encodable {
            var inner = Inner(name: nil)
            var list = [Inner(name: "x"), Inner(name: nil, tags: ["a", "b"])]
            var empty: [String: Int] = [:]
            var maybe: Int? = nil
            var flag = true
            var off = false
            var byNumber: [Int: String] = [3: "c", 10: "j", 2: "b"]
            var optionalInArray: [String?] = [nil, "x"]

            enum CodingKeys: String, CodingKey {
                case inner, list, empty, maybe, flag, off
                case byNumber = "by_number"
                case optionalInArray = "in_array"
                case explicitNull = "explicit_null"
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(inner, forKey: .inner)
                try container.encode(list, forKey: .list)
                try container.encode(empty, forKey: .empty)
                try container.encodeIfPresent(maybe, forKey: .maybe)
                try container.encode(flag, forKey: .flag)
                try container.encode(off, forKey: .off)
                try container.encode(byNumber, forKey: .byNumber)
                try container.encode(optionalInArray, forKey: .optionalInArray)
                try container.encodeNil(forKey: .explicitNull)
            }
        }
        let (direct, foundation) = try both(Outer())
        #expect(direct == foundation)
        #expect(try both("top") == (#""top""#, #""top""#))
        #expect(try both([String]()) == ("[]", "[]"))
    }

    @Test func aNameEncodedTwiceKeepsItsLastValueAsInFoundation() throws {
        struct Twice: Encodable {
            enum CodingKeys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(1, forKey: .b)
                try container.encode("first", forKey: .a)
                try container.encode("second", forKey: .a)
            }
        }
        let (direct, foundation) = try both(Twice())
        #expect(direct == foundation)
        #expect(direct == #"{"a":"second","b":1}"#)
    }

    /// What it does not write as Foundation does, it refuses, and ``LedgerJSON`` writes Foundation's bytes.
    @Test func whatItRefusesLedgerJSONWritesWithFoundation() throws {
        struct WithFloat: Encodable { var rate: Float = 0.1 }
        struct WithInfinity: Encodable { var rate = Double.infinity }
        struct WithData: Encodable { var bytes = Data([1, 2, 3]) }
        struct WithURL: Encodable { var url = URL(string: "https://example.com/a")! }
        struct WithNested: Encodable {
            enum CodingKeys: String, CodingKey { case outer, x }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                var nested = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .outer)
                try container.encode(1, forKey: .x)
                try nested.encode(2, forKey: .x)
            }
        }
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        struct HoldsNothing: Encodable { var nothing = Nothing() }
        func check(_ value: some Encodable) throws {
            #expect(throws: CanonicalJSONEncoder.Unsupported.self) { try CanonicalJSONEncoder.encode(value) }
            #expect(try LedgerJSON.encode(value) == LedgerJSON.foundationEncode(value))
            #expect(try LedgerJSON.string(value) == String(decoding: LedgerJSON.foundationEncode(value), as: UTF8.self))
        }
        try check(WithFloat())
        try check([Float(1.5)])
        #expect(throws: CanonicalJSONEncoder.Unsupported.self) { try CanonicalJSONEncoder.encode(WithInfinity()) }
        #expect(throws: (any Error).self) { try LedgerJSON.encode(WithInfinity()) }  // Foundation's error
        try check(WithData())
        try check(WithURL())
        try check(WithNested())
        try check(HoldsNothing())
        #expect(try LedgerJSON.string(WithNested()) == #"{"outer":{"x":2},"x":1}"#)
    }

    /// Dates (Foundation's default: the `Double` of `timeIntervalSinceReferenceDate`) and doubles — the acquirer's wire
    /// messages and journal — are written directly, byte for byte as Foundation writes them: whole, fractional, tiny,
    /// huge, negative, `-0`, and random bit patterns.
    @Test(.seeded()) func datesAndDoublesAreWrittenDirectlyAsFoundationWritesThem() throws {
        struct Stamped: Encodable {
            var at: Date
            var expires: Date?
            var rate: Double
            var rates: [Double]
        }
        var random = PropertySeed.generator()
        var values: [Double] = [
            0, -0.0, 1, -1, 0.1, 1.5, 1e-7, 1e16, 1e21, 123_456_789.125, Double("9007199254740993")!, .ulpOfOne, Double("5e-324")!,
        ]
        values += (0..<2_000).map { _ in Double.random(in: 0..<2e9, using: &random) }
        values += (0..<2_000).map { _ in
            Double(Int.random(in: 0..<2_000_000_000, using: &random)) + Double(Int.random(in: 0..<1_000, using: &random)) / 1_000
        }
        values += (0..<2_000).map { _ in Double(bitPattern: random.next()) }.filter(\.isFinite)
        for value in values {
            let stamped = Stamped(at: Date(timeIntervalSinceReferenceDate: value), expires: nil, rate: value, rates: [value, 2])
            let (direct, foundation) = try both(stamped)
            #expect(direct == foundation)
            if direct != foundation { break }
            let date = try both(Date(timeIntervalSinceReferenceDate: value))
            #expect(date.direct == date.foundation)
        }
    }

    /// Seeded random trees of objects (random names, among them escapes and non-ASCII), arrays, strings,
    /// integers, booleans and nulls: the same bytes as Foundation's.
    @Test(.seeded()) func randomValuesAreWrittenAsFoundationWritesThem() throws {
        var random = PropertySeed.generator()
        let alphabet: [Character] = ["a", "b", "z", "A", "_", "0", "9", "/", "\"", "\\", "\n", "\u{1}", "é", "😀", " ", "-"]
        func name() -> String {
            String((0..<Int.random(in: 0...4, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
        }
        func tree(_ depth: Int) -> Tree {
            switch Int.random(in: 0...(depth > 3 ? 3 : 5), using: &random) {
            case 0: return .string(name())
            case 1: return .integer(Int64.random(in: .min ... .max, using: &random))
            case 2: return .boolean(Bool.random(using: &random))
            case 3: return .null
            case 4: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in tree(depth + 1) })
            default:
                return .object((0..<Int.random(in: 0...5, using: &random)).map { _ in (name(), tree(depth + 1)) })
            }
        }
        for _ in 0..<300 {
            let value = tree(0)
            let (direct, foundation) = try both(value)
            #expect(direct == foundation)
            if direct != foundation { break }
        }
    }

    private indirect enum Tree: Encodable {
        case string(String)
        case integer(Int64)
        case boolean(Bool)
        case null
        case array([Tree])
        case object([(String, Tree)])

        struct Name: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .string(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .integer(let number):
                var container = encoder.singleValueContainer()
                try container.encode(number)
            case .boolean(let flag):
                var container = encoder.singleValueContainer()
                try container.encode(flag)
            case .null:
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            case .array(let elements):
                var container = encoder.unkeyedContainer()
                for element in elements { try container.encode(element) }
            case .object(let members):
                var container = encoder.container(keyedBy: Name.self)
                for (name, member) in members { try container.encode(member, forKey: Name(stringValue: name)) }
            }
        }
    }
}
