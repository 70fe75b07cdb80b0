-- 0013: inventory snapshots, so that a read of the inventory (or of a product) as of any point costs
-- a bounded fold instead of a fold from position 1.
--
-- A snapshot is the inventory's history (`InventoryHistory`, LedgerCore) after the event at
-- `position`: every product's state, the position of each product's first event, and the expiry of
-- the hold of every order that still reserves stock. `state` holds its canonical bytes (sorted-key
-- JSON; the same log prefix always gives the same bytes), `state_sha256` their SHA-256, and
-- `event_hash` the chain hash of the event at `position`, copied from ledger.events by the insert
-- itself, so a snapshot names the exact history it summarises.
--
-- The daemon writes one every LEDGERD_SNAPSHOT_EVERY_EVENTS events (positions K, 2K, …), each from
-- the previous one and the events between; an as-of read takes the nearest snapshot at or before its
-- point whose bytes hash to `state_sha256` and whose `event_hash` is the log's hash there, and folds
-- the product events and hold placements after it (index events_by_type, sql/0006). A snapshot that
-- fails either check is skipped (the read goes on from an earlier one, or from position 1).
--
-- Snapshots are derived data and never trusted over the log: `ledgerd audit snapshots` rebuilds each
-- one from the log, in order, and compares the bytes (a forged snapshot whose digest was recomputed
-- too is found there). Rows are never changed: insert only, like the log; the owner may TRUNCATE to
-- have them rebuilt.
CREATE TABLE ledger.inventory_snapshots (
    position     bigint      PRIMARY KEY CHECK (position > 0),
    state        bytea       NOT NULL,
    state_sha256 bytea       NOT NULL CHECK (octet_length(state_sha256) = 32),
    event_hash   bytea       NOT NULL CHECK (octet_length(event_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TRIGGER inventory_snapshots_append_only
    BEFORE UPDATE OR DELETE ON ledger.inventory_snapshots
    FOR EACH ROW EXECUTE FUNCTION ledger.reject_mutation();

GRANT SELECT, INSERT ON ledger.inventory_snapshots TO ledger_app;
GRANT SELECT ON ledger.inventory_snapshots TO ledger_auditor;
