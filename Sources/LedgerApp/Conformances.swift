import LedgerHTTP
import LedgerPostgres
import LedgerServices

// The routes' seams (LedgerHTTP's protocols), filled by the use cases. Declared here, in the wiring,
// so that neither module needs to know the other's concrete types.
extension PaymentService: PaymentProcessor {}
extension HoldService: HoldOperator {}
extension SettlementService: SettlementOperator {}
extension StateHistory: StateReader {}
extension PrivacyService: PrivacyOperator {}
extension CheckpointService: CheckpointSigner {}
extension ProjectionStorefrontReader: StorefrontReader {}
extension ProjectionOrderReader: OrderReader {}
extension ProjectionHoldReader: HoldReader {}
extension EventStoreReader: LedgerReader {}
extension EventStoreHealthProbe: LedgerHealthProbe {}
