/// A configuration value that cannot be used; the message names the key.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    public init(_ message: String) { self.message = message }
}
