-- acquirer 0001: the acquirer service's own durable state (`ledgerd acquirer serve`).
--
-- A separate migration set (sql/acquirer/, recorded in acquirer.schema_migrations) because the acquirer
-- stands for another system: in production it has its own database and role, and the ledger's
-- migrations must neither know nor touch it. In the embedded default it lives in the database
-- `acquirer` of the ledger's cluster.
--
-- The state is a journal of commands. The model (LedgerAcquirer.AcquirerModelState) is a pure
-- function of (seed, configuration, commands, times), so the journal *is* the state: on start the
-- service replays it, in `seq` order, at the recorded times. Every command is inserted (with the
-- answer it got) before the answer leaves the service. Card numbers never reach it: an authorisation
-- is journalled with its card already resolved (network, last four, account key).

CREATE SCHEMA IF NOT EXISTS acquirer;

-- Roles are per cluster: databases migrated at the same time may both try to create it.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'acquirer_app') THEN
        CREATE ROLE acquirer_app NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

GRANT USAGE ON SCHEMA acquirer TO acquirer_app;
GRANT SELECT ON acquirer.schema_migrations TO acquirer_app;

-- The seed and the model configuration the journal was written with (one row): replaying with any
-- other would give another state, so the service refuses to start against a different one.
CREATE TABLE acquirer.model (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    seed          text        NOT NULL,
    configuration text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- One row per command, in the order the model applied them. `at_us`: the model's clock reading,
-- microseconds since 1970 (the service truncates its clock to this before applying, so replay is
-- exact). `idempotency_key`: the client's key (unique: a retry finds the first answer). `command`:
-- canonical JSON. `status` and `response`: the HTTP status and body the client was sent.
CREATE TABLE acquirer.journal (
    seq             bigint   PRIMARY KEY CHECK (seq > 0),
    at_us           bigint   NOT NULL,
    idempotency_key text     UNIQUE,
    command         text     NOT NULL,
    status          smallint NOT NULL,
    response        text     NOT NULL
);

-- Settlement batch pages as uploaded (PUT), before the batch is submitted; a submission's journal
-- row names the batch and its page count, and replay reads the items from here.
CREATE TABLE acquirer.batch_pages (
    batch_reference text    NOT NULL,
    page            integer NOT NULL CHECK (page >= 0),
    items           text    NOT NULL,
    PRIMARY KEY (batch_reference, page)
);

CREATE FUNCTION acquirer.reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'acquirer.%: rows are append-only', TG_TABLE_NAME USING ERRCODE = 'LDG01';
END
$$;

CREATE TRIGGER journal_append_only BEFORE UPDATE OR DELETE ON acquirer.journal
    FOR EACH ROW EXECUTE FUNCTION acquirer.reject_mutation();
CREATE TRIGGER journal_no_truncate BEFORE TRUNCATE ON acquirer.journal
    FOR EACH STATEMENT EXECUTE FUNCTION acquirer.reject_mutation();
CREATE TRIGGER batch_pages_append_only BEFORE UPDATE OR DELETE ON acquirer.batch_pages
    FOR EACH ROW EXECUTE FUNCTION acquirer.reject_mutation();

GRANT SELECT, INSERT ON acquirer.model, acquirer.journal, acquirer.batch_pages TO acquirer_app;
