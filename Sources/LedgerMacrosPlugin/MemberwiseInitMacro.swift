import SwiftCompilerPlugin
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// The expansion of `@MemberwiseInit` (declared, with its rules, in `LedgerMacros/MemberwiseInit.swift`).
public struct MemberwiseInitMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(StructDeclSyntax.self) || declaration.is(ClassDeclSyntax.self) else {
            throw MacroExpansionErrorMessage("@MemberwiseInit applies to a struct or a final class")
        }
        var parameters: [String] = []
        var assignments: [String] = []
        for member in declaration.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            let modifiers = Set(variable.modifiers.map(\.name.tokenKind))
            if modifiers.contains(.keyword(.static)) || modifiers.contains(.keyword(.class)) || modifiers.contains(.keyword(.lazy)) {
                continue
            }
            let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
            for binding in variable.bindings {
                if let accessors = binding.accessorBlock, !isStoredWithObservers(accessors) { continue }
                guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.trimmedDescription else {
                    throw MacroExpansionErrorMessage("@MemberwiseInit needs one simple name per stored property")
                }
                if isLet, binding.initializer != nil { continue }
                guard let type = binding.typeAnnotation?.type else {
                    throw MacroExpansionErrorMessage("@MemberwiseInit needs an explicit type on '\(name)'")
                }
                var parameter = "\(name): \(escapingIfNeeded(type))"
                if let initial = binding.initializer {
                    parameter += " = \(initial.value.trimmedDescription)"
                } else if !isLet, isOptional(type) {
                    parameter += " = nil"
                }
                parameters.append(parameter)
                assignments.append("self.\(name) = \(name)")
            }
        }
        let access = accessLevel(of: declaration)
        let header = "\(access)init(\(parameters.joined(separator: ", ")))"
        let body = assignments.map { "    \($0)" }.joined(separator: "\n")
        return ["\(raw: header) {\n\(raw: body)\n}"]
    }

    /// `willSet`/`didSet` observe a stored property; `get`/`set` or a bare body make a computed one.
    private static func isStoredWithObservers(_ block: AccessorBlockSyntax) -> Bool {
        guard case .accessors(let accessors) = block.accessors else { return false }
        return accessors.allSatisfy { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
    }

    private static func isOptional(_ type: TypeSyntax) -> Bool {
        type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
            || type.as(IdentifierTypeSyntax.self)?.name.text == "Optional"
    }

    /// A stored non-optional closure must be taken `@escaping`, as in the synthesized initializer.
    private static func escapingIfNeeded(_ type: TypeSyntax) -> String {
        var bare = type
        if let attributed = type.as(AttributedTypeSyntax.self) { bare = attributed.baseType }
        return bare.is(FunctionTypeSyntax.self) ? "@escaping \(type.trimmedDescription)" : type.trimmedDescription
    }

    private static func accessLevel(of declaration: some DeclGroupSyntax) -> String {
        for modifier in declaration.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }
}

@main
struct LedgerMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [MemberwiseInitMacro.self]
}
