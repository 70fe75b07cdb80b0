import LedgerMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// The expansion of `@MemberwiseInit`, rule by rule (the rules are listed on the macro's declaration).
struct MemberwiseInitTests {
    private let macros: [String: MacroSpec] = ["MemberwiseInit": MacroSpec(type: MemberwiseInitMacro.self)]

    private func expect(
        _ source: String,
        expands expected: String,
        diagnostics: [DiagnosticSpec] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        assertMacroExpansion(source, expandedSource: expected, diagnostics: diagnostics, macroSpecs: macros) { failure in
            Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
        }
    }

    @Test func publicTypeGetsAPublicInitInDeclarationOrder() {
        expect(
            """
            @MemberwiseInit
            public struct Pair {
                public var b: Int
                public let a: String
            }
            """,
            expands: """
                public struct Pair {
                    public var b: Int
                    public let a: String

                    public init(b: Int, a: String) {
                        self.b = b
                        self.a = a
                    }
                }
                """
        )
    }

    @Test func defaultsFollowTheSynthesizedInitializer() {
        expect(
            """
            @MemberwiseInit
            package struct Options {
                var limit: Int = 10
                var note: String?
                let tag: String?
                let version = 1
                static var shared = 0
                var doubled: Int { limit * 2 }
                lazy var cache: [Int] = []
                var observed: Int = 0 {
                    didSet { print(observed) }
                }
            }
            """,
            expands: """
                package struct Options {
                    var limit: Int = 10
                    var note: String?
                    let tag: String?
                    let version = 1
                    static var shared = 0
                    var doubled: Int { limit * 2 }
                    lazy var cache: [Int] = []
                    var observed: Int = 0 {
                        didSet { print(observed) }
                    }

                    package init(limit: Int = 10, note: String? = nil, tag: String?, observed: Int = 0) {
                        self.limit = limit
                        self.note = note
                        self.tag = tag
                        self.observed = observed
                    }
                }
                """
        )
    }

    @Test func storedClosuresAreEscapingUnlessOptional() {
        expect(
            """
            @MemberwiseInit
            final class Clocked {
                let clock: @Sendable () -> Int
                let sink: (@Sendable (Int) -> Void)?
            }
            """,
            expands: """
                final class Clocked {
                    let clock: @Sendable () -> Int
                    let sink: (@Sendable (Int) -> Void)?

                    init(clock: @escaping @Sendable () -> Int, sink: (@Sendable (Int) -> Void)?) {
                        self.clock = clock
                        self.sink = sink
                    }
                }
                """
        )
    }

    @Test func anEnumOrAnUntypedPropertyIsRefused() {
        expect(
            """
            @MemberwiseInit
            enum Kind {}
            """,
            expands: """
                enum Kind {}
                """,
            diagnostics: [DiagnosticSpec(message: "@MemberwiseInit applies to a struct or a final class", line: 1, column: 1)]
        )
        expect(
            """
            @MemberwiseInit
            struct Loose {
                var count = 0
            }
            """,
            expands: """
                struct Loose {
                    var count = 0
                }
                """,
            diagnostics: [DiagnosticSpec(message: "@MemberwiseInit needs an explicit type on 'count'", line: 1, column: 1)]
        )
    }
}
