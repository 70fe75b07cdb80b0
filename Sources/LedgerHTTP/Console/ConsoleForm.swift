import Foundation
import Hummingbird
import LedgerAPI

/// A console form's fields (`application/x-www-form-urlencoded`, as a browser posts a plain HTML form).
///
/// Read up to a limit (413 beyond it); another media type is 415; a field given twice is refused (400), since which one
/// counts would be a guess.
package struct ConsoleForm: Sendable {
    package let fields: [String: String]

    package subscript(name: String) -> String? { fields[name] }

    static func read(_ request: Request, limit: Int) async throws -> ConsoleForm {
        let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else {
            throw APIError(
                status: .unsupportedMediaType,
                code: "unsupported_media_type",
                message: "a console form is application/x-www-form-urlencoded"
            )
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch {
            throw APIError(status: .contentTooLarge, code: "payload_too_large", message: "the form is larger than \(limit) bytes")
        }
        return try parse(String(buffer: body))
    }

    package static func parse(_ text: String) throws(APIError) -> ConsoleForm {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else {
                throw APIError.badRequest("invalid_form", "the form is not valid URL-encoded text")
            }
            guard fields.updateValue(value, forKey: name) == nil else {
                throw APIError.badRequest("invalid_form", "the form gives \(name) twice", field: name)
            }
        }
        return ConsoleForm(fields: fields)
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
