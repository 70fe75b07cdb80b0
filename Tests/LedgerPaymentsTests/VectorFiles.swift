import Foundation
import LedgerCoreTestSupport
import LedgerPayments

/// The Apple Pay vectors in the repository, `Tests/Vectors/applepay` (``TestVectors/applePay``).
enum VectorFiles {
    struct Missing: Error, CustomStringConvertible {
        var description: String { "\(TestVectors.applePay.path) is missing or not what the tests expect" }
    }

    static func directory() throws -> URL {
        let directory = TestVectors.applePay
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("README.md").path) else { throw Missing() }
        return directory
    }

    static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: directory().appendingPathComponent(relativePath))
    }

    static func string(_ relativePath: String) throws -> String {
        String(decoding: try data(relativePath), as: UTF8.self)
    }

    static func json(_ relativePath: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data(relativePath)) as? [String: Any] else {
            throw Missing()
        }
        return object
    }
}

/// Seconds-precise UTC dates for tests.
func utc(_ iso: String) throws -> Date {
    try Date.ISO8601FormatStyle().parse(iso)
}

func bytes(base64 string: String) -> [UInt8] {
    Array(Data(base64Encoded: string) ?? Data())
}

func bytes(hex string: String) -> [UInt8] {
    var out: [UInt8] = []
    var chars = Array(string.utf8)
    if chars.count % 2 == 1 { chars.insert(UInt8(ascii: "0"), at: 0) }
    var i = 0
    while i + 1 < chars.count {
        out.append(UInt8(String(decoding: chars[i...i + 1], as: UTF8.self), radix: 16) ?? 0)
        i += 2
    }
    return out
}

/// The error a throwing call fails with, or `nil` when it succeeds.
func failure<T>(_ body: () async throws(ApplePayError) -> T) async -> ApplePayError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

/// The error a throwing call fails with, or `nil` when it succeeds.
func failure<T>(_ body: () throws(ApplePayError) -> T) -> ApplePayError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
