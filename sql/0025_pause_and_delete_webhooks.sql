-- 0025: operators pause, resume and delete webhook endpoints (security review 4, L6; FeedRoutes, WebhookService).
--
-- A deleted endpoint keeps its row and its delivery history (ledger.webhook_deliveries is append-only and refers to
-- it), so what was sent where stays auditable: `deleted` is a state, like `paused` one the dispatcher never claims
-- (it takes `active` endpoints only), and one that no operation leaves. `deleted_at` says when.
ALTER TABLE ledger.webhook_endpoints DROP CONSTRAINT webhook_endpoints_state_check;
ALTER TABLE ledger.webhook_endpoints ADD CONSTRAINT webhook_endpoints_state_check CHECK (state IN ('active', 'paused', 'deleted'));
ALTER TABLE ledger.webhook_endpoints ADD COLUMN deleted_at timestamptz;
ALTER TABLE ledger.webhook_endpoints ADD CONSTRAINT webhook_endpoints_deleted_at_check CHECK ((state = 'deleted') = (deleted_at IS NOT NULL));
