/// Declares the memberwise initializer Swift would synthesize, at the type's own access level.
///
/// Swift synthesizes a memberwise `init` only at `internal` level, so every `public` value type that another
/// module builds (events, requests, answers) used to carry a hand-written copy of its own property list. This
/// macro writes that `init` instead, with exactly the rules of the synthesized one:
/// - one parameter per stored instance property, in declaration order, labelled with the property's name;
/// - a `var` with an initial value defaults to it, an optional `var` without one defaults to `nil`;
///   a `let` with an initial value is not a parameter;
/// - a non-optional function-typed property is taken `@escaping`;
/// - the `init` has the type's access level (`public`, `package`, or none).
/// Computed, `static` and `lazy` properties are skipped. A type whose init does anything else writes it by hand.
@attached(member, names: named(init))
public macro MemberwiseInit() = #externalMacro(module: "LedgerMacrosPlugin", type: "MemberwiseInitMacro")
