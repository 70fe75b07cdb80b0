/// RFC 3339 times to and from exact integer microseconds since the Unix epoch (the ledger's
/// resolution): no floating point and no Foundation formatter, so a time an auditor copies from
/// an event (`recorded_at`) names exactly that instant.
///
/// The ledger's one RFC 3339 implementation. Its own form, written by ``format(_:)`` everywhere (event
/// payloads through ``LedgerTimestamp``, replies, CSV lines, checkpoints), is UTC with exactly six
/// fraction digits and `Z`: `2026-11-21T09:30:00.250000Z`. Payloads accept only that form
/// (``exactMicros(_:)``); query parameters and configuration accept any RFC 3339 time (``micros(_:)``).
public enum RFC3339 {
    private static let microsPerDay: Int64 = 86_400_000_000

    /// `2026-11-21T09:30:00Z`, `…T09:30:00.25+01:00`, `…T09:30:00.123456789Z` (digits beyond the
    /// microsecond are truncated: an instant inside a microsecond is still "at or before" it).
    /// A lower-case `t`/`z` and a space instead of `T` are accepted, as RFC 3339 allows.
    public static func micros(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in b[range] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            hour < 24, minute < 60, second < 60,
            let date = BusinessDate(year: Int(year), month: Int(month), day: Int(day))
        else { return nil }
        var i = 19
        var fraction: Int64 = 0
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 {
                if digits < 6 { fraction = fraction * 10 + Int64(b[i] - 0x30) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 6)..<6 { fraction *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            guard i + 1 == b.count else { return nil }
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard i + 6 == b.count, b[i + 3] == UInt8(ascii: ":"),
                let h = number(i + 1..<i + 3), let m = number(i + 4..<i + 6), h < 24, m < 60
            else { return nil }
            offsetSeconds = (h * 60 + m) * 60 * (b[i] == UInt8(ascii: "+") ? 1 : -1)
        } else {
            return nil
        }
        let local = date.daysSinceEpoch * microsPerDay + ((hour * 60 + minute) * 60 + second) * 1_000_000 + fraction
        return local - offsetSeconds * 1_000_000
    }

    /// Only the form ``format(_:)`` writes (27 characters, six fraction digits, `Z`), as event payloads
    /// carry it: anything else is nil, so a hand-edited or foreign time cannot enter a typed event.
    public static func exactMicros(_ text: String) -> Int64? {
        let b = text.utf8
        guard b.count == 27 else { return nil }
        let bytes = Array(b)
        guard bytes[10] == UInt8(ascii: "T"), bytes[19] == UInt8(ascii: "."), bytes[26] == UInt8(ascii: "Z") else { return nil }
        return micros(text)
    }

    /// UTC with six fraction digits, `2026-11-21T09:30:00.250000Z` (the ledger's own format).
    public static func format(_ micros: Int64) -> String {
        var days = micros / microsPerDay
        var rest = micros % microsPerDay
        if rest < 0 {
            rest += microsPerDay
            days -= 1
        }
        let date = BusinessDate(daysSinceEpoch: days)
        let seconds = rest / 1_000_000
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(date)T\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2)):\(pad(seconds % 60, 2)).\(pad(rest % 1_000_000, 6))Z"
    }
}
