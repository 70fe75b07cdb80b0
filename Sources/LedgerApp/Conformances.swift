import LedgerHTTP
import LedgerPostgres
import LedgerServices

// The routes' seams (LedgerHTTP's protocols), filled by the use cases and the read-model stores.
// Declared here, in the wiring: the routes depend on the protocols, never on a concrete service or
// on LedgerPostgres.
extension HoldService: HoldOperator {}
extension SettlementService: SettlementOperator {}
extension DisputeService: DisputeOperator {}
extension StateHistory: StateReader {}
extension PrivacyService: PrivacyOperator {}
extension CheckpointService: CheckpointSigner {}
extension ProjectionStorefrontReader: StorefrontReader {}
extension ProjectionOrderReader: OrderReader {}
extension ProjectionHoldReader: HoldReader {}
extension EventStoreReader: LedgerReader {}
extension EventStoreHealthProbe: LedgerHealthProbe {}
extension EventFeed: EventFollower {}
extension SubscriptionService: SubscriptionOperator {}
extension WebhookService: WebhookOperator {}
extension JournalService: JournalReader {}
