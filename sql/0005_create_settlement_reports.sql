-- 0005: settlement reports — the acquirer's report CSV of each settlement batch, byte for byte.
--
-- The batch's SettlementBatchSubmitted event carries the SHA-256 of `csv`, so the (large) report
-- stays out of the hash-chained log while any change to it is detectable. Written once, before the
-- event; a re-run finds the row and checks the digest.
CREATE TABLE ledger.settlement_reports (
    batch_id    text        PRIMARY KEY CHECK (batch_id <> '' AND octet_length(batch_id) <= 180),
    sha256      bytea       NOT NULL CHECK (octet_length(sha256) = 32),
    csv         text        NOT NULL,
    stored_at   timestamptz NOT NULL
);

GRANT SELECT, INSERT ON ledger.settlement_reports TO ledger_app;
GRANT SELECT ON ledger.settlement_reports TO ledger_auditor;
