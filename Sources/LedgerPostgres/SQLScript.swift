/// Splits an SQL script into statements at top-level semicolons.
///
/// PostgresNIO speaks only the extended query protocol, which takes one statement per message,
/// so a migration file is run statement by statement (inside one transaction). The splitter
/// understands what can contain a semicolon: '…' strings (with '' escapes), E'…' strings (with
/// backslash escapes), "…" identifiers, -- and nested /* */ comments, and $tag$…$tag$ bodies.
/// Not supported: SQL-standard `BEGIN ATOMIC … END` function bodies (use `$$ … $$` or `RETURN`).
public enum SQLScript {
    public static func statements(_ script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var hasContent = false
        var i = 0

        func flush() {
            let text = String(current).trimmingWhitespace()
            if hasContent && !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
            hasContent = false
        }
        func peek(_ offset: Int) -> Unicode.Scalar? {
            i + offset < chars.count ? chars[i + offset] : nil
        }

        while i < chars.count {
            let c = chars[i]
            switch c {
            case "-" where peek(1) == "-":
                while i < chars.count && chars[i] != "\n" {
                    current.append(chars[i])
                    i += 1
                }
                continue
            case "/" where peek(1) == "*":
                var depth = 0
                while i < chars.count {
                    if chars[i] == "/" && peek(1) == "*" {
                        depth += 1
                        current.append("/")
                        current.append("*")
                        i += 2
                        continue
                    }
                    if chars[i] == "*" && peek(1) == "/" {
                        depth -= 1
                        current.append("*")
                        current.append("/")
                        i += 2
                        if depth == 0 { break }
                        continue
                    }
                    current.append(chars[i])
                    i += 1
                }
                continue
            case "'":
                let backslashEscapes =
                    i > 0 && (chars[i - 1] == "E" || chars[i - 1] == "e")
                    && (i < 2 || !isIdentifierScalar(chars[i - 2]))
                hasContent = true
                current.append(c)
                i += 1
                while i < chars.count {
                    let s = chars[i]
                    current.append(s)
                    i += 1
                    if backslashEscapes && s == "\\" && i < chars.count {
                        current.append(chars[i])
                        i += 1
                        continue
                    }
                    if s == "'" {
                        if peek(0) == "'" {
                            current.append("'")
                            i += 1
                            continue
                        }
                        break
                    }
                }
                continue
            case "\"":
                hasContent = true
                current.append(c)
                i += 1
                while i < chars.count {
                    let s = chars[i]
                    current.append(s)
                    i += 1
                    if s == "\"" {
                        if peek(0) == "\"" {
                            current.append("\"")
                            i += 1
                            continue
                        }
                        break
                    }
                }
                continue
            case "$" where i == 0 || !isIdentifierScalar(chars[i - 1]):
                // A dollar-quote tag: $$ or $name$ (name: letters, digits, underscores, not starting with a digit).
                var j = i + 1
                while j < chars.count && isIdentifierScalar(chars[j]) { j += 1 }
                let tagIsValid =
                    j < chars.count && chars[j] == "$"
                    && (j == i + 1 || !("0"..."9").contains(chars[i + 1]))
                if tagIsValid {
                    let tag = Array(chars[i...j])
                    hasContent = true
                    for k in i...j { current.append(chars[k]) }
                    i = j + 1
                    while i < chars.count {
                        if chars[i] == "$" && i + tag.count <= chars.count && Array(chars[i..<(i + tag.count)]) == tag {
                            for scalar in tag { current.append(scalar) }
                            i += tag.count
                            break
                        }
                        current.append(chars[i])
                        i += 1
                    }
                    continue
                }
            case ";":
                flush()
                i += 1
                continue
            default:
                break
            }
            if !c.properties.isWhitespace { hasContent = true }
            current.append(c)
            i += 1
        }
        flush()
        return statements
    }

    private static func isIdentifierScalar(_ s: Unicode.Scalar) -> Bool {
        s == "_" || s.properties.isAlphabetic || ("0"..."9").contains(s)
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}
