import Hummingbird
import LedgerCore
import LedgerServices

/// The request context of every ledger route: Hummingbird's core storage plus who is calling,
/// set by ``BackOfficeAuthMiddleware`` (nil on the open storefront routes).
public struct LedgerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var principal: Principal?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.principal = nil
    }
}
