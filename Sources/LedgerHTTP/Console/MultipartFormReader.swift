/// A `multipart/form-data` body (RFC 7578, the delimiters of RFC 2046 §5.1.1) read as it streams in: each small field
/// collected whole, each file part handed on in chunks as its bytes arrive, so a file of any size passes through a
/// buffer of about one chunk. What a browser's file upload sends; the console's report upload reads it.
///
/// Bounded: a part's headers at most ``maximumHeaderBytes``, a field's value at most ``maximumFieldBytes``, at most
/// ``maximumParts`` parts; a body that breaks the framing (no opening delimiter, a part without a name, a body
/// that ends before the closing delimiter) is refused with a ``Failure`` naming what was wrong.
package struct MultipartFormReader {
    package enum Event: Equatable {
        case field(name: String, value: String)
        case fileStart(name: String, filename: String)
        case fileBytes([UInt8])
        case fileEnd
    }

    package struct Failure: Error, Equatable {
        package let message: String
    }

    package static let maximumHeaderBytes = 8 * 1024
    package static let maximumFieldBytes = 16 * 1024
    package static let maximumParts = 32

    enum State {
        /// Before the first delimiter.
        case preamble
        /// After a delimiter: its line end, or `--` ending the body.
        case afterDelimiter
        case headers
        case field(name: String, value: [UInt8])
        case file
        case done
    }

    /// `--boundary`, and the `CRLF--boundary` that ends a part's body.
    let delimiter: [UInt8]
    let bodyEnd: [UInt8]
    var state = State.preamble
    var buffer: [UInt8] = []
    var parts = 0

    /// The boundary of a `multipart/form-data` content type (`boundary=…`, quoted or not), or nil when the type is another.
    package init?(contentType: String) {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = pieces.first, type.lowercased() == "multipart/form-data" else { return nil }
        guard let parameter = pieces.dropFirst().first(where: { $0.lowercased().hasPrefix("boundary=") }) else { return nil }
        var boundary = String(parameter.dropFirst("boundary=".count))
        if boundary.hasPrefix("\""), boundary.hasSuffix("\""), boundary.count >= 2 { boundary = String(boundary.dropFirst().dropLast()) }
        // RFC 2046: 1 to 70 characters.
        guard (1...70).contains(boundary.utf8.count) else { return nil }
        delimiter = Array("--\(boundary)".utf8)
        bodyEnd = Array("\r\n--\(boundary)".utf8)
    }

    /// The events `bytes` completes, in order.
    package mutating func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(Failure) -> [Event] {
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        while try step(&events) {}
        return events
    }

    /// The body ended: refused unless its closing delimiter came.
    package func finish() throws(Failure) {
        guard case .done = state else { throw Failure(message: "the form's body ended before its closing boundary") }
    }

    /// One step of the machine on the buffer; false when it needs more bytes.
    mutating func step(_ events: inout [Event]) throws(Failure) -> Bool {
        switch state {
        case .preamble:
            guard let range = Self.find(delimiter, in: buffer) else {
                // Keep only what could still begin the delimiter.
                if buffer.count > delimiter.count { buffer.removeFirst(buffer.count - delimiter.count) }
                return false
            }
            buffer.removeFirst(range.upperBound)
            state = .afterDelimiter
            return true
        case .afterDelimiter:
            guard buffer.count >= 2 else { return false }
            if buffer[0] == UInt8(ascii: "-") && buffer[1] == UInt8(ascii: "-") {
                state = .done
                buffer = []
                return false
            }
            guard buffer[0] == 13 && buffer[1] == 10 else { throw Failure(message: "a boundary is not followed by a line end") }
            buffer.removeFirst(2)
            parts += 1
            guard parts <= Self.maximumParts else { throw Failure(message: "the form has more than \(Self.maximumParts) parts") }
            state = .headers
            return true
        case .headers:
            guard let end = Self.find(Array("\r\n\r\n".utf8), in: buffer) else {
                if buffer.count > Self.maximumHeaderBytes { throw Failure(message: "a part's headers exceed \(Self.maximumHeaderBytes) bytes") }
                return false
            }
            let headers = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
            buffer.removeFirst(end.upperBound)
            let (name, filename) = try Self.disposition(headers)
            if let filename {
                events.append(.fileStart(name: name, filename: filename))
                state = .file
            } else {
                state = .field(name: name, value: [])
            }
            return true
        case .field(let name, var value):
            if let end = Self.find(bodyEnd, in: buffer) {
                value += buffer[..<end.lowerBound]
                guard value.count <= Self.maximumFieldBytes else {
                    throw Failure(message: "the field \(name) exceeds \(Self.maximumFieldBytes) bytes")
                }
                buffer.removeFirst(end.upperBound)
                events.append(.field(name: name, value: String(decoding: value, as: UTF8.self)))
                state = .afterDelimiter
                return true
            }
            let safe = max(0, buffer.count - (bodyEnd.count - 1))
            value += buffer[..<safe]
            buffer.removeFirst(safe)
            guard value.count <= Self.maximumFieldBytes else { throw Failure(message: "the field \(name) exceeds \(Self.maximumFieldBytes) bytes") }
            state = .field(name: name, value: value)
            return false
        case .file:
            if let end = Self.find(bodyEnd, in: buffer) {
                if end.lowerBound > 0 { events.append(.fileBytes(Array(buffer[..<end.lowerBound]))) }
                buffer.removeFirst(end.upperBound)
                events.append(.fileEnd)
                state = .afterDelimiter
                return true
            }
            // Everything but what could still begin the part's end goes on now.
            let safe = buffer.count - (bodyEnd.count - 1)
            if safe > 0 {
                events.append(.fileBytes(Array(buffer[..<safe])))
                buffer.removeFirst(safe)
            }
            return false
        case .done:
            buffer = []
            return false
        }
    }

    /// The part's `name` and, for a file, its `filename`, from its `Content-Disposition: form-data; name=…` header.
    static func disposition(_ headers: String) throws(Failure) -> (name: String, filename: String?) {
        for line in headers.split(separator: "\r\n") {
            let pair = line.split(separator: ":", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-disposition" else { continue }
            var name: String?
            var filename: String?
            for parameter in pair[1].split(separator: ";").dropFirst() {
                let item = parameter.split(separator: "=", maxSplits: 1)
                guard item.count == 2 else { continue }
                var value = item[1].trimmingCharacters(in: .whitespaces)
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                switch item[0].trimmingCharacters(in: .whitespaces).lowercased() {
                case "name": name = value
                case "filename": filename = value
                default: break
                }
            }
            guard let name, !name.isEmpty else { throw Failure(message: "a part's Content-Disposition has no name") }
            return (name, filename)
        }
        throw Failure(message: "a part has no Content-Disposition header")
    }

    /// The first occurrence of `needle` in `haystack`.
    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        let first = needle[0]
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first && haystack[index..<index + needle.count].elementsEqual(needle) { return index..<index + needle.count }
            index += 1
        }
        return nil
    }
}
