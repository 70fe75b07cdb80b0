import Foundation
import LedgerPayments

/// Locates `shared/vectors/applepay` by walking up from this file, so the tests work both in the
/// standalone package and in the main repository (where `shared/` sits next to the repo).
enum VectorFiles {
    struct Missing: Error, CustomStringConvertible {
        var description: String { "shared/vectors/applepay not found above \(#filePath)" }
    }

    static func directory(filePath: String = #filePath) throws -> URL {
        var directory = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("shared/vectors/applepay")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("README.md").path) {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
        throw Missing()
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
