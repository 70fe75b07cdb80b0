import Foundation

/// Base64url without padding (RFC 4648 §5): the ledger's one spelling of random tokens and digests in text that must
/// travel in URLs, headers and keys (API key secrets, console session tokens, idempotency scopes).
public enum Base64URL {
    /// `bytes` in base64url, no `=` padding: `-` and `_` where base64 has `+` and `/`.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = Array(Data(bytes).base64EncodedString().utf8)
        while text.last == 0x3D { text.removeLast() }
        for index in text.indices {
            if text[index] == 0x2B { text[index] = 0x2D } else if text[index] == 0x2F { text[index] = 0x5F }
        }
        return String(decoding: text, as: UTF8.self)
    }
}
