import Foundation
import Mustache
import Testing

@testable import LedgerHTTP

/// Every console page rendered with hostile text in every value it shows: markup (`<script>`, `"><img onerror=…>`), a
/// `javascript:` URL, right-to-left and zero-width characters, and a quote followed by a combining mark (security
/// review 4, L1: swift-mustache's own escaping wrote that quote raw). Pure: no database, no router.
///
/// The views are not built by hand (a page added tomorrow would be missed): each template's tags are read from its
/// text, and a view answers every name — a value with the hostile text; a link or form target (a name written into
/// `href`, `action` or `src`) with the console's own URL of a hostile id (``ConsoleRoutes/path(_:)``, the only way a
/// page names an id); a section with itself (every section shown) or `false` (every inverted section shown).
@Suite struct ConsoleHostileDataTests {
    static let hostile =
        "<script>alert(1)</script>\"><img src=x onerror=alert(2)>'javascript:alert(3)\u{202E}gpj.exe\u{200B}\u{2066}\"\u{0301}&amp;"

    /// The names a template writes into a URL attribute (`href="{{x}}"`, `action="{{x}}/…"`; `{{.}}` there names the
    /// section it is in) and the names it opens as sections, from its text.
    static func names(in template: String) -> (urls: Set<String>, sections: Set<String>) {
        var urls: Set<String> = []
        var sections: Set<String> = []
        var open: [String] = []
        var rest = Substring(template)
        while let start = rest.range(of: "{{"), let end = rest[start.upperBound...].range(of: "}}") {
            let tag = rest[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespaces)
            let before = rest[..<start.lowerBound]
            switch tag.first {
            case "#", "^":
                let name = String(tag.dropFirst()).trimmingCharacters(in: .whitespaces)
                sections.insert(name)
                open.append(name)
            case "/": _ = open.popLast()
            case ">", "%", "!": break
            default:
                if before.hasSuffix("href=\"") || before.hasSuffix("action=\"") || before.hasSuffix("src=\"") {
                    urls.insert(tag == "." ? (open.last ?? ".") : tag)
                }
            }
            rest = rest[end.upperBound...]
        }
        return (urls, sections)
    }

    /// A view that answers every name (see the suite's notes).
    final class Everything: MustacheParent, CustomStringConvertible {
        let urls: Set<String>
        let sections: Set<String>
        let showSections: Bool

        init(urls: Set<String>, sections: Set<String>, showSections: Bool) {
            self.urls = urls
            self.sections = sections
            self.showSections = showSections
        }

        func child(named name: String) -> Any? {
            if urls.contains(name) { return ConsoleRoutes.path("orders", ConsoleHostileDataTests.hostile) }
            if sections.contains(name) { return showSections ? self : false }
            return ConsoleHostileDataTests.hostile
        }

        var description: String { ConsoleHostileDataTests.hostile }
    }

    @Test func noTemplateWritesAValueUnescaped() {
        for (name, text) in ConsoleTemplates.templates {
            #expect(!text.contains("{{{") && !text.contains("{{&"), "template \(name) writes a value unescaped")
        }
    }

    @Test(arguments: [true, false]) func everyPageEscapesHostileTextInEveryValue(showSections: Bool) throws {
        var urls: Set<String> = []
        var sections: Set<String> = []
        // Partials render inside pages with the page's view: one view answers the names of every template.
        for (_, text) in ConsoleTemplates.templates {
            let found = Self.names(in: text)
            urls.formUnion(found.urls)
            sections.formUnion(found.sections)
        }
        #expect(urls.contains("path") && sections.contains("rows"), "the templates' tags were not read: \(urls) \(sections)")
        let view = Everything(urls: urls, sections: sections, showSections: showSections)
        let escaped = ConsoleHTML.escape(Self.hostile)
        for (name, text) in ConsoleTemplates.templates {
            let html = try #require(ConsoleTemplates.library.render(view, withTemplate: name), "no template \(name)")
            let lower = html.lowercased()
            #expect(!lower.contains("<script") && !lower.contains("<img"), "\(name): markup from a value reached the page")
            // A quote followed by a combining mark: one Character, but its first byte is a raw quote in an attribute.
            #expect(!Self.contains(Array(html.utf8), [0x22, 0xCC, 0x81]), "\(name): a raw quote before U+0301")
            for target in Self.attributeValues(in: html, names: ["href", "action", "src"]) {
                #expect(target.hasPrefix("/") && !target.hasPrefix("//"), "\(name): a link or form goes to \(target)")
            }
            // Did this page show anything? A template with a value shows the hostile text, escaped, at least once.
            let showsValues = text.split(separator: "{{").dropFirst().contains { tag in tag.first.map { !"#^/>%!".contains($0) } ?? false }
            if showsValues && showSections {
                #expect(html.contains(escaped) || html.contains(ConsoleRoutes.pathSegment(Self.hostile)), "\(name) showed no value")
            }
        }
    }

    /// The escaping itself, byte by byte: the five characters, also next to combining marks and bidi controls.
    @Test func theEscapeReplacesTheFiveCharactersWhereverTheyStand() {
        #expect(ConsoleHTML.escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        #expect(ConsoleHTML.escape("\"\u{0301}\u{202E}<\u{200B}>") == "&quot;\u{0301}\u{202E}&lt;\u{200B}&gt;")
        #expect(ConsoleHTML.escape("plain \u{202E}text") == "plain \u{202E}text")
    }

    /// A console URL of any id stays a console URL: the id is one percent-encoded path segment.
    @Test func aHostileIdStaysOnePathSegmentOfAConsoleURL() {
        for id in [Self.hostile, "../../sign-out", "//evil.example", "javascript:alert(1)", "?x=1#y", "a/b"] {
            let url = ConsoleRoutes.path("orders", id)
            #expect(url.hasPrefix("/console/orders/"), "\(url)")
            let segment = String(url.dropFirst("/console/orders/".count))
            #expect(!segment.contains("/") && !segment.contains("?") && !segment.contains("#") && !segment.contains("\""), "\(url)")
            #expect(segment.removingPercentEncoding == id)
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// The values of the attributes `names` in `html` (double-quoted, as every console template writes them).
    static func attributeValues(in html: String, names: [String]) -> [String] {
        var values: [String] = []
        for name in names {
            var rest = Substring(html)
            while let start = rest.range(of: " \(name)=\"") {
                let value = rest[start.upperBound...]
                guard let end = value.firstIndex(of: "\"") else { break }
                values.append(String(value[..<end]))
                rest = value[end...]
            }
        }
        return values
    }
}
