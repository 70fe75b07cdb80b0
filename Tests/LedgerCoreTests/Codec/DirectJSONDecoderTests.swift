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
        #expect(try direct(Tried.self, "1.5").get() == nil)
        #expect(try LedgerJSON.decode(Tried.self, from: "1.5") == Tried(number: 1.5, text: nil))
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
