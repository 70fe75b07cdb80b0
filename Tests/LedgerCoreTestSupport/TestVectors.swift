import Foundation

/// Public test data kept in the repository (`Tests/Vectors/`), found from this file's path, so the
/// suite needs nothing outside the clone.
public enum TestVectors {
    /// `Tests/Vectors/applepay`: the PayU EC_v1 sample token and Apple Root CA - G3 (provenance in its README.md).
    public static var applePay: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/applepay")
    }
}
