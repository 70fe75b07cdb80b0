import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerHTTP
import Testing

/// The hand-written RFC 3339 and hex formatting agree with Foundation's on many values.
@Suite struct EventJSONTests {
    @Test func timestampsMatchFoundationsFormatting() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        var rng = SeededRandom(seed: 42)
        for micros in [Int64(0), 1, 999_999, 1_000_000, 1_790_000_000_123_456, 4_102_444_799_999_999]
            + (0..<2_000).map({ _ in
                Int64.random(in: 0...4_102_444_800_000_000, using: &rng)
            })
        {
            let seconds = micros / 1_000_000
            let expected =
                formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
                + "." + String(String(micros % 1_000_000 + 1_000_000).dropFirst()) + "Z"
            #expect(EventJSON.timestamp(micros) == expected)
        }
        #expect(EventJSON.timestamp(-1) == "1969-12-31T23:59:59.999999Z")
    }
}
