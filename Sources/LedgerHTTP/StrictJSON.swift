import Foundation
import Hummingbird

/// The one strict reading of a JSON request body, for `POST /payment` and every back-office body (review 3, input
/// strictness): `Content-Type: application/json` (else 415), at most `limit` bytes (else 413), and RFC 8259 JSON with
/// no duplicate member names at any depth and no trailing commas (else 400 `invalid_json` / `duplicate_field`).
/// `JSONDecoder` alone takes the first of two equal names and lets a misspelling through; the checked bytes are then
/// decoded into the route's ``JSONRequestBody``, which refuses members it does not take (400 `unknown_field`).
public enum StrictJSON {
    /// Why bytes are not strict JSON.
    public enum Problem: Error, Equatable, Sendable {
        case syntax(offset: Int)
        case duplicate(name: String)
        case tooDeep
    }

    /// Most nesting of arrays and objects.
    public static let maximumDepth = 64

    /// Reads `request`'s body through the rules above; the bytes, for the route's own decoding. An empty body (no bytes)
    /// is returned as it is, whatever its type: the routes that take one read it as `{}`. White space alone is not JSON
    /// (400 `invalid_json`, as the published contract says: schemathesis sent `"\n"` and it was taken as `{}`).
    public static func body(of request: Request, limit: Int) async throws -> ByteBuffer {
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: limit) } catch {
            throw APIError(status: .contentTooLarge, code: "payload_too_large", message: "the body is larger than \(limit / 1_024) KiB")
        }
        if body.readableBytes == 0 { return body }
        try checkContentType(request.headers[.contentType])
        try checked(body)
        return body
    }

    /// 415 unless `contentType` is `application/json` (parameters such as `charset` aside).
    public static func checkContentType(_ contentType: String?) throws(APIError) {
        let mediaType = contentType.map { $0.split(separator: ";", omittingEmptySubsequences: false).first.map(String.init) ?? $0 }
        guard mediaType?.trimmingCharacters(in: .whitespaces).lowercased() == "application/json" else {
            throw APIError(status: .unsupportedMediaType, code: "unsupported_media_type", message: "send the body as application/json")
        }
    }

    /// Throws the ``APIError`` for bytes that are not strict JSON.
    public static func checked(_ body: ByteBuffer) throws(APIError) {
        switch check(Array(body.readableBytesView)) {
        case nil: return
        case .duplicate(let name)?:
            throw APIError.badRequest("duplicate_field", "the body names \(name) twice", field: name)
        case .syntax?, .tooDeep?:
            throw APIError.badRequest("invalid_json", "the body is not valid JSON")
        }
    }

    /// Nil when `bytes` are one JSON value (with surrounding white space) under the rules above.
    public static func check(_ bytes: [UInt8]) -> Problem? {
        var parser = Parser(bytes: bytes)
        do throws(Problem) {
            parser.skipSpace()
            try parser.value(depth: 0)
            parser.skipSpace()
            guard parser.index == bytes.count else { throw Problem.syntax(offset: parser.index) }
            return nil
        } catch {
            return error
        }
    }

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func fail() -> Problem { .syntax(offset: index) }

        mutating func expect(_ byte: UInt8) throws(Problem) {
            guard index < bytes.count, bytes[index] == byte else { throw fail() }
            index += 1
        }

        mutating func value(depth: Int) throws(Problem) {
            guard index < bytes.count else { throw fail() }
            switch bytes[index] {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: try number()
            }
        }

        mutating func literal(_ word: String) throws(Problem) {
            for byte in word.utf8 { try expect(byte) }
        }

        mutating func object(depth: Int) throws(Problem) {
            guard depth <= StrictJSON.maximumDepth else { throw .tooDeep }
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            var names = Set<[UInt8]>()
            while true {
                skipSpace()
                let name = try string()
                guard names.insert(name).inserted else { throw .duplicate(name: String(decoding: name, as: UTF8.self)) }
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                try value(depth: depth)
                skipSpace()
                guard index < bytes.count else { throw fail() }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return
                }
                try expect(UInt8(ascii: ","))
            }
        }

        mutating func array(depth: Int) throws(Problem) {
            guard depth <= StrictJSON.maximumDepth else { throw .tooDeep }
            try expect(UInt8(ascii: "["))
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipSpace()
                try value(depth: depth)
                skipSpace()
                guard index < bytes.count else { throw fail() }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                try expect(UInt8(ascii: ","))
            }
        }

        /// A string's content with its escapes resolved (as UTF-8; a lone surrogate escape is a syntax error).
        mutating func string() throws(Problem) -> [UInt8] {
            try expect(UInt8(ascii: "\""))
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw fail() }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard String(validating: out, as: UTF8.self) != nil else { throw fail() }
                    return out
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw fail() }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            try expect(UInt8(ascii: "\\"))
                            try expect(UInt8(ascii: "u"))
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw fail() }
                        out += Array(String(Character(unicode)).utf8)
                    default: throw fail()
                    }
                default:
                    guard byte >= 0x20 else { throw fail() }
                    out.append(byte)
                }
            }
        }

        mutating func hex4() throws(Problem) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw fail()
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() throws(Problem) {
            func digits(_ parser: inout Parser) -> Int {
                let start = parser.index
                while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) {
                    parser.index += 1
                }
                return parser.index - start
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw fail() }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits(&self) > 0 else { throw fail() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw fail() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail() }
            }
        }
    }
}
