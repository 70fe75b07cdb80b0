import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// The request context of every ledger route: Hummingbird's core storage plus who is calling,
/// set by ``BackOfficeAuthMiddleware`` (nil on the open storefront routes).
public struct LedgerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var principal: Principal?
    /// The client's IP address, for what refusals log and count (``AuthenticationFailures``); `unknown` when the
    /// channel has none (a router test's).
    public let sourceAddress: String

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.principal = nil
        self.sourceAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// The event metadata's `actor` for a change this request makes: its key's role and id
    /// (`operator:op-1`); `operator` where no key is configured to check.
    public var actor: String { principal?.actor ?? "operator" }
}
