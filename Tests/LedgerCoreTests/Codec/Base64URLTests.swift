import Foundation
import LedgerCore
import Testing

struct Base64URLTests {
    /// RFC 4648's base64 with `+` → `-`, `/` → `_` and the padding dropped, for every length's padding and both swapped
    /// characters.
    @Test func isBase64WithTheURLAlphabetAndNoPadding() {
        #expect(Base64URL.encode([]) == "")
        #expect(Base64URL.encode([0xFB]) == "-w")
        #expect(Base64URL.encode([0xFF, 0xFF]) == "__8")
        #expect(Base64URL.encode([0xFB, 0xEF, 0xBE]) == "----")
        var generator = SystemRandomNumberGenerator()
        for length in 0..<100 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let base64 = Data(bytes).base64EncodedString()
            let expected = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected, "\(bytes)")
        }
    }
}
