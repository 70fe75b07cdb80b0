-- 0016: how far the ledger has read each of the acquirer's feeds (`ledger.acquirer_feed_cursors`).
--
-- The dispute poller (`DisputePoller`) reads the acquirer's dispute notifications after the position
-- stored here, records each one on its dispute's stream, and then moves the position forward. A
-- notification read twice (a crash before the position moved, two daemons polling at once) is recorded
-- once: its stage number against the dispute's stream decides (`DisputeService.receive`). The position
-- only grows (GREATEST), whichever daemon writes last.
--
-- Not part of the event log (a reader's bookmark, not a fact the ledger asserts).

CREATE TABLE ledger.acquirer_feed_cursors (
    feed       text        PRIMARY KEY,
    position   bigint      NOT NULL CHECK (position >= 0),
    updated_at timestamptz NOT NULL
);

GRANT SELECT, INSERT, UPDATE ON ledger.acquirer_feed_cursors TO ledger_app;
GRANT SELECT ON ledger.acquirer_feed_cursors TO ledger_auditor;
