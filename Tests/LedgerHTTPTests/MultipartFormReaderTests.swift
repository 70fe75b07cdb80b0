import LedgerHTTP
import Testing

/// The console's streaming `multipart/form-data` reader (the report upload), without a server: a browser's form read
/// whole and in every split of its bytes gives the same fields and file, and broken framing is refused.
@Suite struct MultipartFormReaderTests {
    static let boundary = "----WebKitFormBoundaryX3bY7"
    static let contentType = "multipart/form-data; boundary=\(boundary)"

    /// A form as Chromium sends it: two fields, then the file (with CRLFs and a line that starts like a boundary).
    static let file = "Company Account,Merchant Account\r\n--not-the-boundary\r\nAcme,AcmeShop\r\n"
    static var body: [UInt8] {
        let b = boundary
        let text =
            "--\(b)\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\ntok-123\r\n"
            + "--\(b)\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\nadyen_sdr\r\n"
            + "--\(b)\r\nContent-Disposition: form-data; name=\"report\"; filename=\"report.csv\"\r\nContent-Type: text/csv\r\n\r\n"
            + file + "\r\n--\(b)--\r\n"
        return Array(text.utf8)
    }

    /// The fields and the file's bytes of `chunks` fed in order.
    static func read(_ chunks: [[UInt8]]) throws -> (fields: [String: String], files: [String: [UInt8]]) {
        var reader = try #require(MultipartFormReader(contentType: contentType))
        var fields: [String: String] = [:]
        var files: [String: [UInt8]] = [:]
        var current: String?
        for chunk in chunks {
            for event in try reader.feed(chunk) {
                switch event {
                case .field(let name, let value): fields[name] = value
                case .fileStart(let name, let filename):
                    #expect(filename == "report.csv")
                    current = name
                    files[name] = []
                case .fileBytes(let bytes): files[current!, default: []] += bytes
                case .fileEnd: current = nil
                }
            }
        }
        try reader.finish()
        return (fields, files)
    }

    @Test func aFormReadsTheSameWholeAndInEverySplit() throws {
        let body = Self.body
        let whole = try Self.read([body])
        #expect(whole.fields == ["csrf_token": "tok-123", "format": "adyen_sdr"])
        #expect(whole.files == ["report": Array(Self.file.utf8)])
        for cut in 1..<body.count {
            let split = try Self.read([Array(body[..<cut]), Array(body[cut...])])
            #expect(split.fields == whole.fields && split.files == whole.files, "split at \(cut)")
        }
        // One byte at a time.
        let bytes = try Self.read(body.map { [$0] })
        #expect(bytes.fields == whole.fields && bytes.files == whole.files)
    }

    @Test func aQuotedBoundaryAndAnotherContentTypeAreTold() {
        #expect(MultipartFormReader(contentType: "multipart/form-data; boundary=\"a b\"") != nil)
        #expect(MultipartFormReader(contentType: "application/x-www-form-urlencoded") == nil)
        #expect(MultipartFormReader(contentType: "multipart/form-data") == nil)
        #expect(MultipartFormReader(contentType: "multipart/form-data; boundary=" + String(repeating: "x", count: 71)) == nil)
    }

    @Test func brokenFramingIsRefused() throws {
        // Cut before the closing delimiter.
        let body = Self.body
        var reader = try #require(MultipartFormReader(contentType: Self.contentType))
        _ = try reader.feed(body[..<(body.count - 10)])
        #expect(throws: MultipartFormReader.Failure.self) { try reader.finish() }
        // A part without a name.
        var nameless = try #require(MultipartFormReader(contentType: Self.contentType))
        let text = "--\(Self.boundary)\r\nContent-Disposition: form-data\r\n\r\nx\r\n--\(Self.boundary)--\r\n"
        #expect(throws: MultipartFormReader.Failure.self) { _ = try nameless.feed(Array(text.utf8)) }
        // A field past its limit, however it arrives.
        var large = try #require(MultipartFormReader(contentType: Self.contentType))
        _ = try large.feed(Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"batch\"\r\n\r\n".utf8))
        let refusal = #expect(throws: MultipartFormReader.Failure.self) {
            for _ in 0..<20 { _ = try large.feed([UInt8](repeating: 65, count: 1_024)) }
        }
        #expect(refusal?.message.contains("batch") == true)
        // Headers without an end.
        var endless = try #require(MultipartFormReader(contentType: Self.contentType))
        _ = try endless.feed(Array("--\(Self.boundary)\r\n".utf8))
        #expect(throws: MultipartFormReader.Failure.self) { _ = try endless.feed([UInt8](repeating: 65, count: 9_000)) }
    }
}
