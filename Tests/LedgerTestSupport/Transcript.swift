import Foundation
import Testing

/// A recorded HTTP transcript compared line by line with a golden file, after masking what legitimately
/// varies between runs (uuids, timestamps, hashes; each numbered by first appearance, so references stay
/// checked). `LEDGERD_RECORD_GOLDEN=1` re-records the file instead — a change of the public contract.
public enum Transcript {
    /// Fails the test at the first line that differs from `golden`, and when the lengths differ.
    public static func expectMatches(
        _ transcript: String,
        golden: URL,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let masked = mask(transcript)
        if ProcessInfo.processInfo.environment["LEDGERD_RECORD_GOLDEN"] == "1" {
            try masked.write(to: golden, atomically: true, encoding: .utf8)
        }
        let recorded = try String(contentsOf: golden, encoding: .utf8)
        let got = masked.split(separator: "\n", omittingEmptySubsequences: false)
        let want = recorded.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, (line, expected)) in zip(got, want).enumerated() where line != expected {
            Issue.record("transcript line \(index + 1) differs:\n got: \(line)\nwant: \(expected)", sourceLocation: sourceLocation)
            break
        }
        #expect(got.count == want.count, sourceLocation: sourceLocation)
    }

    /// A JSON body with sorted keys, so that a transcript's request lines are the same every run.
    public static func canonical(_ body: Data) -> String {
        let object = try! JSONSerialization.jsonObject(with: body)
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Numbers each distinct scoped idempotency key's scope, uuid, timestamp and hex hash by first appearance. The
    /// scope (``IdempotencyKey/scoped(_:scope:clientKey:requestHash:)``: `<kind>:<43 base64url characters>:<key>`) is a
    /// hash over an order id or a request, different every run.
    public static func mask(_ text: String) -> String {
        var result = text
        for (pattern, label) in [
            (#"(?<=[a-z]:)[A-Za-z0-9_-]{43}(?=:)"#, "scope"),
            (#"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#, "uuid"),
            (#"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"#, "time"),
            (#"[0-9a-f]{64}"#, "sha256"),
        ] {
            let regex = try! NSRegularExpression(pattern: pattern)
            var seen: [String: Int] = [:]
            let matches = regex.matches(in: result, range: NSRange(result.startIndex..., in: result))
            var out = ""
            var cursor = result.startIndex
            for match in matches {
                let range = Range(match.range, in: result)!
                let value = String(result[range])
                let number = seen[value] ?? (seen.count + 1)
                seen[value] = number
                out += result[cursor..<range.lowerBound] + "<\(label)-\(number)>"
                cursor = range.upperBound
            }
            result = out + result[cursor...]
        }
        return result
    }
}
