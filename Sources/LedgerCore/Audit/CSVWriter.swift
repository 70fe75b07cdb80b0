/// Writes RFC 4180 CSV: a field is quoted when it holds a comma, a double quote, CR or LF (or
/// starts or ends with a space), with inner quotes doubled; records end with CRLF. What
/// ``CSVReader`` reads back field for field.
public enum CSVWriter {
    public static func field(_ text: String) -> String {
        let needsQuotes =
            text.unicodeScalars.contains { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }
            || text.hasPrefix(" ") || text.hasSuffix(" ")
        guard needsQuotes else { return text }
        var out = "\""
        for character in text {
            if character == "\"" { out += "\"\"" } else { out.append(character) }
        }
        return out + "\""
    }

    public static func record(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }
}
