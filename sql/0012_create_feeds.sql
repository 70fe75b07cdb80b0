-- 0012: feeds for the systems downstream (issue 16): durable subscriptions and webhook endpoints
-- with their delivery history. Neither touches the log: a consumer's progress is a position of the
-- log (its checkpoint, an endpoint's cursor), and the events themselves are read from ledger.events.
--
-- Why a position is a gap-safe checkpoint: positions are assigned under the head row's lock
-- (ledger.append_events, 0001) and that lock is held until the appending transaction commits, so
-- transactions commit in position order and every snapshot sees a prefix 1..k of the log. A reader
-- that reads ledger.head (k) and then the events in (checkpoint, k] never misses one that commits
-- later with a smaller position: there is none.

-- A named, durable subscription: its filter and the position up to which its consumer acknowledged.
CREATE TABLE ledger.subscriptions (
    name            text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,100}$'),
    types           text[] NOT NULL DEFAULT '{}',
    stream_prefixes text[] NOT NULL DEFAULT '{}',
    checkpoint      bigint NOT NULL CHECK (checkpoint >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    acked_at        timestamptz
);

-- A webhook endpoint. The secrets are sealed by the daemon (AES-GCM, key outside the database:
-- LEDGERD_WEBHOOK_SECRETS_KEY or <data dir>/webhook-secrets.key) so that a dump or a replica does not
-- hold them in clear; the auditor role cannot read this table at all. During a rotation's grace period
-- the previous secret still signs (both signatures are sent).
-- cursor: every event at or before it is delivered to this endpoint or does not match its filter.
-- attempts / first_failed_at / next_attempt_at: the retry state of the event after the cursor.
CREATE TABLE ledger.webhook_endpoints (
    id                     uuid PRIMARY KEY,
    url                    text NOT NULL CHECK (url ~ '^https?://'),
    types                  text[] NOT NULL DEFAULT '{}',
    sealed_secret          bytea NOT NULL,
    sealed_previous_secret bytea,
    previous_secret_until  timestamptz,
    state                  text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused')),
    cursor                 bigint NOT NULL CHECK (cursor >= 0),
    attempts               integer NOT NULL DEFAULT 0,
    first_failed_at        timestamptz,
    next_attempt_at        timestamptz NOT NULL,
    created_at             timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_due ON ledger.webhook_endpoints (next_attempt_at) WHERE state = 'active';

-- Every attempt to deliver an event to an endpoint: when, the answer, how long it took, and (for a
-- failure) when the next attempt is due. Append-only.
CREATE TABLE ledger.webhook_deliveries (
    id           bigserial PRIMARY KEY,
    endpoint_id  uuid NOT NULL REFERENCES ledger.webhook_endpoints (id),
    position     bigint NOT NULL,
    attempt      integer NOT NULL CHECK (attempt >= 1),
    attempted_at timestamptz NOT NULL,
    status_code  integer,
    error        text,
    latency_us   bigint NOT NULL,
    delivered    boolean NOT NULL,
    retry_at     timestamptz
);
CREATE INDEX webhook_deliveries_by_endpoint ON ledger.webhook_deliveries (endpoint_id, id);
CREATE TRIGGER webhook_deliveries_append_only BEFORE UPDATE OR DELETE ON ledger.webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION ledger.reject_mutation();

GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.subscriptions TO ledger_app;
GRANT SELECT ON ledger.subscriptions TO ledger_auditor;
GRANT SELECT, INSERT, UPDATE ON ledger.webhook_endpoints TO ledger_app;
GRANT SELECT, INSERT ON ledger.webhook_deliveries TO ledger_app;
GRANT USAGE ON SEQUENCE ledger.webhook_deliveries_id_seq TO ledger_app;
GRANT SELECT ON ledger.webhook_deliveries TO ledger_auditor;
