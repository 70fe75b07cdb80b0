import LedgerHTTP
import LedgerPostgres
import LedgerServices

// The routes' seams onto the read-model stores (LedgerHTTP's protocols), filled by LedgerPostgres' readers here, in
// the wiring, so that the routes never depend on LedgerPostgres. Routes take the use cases (LedgerServices) directly.
extension ProjectionStorefrontReader: StorefrontReader {}
extension ProjectionOrderReader: OrderReader {}
extension ProjectionHoldReader: HoldReader {}
extension EventStoreReader: LedgerReader {}
extension EventStoreHealthProbe: LedgerHealthProbe {}
