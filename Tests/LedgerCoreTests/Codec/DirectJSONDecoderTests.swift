import Foundation
import LedgerAcquirer
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// The direct decoder must decode exactly as Foundation's `JSONDecoder` does, and hand Foundation whatever it is not
/// certain of.
@Suite struct DirectJSONDecoderTests {
    /// The direct answer (nil: handed to Foundation), as a result.
    private func direct<T: Decodable>(_ type: T.Type, _ text: String) -> Result<T?, any Error> {
        var text = text
        return Result { try text.withUTF8 { try DirectJSONDecoder.decode(type, from: UnsafeRawBufferPointer($0)) } }
    }

    private func foundation<T: Decodable>(_ type: T.Type, _ text: String) -> Result<T, any Error> {
        Result { try LedgerJSON.foundationDecode(type, from: Data(text.utf8)) }
    }

    @Test(arguments: CatalogueSamples.all)
    func everyEventSampleDecodesDirectlyAsFoundationDecodesIt(event: LedgerEvent) throws {
        func check<P: LedgerEventPayload>(_ payload: P) throws {
            let text = String(decoding: try LedgerJSON.encode(payload), as: UTF8.self)
            let decoded = try #require(try direct(P.self, text).get(), "the direct decoder handed \(P.self) to Foundation")
            #expect(decoded == payload)
            #expect(decoded == (try foundation(P.self, text).get()))
        }
        try check(event.payload)
        #expect(try LedgerEvent.decode(type: event.type, schemaVersion: event.schemaVersion, data: event.encodedData()) == event)
    }

    struct Sample: Codable, Equatable {
        var name: String
        var count: Int
        var big: Int64
        var small: Int8?
        var flags: [Bool]
        var nested: [String: [Int]]
        var optional: String?
        var unsigned: UInt64?
    }

    @Test(arguments: [
        #"{"name":"a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\ud83d\ude00 é","count":-12,"big":-9223372036854775808,"flags":[true,false],"nested":{"x":[1,2],"y":[]},"optional":null}"#,
        #" { "name" : "x" , "count" : 0 , "big" : 9223372036854775807 , "small" : -128 , "flags" : [ ] , "nested" : { } } "#,
        #"{"name":"x","count":1,"big":2,"flags":[],"nested":{},"unsigned":18446744073709551615}"#,
        #"{"name":"x","count":1.0,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":1e2,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":1.5,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":1,"big":9223372036854775808,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":1,"big":2,"small":128,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":"1","big":2,"flags":[],"nested":{}}"#,
        #"{"name":1,"count":1,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":true,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":1,"big":2,"flags":[1],"nested":{}}"#,
        #"{"name":"x","count":1,"big":2,"flags":[],"nested":{},"name":"y"}"#,
        #"{"name":"x","count":1,"big":2,"flags":[]}"#,
        #"{"name":"x","count":1,"big":2,"flags":[],"nested":{},}"#,
        #"{"name":"\ud800","count":1,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":01,"big":2,"flags":[],"nested":{}}"#,
        #"{"name":"x","count":-0,"big":2,"flags":[],"nested":{}}"#,
        #"[1,2]"#, #""x""#, "", "nul", "{\"name\":\"tab\traw\",\"count\":1,\"big\":2,\"flags\":[],\"nested\":{}}",
    ])
    func bodiesDecodeAsFoundationDecodesThem(text: String) {
        let reference = foundation(Sample.self, text)
        switch direct(Sample.self, text) {
        case .success(let value?):
            #expect(value == (try? reference.get()), "direct \(value), Foundation \(reference)")
        case .success(nil):
            break  // handed to Foundation: whatever it answers is the answer
        case .failure(let error):
            // Refused here only when Foundation refuses too.
            #expect(throws: (any Error).self, "direct refused (\(error)), Foundation decoded") { try reference.get() }
        }
        // Through LedgerJSON, the answer is Foundation's in every case.
        let through = Result { try LedgerJSON.decode(Sample.self, from: text) }
        #expect((try? through.get()) == (try? reference.get()))
    }

    /// A value tried as a number before it is read as text (the payment body's `source`): a string is certainly not a
    /// binary floating point number, so the body stays with the direct decoder; a number goes to Foundation.
    @Test func aStringTriedAsFloatingPointIsACertainMismatch() throws {
        struct Tried: Decodable, Equatable {
            let number: Double?
            let text: String?
            init(number: Double?, text: String?) {
                (self.number, self.text) = (number, text)
            }
            init(from decoder: any Decoder) throws {
                let value = try decoder.singleValueContainer()
                number = try? value.decode(Double.self)
                text = number == nil ? try value.decode(String.self) : nil
            }
        }
        #expect(try direct(Tried.self, #""tok_visa""#).get() == Tried(number: nil, text: "tok_visa"))
        #expect(try direct(Tried.self, "1.5").get() == Tried(number: 1.5, text: nil))
        #expect(try LedgerJSON.decode(Tried.self, from: "1.5") == Tried(number: 1.5, text: nil))
        #expect(try direct(Tried.self, "1e400").get() == nil)  // beyond Double: Foundation's refusal
    }

    /// Doubles and dates (Foundation's default: a number of seconds since the reference date) are decoded directly, to the
    /// same value Foundation reads: whole numbers, fractions, exponents, beyond Int64, `-0`, random bit patterns written
    /// as Foundation writes them; a number beyond `Double`'s range goes to Foundation.
    @Test(.seeded()) func doublesAndDatesDecodeAsFoundationDecodesThem() throws {
        struct Stamped: Codable, Equatable {
            var at: Date
            var rate: Double
            var rates: [Double]
        }
        var random = PropertySeed.generator()
        var texts = [
            "0", "-0", "1", "-1", "0.1", "1.5", "1e-7", "1E2", "-2.5e+3", "9223372036854775808", "123456789012345678901234567890",
            "9007199254740993", "5e-324", "1.7976931348623157e308", "0.30000000000000004",
        ]
        texts += (0..<2_000).map { _ in String(describing: Double(bitPattern: random.next())) }.filter { !$0.contains("n") }
        texts += (0..<2_000).map { _ in String(describing: Double.random(in: 0..<2e9, using: &random)) }
        for number in texts {
            let text = #"{"at":\#(number),"rate":\#(number),"rates":[\#(number),2]}"#
            let reference = try foundation(Stamped.self, text).get()
            let decoded = try #require(try direct(Stamped.self, text).get(), "handed \(number) to Foundation")
            #expect(decoded.rate.bitPattern == reference.rate.bitPattern, "\(number)")
            #expect(decoded.at.timeIntervalSinceReferenceDate.bitPattern == reference.at.timeIntervalSinceReferenceDate.bitPattern)
            #expect(decoded == reference)
        }
        #expect(try direct(Stamped.self, #"{"at":1e400,"rate":1,"rates":[]}"#).get() == nil)
        #expect(throws: (any Error).self) { try LedgerJSON.decode(Stamped.self, from: #"{"at":1e400,"rate":1,"rates":[]}"#) }
    }

    /// What a body's `init(from:)` catches with `try?` still sends the decode to Foundation when it was uncertain.
    @Test func anUncertainMemberCaughtByTheValueStillGoesToFoundation() throws {
        struct Lenient: Decodable, Equatable {
            let count: Int?
            enum CodingKeys: String, CodingKey { case count }
            init(count: Int?) { self.count = count }
            init(from decoder: any Decoder) throws {
                count = try? decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .count)
            }
        }
        #expect(try direct(Lenient.self, #"{"count":1.0}"#).get() == nil)
        #expect(
            try LedgerJSON.decode(Lenient.self, from: #"{"count":1.0}"#)
                == LedgerJSON.foundationDecode(Lenient.self, from: Data(#"{"count":1.0}"#.utf8))
        )
        #expect(try direct(Lenient.self, #"{"count":"1"}"#).get() == Lenient(count: nil))
    }
}
