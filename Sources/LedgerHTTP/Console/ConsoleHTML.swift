import Mustache

/// The console's HTML escaping, a Mustache content type every console template declares (``ConsoleTemplates``).
///
/// It escapes per byte of UTF-8 — `&`, `<`, `>`, `"` and `'` become entities wherever they occur. swift-mustache's
/// own HTML escaping looks each `Character` up in a table, and a quote followed by a combining mark (`"` U+0301) is one
/// `Character` that is not `"`: it was written raw into `value="…"` (security review 4, L1). The five are ASCII, which
/// never occurs inside a multi-byte UTF-8 sequence, so a byte scan finds every one of them.
struct ConsoleHTML: MustacheContentType {
    /// The name templates declare it by: `{{% CONTENT_TYPE: LEDGER_HTML}}`.
    static let name = "LEDGER_HTML"

    func escapeText(_ text: String) -> String { Self.escape(text) }

    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 16)
        for byte in text.utf8 {
            switch byte {
            case 0x26: out.append(contentsOf: "&amp;".utf8)
            case 0x3C: out.append(contentsOf: "&lt;".utf8)
            case 0x3E: out.append(contentsOf: "&gt;".utf8)
            case 0x22: out.append(contentsOf: "&quot;".utf8)
            case 0x27: out.append(contentsOf: "&#39;".utf8)
            default: out.append(byte)
            }
        }
        // Only ASCII was replaced by ASCII in valid UTF-8: the bytes decode back without loss.
        return String(decoding: out, as: UTF8.self)
    }
}
