import LedgerAcquirer

/// Random text for the property tests of the ledger's text writers (CSV, HTML, JSON): strings drawn from the
/// characters that broke writers working on `Character` — quotes and delimiters followed by combining marks
/// (U+0300…U+036F) — mixed with CR, LF, NUL, TAB, right-to-left marks (U+200F, U+202E), emoji (one scalar, with a
/// skin tone, a ZWJ family), spreadsheet formula starts and plain ASCII. Drawn from a ``SeededRandom`` (the tests'
/// seeded generator), so a failure replays from its seed (``PropertySeed``).
public enum TextSamples {
    /// The scalars a string is made of; a combining mark is drawn separately (and often right after a special).
    static let specials: [Unicode.Scalar] = [
        "\"", ",", ";", "\r", "\n", "\0", "\t", "'", "<", ">", "&", "\\", "=", "+", "-", "@", "/", "?", "#", "%", " ", ".",
        "\u{200F}", "\u{202E}", "\u{1F600}", "\u{1F44D}", "\u{1F3FD}", "\u{200D}", "\u{1F468}", "\u{00E9}", "\u{FEFF}",
        "\u{2028}", "\u{7F}", "\u{85}",
    ]

    /// One random string of 0…`maximumScalars` scalars.
    public static func string(_ random: inout SeededRandom, maximumScalars: Int = 12) -> String {
        var text = String.UnicodeScalarView()
        let count = Int(random.next(below: UInt64(maximumScalars + 1)))
        for _ in 0..<count {
            switch random.next(below: 10) {
            case 0, 1, 2:
                // A combining mark, most often after a special (a quote with an acute accent, …).
                text.append(Unicode.Scalar(0x300 + UInt32(random.next(below: 0x70)))!)
            case 3, 4, 5, 6:
                text.append(specials[Int(random.next(below: UInt64(specials.count)))])
            default:
                // Printable ASCII.
                text.append(Unicode.Scalar(0x20 + UInt8(random.next(below: 0x5F))))
            }
        }
        return String(text)
    }
}
