-- The expiry sweeper and GET /authorizations?state=open look up open holds by expiry
-- (`holds` read-model rows; `expires_at` is fixed-width RFC 3339 UTC, so text order is time order).
CREATE INDEX projection_rows_open_holds_by_expiry ON ledger.projection_rows ((row ->> 'expires_at'), key)
    WHERE projection = 'holds' AND row ->> 'state' = 'open';
