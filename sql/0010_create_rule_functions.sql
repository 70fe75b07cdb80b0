-- 0010: two business rules stated once, as SQL functions that the database and the daemon both
-- call, and an index that nothing uses dropped.
--
-- 1. Settlement batch membership: ledger.settlement_batch_takes and ledger.settlement_batch_candidates.
--    Until now the rule was written out in four places: the closed event's trigger (sql/0008,
--    ledger.assign_settlement_items, the authoritative one), the daemon's query that counts and hashes
--    a batch's items before it appends the closed event, a partial copy in the daemon's "which
--    currencies have items to settle" query, and a Swift re-check. The trigger and the daemon must
--    select exactly the same rows: when they differ, the trigger refuses every close (LDG10), the
--    writer reports that as a version conflict, and the job retries until it reports "too busy", which
--    looks like contention rather than a bug. Now settlement_batch_takes is the only statement of the
--    rule's conditions: the trigger (redefined below) deletes, that is takes, the open items it holds
--    for, and the daemon reads the same rows through settlement_batch_candidates, which applies it.
--
-- 2. Lapse: ledger.order_rows_at and ledger.inventory_rows_at.
--    A hold past its expiry reads as expired (its order `expired`, or `captured` when part was
--    captured) and, when its expiry would return the stock, its reservations count as available, even
--    before the expiry sweeper records the expiry. The live reads applied this to the read models with
--    two SQL strings inside Swift (ProjectionOrderReader, ProjectionStorefrontReader); they now call
--    these functions. As-of reads (the state at a past point, folded from the log) apply the same rule
--    in Swift (AggregateStates.lapsed(at:)), because they have no read-model rows to apply it to; the
--    as-of tests and the lapse tests check that both give the same answers.
--
-- The new functions are LANGUAGE sql, STABLE, not STRICT, with one SELECT or expression and no SET
-- clause: that is what lets PostgreSQL inline them into the calling statement, so a caller's
-- condition (an order's key, a product's key) still reaches the table's index, and the trigger's
-- DELETE is still one scan, as if the query were written out in full.
--
-- 3. sql/0007's GIN index events_settlement_items (on closed events' `items`) is dropped: closed
--    events of schema 2 do not list their items (sql/0008), and no query filters on `data -> 'items'`.
--    (The trigger of the same name on ledger.events, from sql/0008, is a different object and stays.)
--
-- sql/README.md says which migration defines the current version of every object.

-- Settlement batch membership. A batch opened with currency C, pinned position P and cut-off T
-- takes the captures and refunds
--   * that no batch took yet: exactly the rows of settlement_open_items (a batch's closed event
--     deletes the rows it takes there and records them in settlement_assignments, in one statement);
--   * in currency C;
--   * at or before position P in the log (captures recorded while the batch is being closed wait
--     for the next batch);
--   * recorded (captured_at / refunded_at) strictly before T.
-- The arguments are the batch's SettlementBatchOpened fields currency, pinned_position, cut_off_at.
--
-- ledger.settlement_batch_takes states the last three clauses, for one row of settlement_open_items;
-- ledger.settlement_batch_candidates applies it to every such row. The daemon and auditors read a
-- batch's items through the candidates; the closed event's trigger deletes the open items for which
-- settlement_batch_takes holds. (Deleting `USING settlement_batch_candidates(...)` would join the open
-- items with themselves: measured at about +20% for a batch of 800,000 items.)
CREATE FUNCTION ledger.settlement_batch_takes(
    p_item ledger.settlement_open_items, p_currency text, p_pinned_position bigint, p_cut_off_at timestamptz
) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN p_item.currency = p_currency
   AND p_item.position <= p_pinned_position
   AND p_item.recorded_at < p_cut_off_at;

-- The items a batch would take now (see above), unordered: callers that need ledger order
-- ORDER BY position. Join settlement_items on position for the items' references and order ids.
CREATE FUNCTION ledger.settlement_batch_candidates(p_currency text, p_pinned_position bigint, p_cut_off_at timestamptz)
RETURNS SETOF ledger.settlement_open_items
LANGUAGE sql STABLE AS $$
    SELECT o.*
    FROM ledger.settlement_open_items o
    WHERE ledger.settlement_batch_takes(o, p_currency, p_pinned_position, p_cut_off_at)
$$;

-- sql/0008's function with the schema-2 branch taking exactly the candidates' rows (the schema-1
-- branch, for closed events that listed their items, is unchanged). Still refuses the append with
-- LDG10 when the items taken do not have the counts and gross amounts the event states.
CREATE OR REPLACE FUNCTION ledger.assign_settlement_items(p_stream text, p_schema integer, p_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_opened jsonb;
    v_batch  text := p_data ->> 'batch_id';
    v_captures bigint; v_refunds bigint; v_credit bigint; v_debit bigint;
BEGIN
    IF p_schema = 1 THEN
        WITH taken AS (
            DELETE FROM ledger.settlement_open_items o
            USING ledger.settlement_items s, jsonb_array_elements(p_data -> 'items') AS i(item)
            WHERE s.position = o.position AND s.modification_reference = i.item ->> 'modification_reference'
            RETURNING o.position
        )
        INSERT INTO ledger.settlement_assignments (position, batch_id) SELECT position, v_batch FROM taken;
        RETURN;
    END IF;
    SELECT e.data INTO v_opened FROM ledger.events e
    WHERE e.stream_id = p_stream AND e.stream_version = 1 AND e.type = 'SettlementBatchOpened';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'settlement batch % closed without being opened', v_batch USING ERRCODE = 'LDG10';
    END IF;
    WITH taken AS (
        DELETE FROM ledger.settlement_open_items o
        WHERE ledger.settlement_batch_takes(o, v_opened ->> 'currency', (v_opened ->> 'pinned_position')::bigint,
                                            (v_opened ->> 'cut_off_at')::timestamptz)
        RETURNING o.position, o.kind, o.amount_minor
    ), assigned AS (
        INSERT INTO ledger.settlement_assignments (position, batch_id) SELECT position, v_batch FROM taken
    )
    SELECT count(*) FILTER (WHERE kind = 'capture'), count(*) FILTER (WHERE kind = 'refund'),
           coalesce(sum(amount_minor) FILTER (WHERE kind = 'capture'), 0),
           coalesce(sum(amount_minor) FILTER (WHERE kind = 'refund'), 0)
    INTO v_captures, v_refunds, v_credit, v_debit FROM taken;
    IF v_captures <> (p_data ->> 'capture_count')::bigint OR v_refunds <> (p_data ->> 'refund_count')::bigint
       OR v_credit <> replace(p_data -> 'gross_credit' ->> 'amount', '.', '')::bigint
       OR v_debit <> replace(p_data -> 'gross_debit' ->> 'amount', '.', '')::bigint THEN
        RAISE EXCEPTION 'settlement batch % would take % captures and % refunds (% / %), the event states % and %',
            v_batch, v_captures, v_refunds, v_credit, v_debit, p_data ->> 'capture_count', p_data ->> 'refund_count'
            USING ERRCODE = 'LDG10';
    END IF;
END
$$;

-- An instant as the read models write it: RFC 3339 in UTC with exactly six fractional digits,
-- e.g. 2030-06-19T10:00:00.000000Z (Swift's OrderReadModel.timestamp / RFC3339.format). The width
-- is fixed, so text order is time order: the lapse compares the rows' expires_at as text, which is
-- also what the open-holds index (sql/0004) is built on.
CREATE FUNCTION ledger.read_model_timestamp(p_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- The lapse, stated once: a hold (a `holds` read-model row, or the `hold` object of an `orders` row)
-- that is still open and whose expiry is at or before p_at (read-model text, see above) has lapsed:
-- reads treat it as the expiry sweeper will record it, and the sweeper takes it as due. A plain
-- expression function, so PostgreSQL inlines it and the open-holds index (sql/0004) still applies.
CREATE FUNCTION ledger.hold_lapsed(p_hold jsonb, p_at text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_hold ->> 'state' = 'open' AND p_hold ->> 'expires_at' <= p_at;

-- The `orders` read-model rows as a read at p_now shows them. An order whose hold is still open
-- but expired at or before p_now, and whose status is `authorized` or `partially_captured`, reads
-- as the sweeper will record it: status `expired` (nothing was captured) or `captured` (part was),
-- hold state `closed`. Every other row, and every money figure, is as recorded. Projection names
-- and JSON keys are the read models' (Swift's OrderReadModel).
CREATE FUNCTION ledger.order_rows_at(p_now timestamptz)
RETURNS TABLE (key text, created_position bigint, "row" jsonb)
LANGUAGE sql STABLE AS $$
    SELECT r.key, r.created_position,
           CASE WHEN ledger.hold_lapsed(r.row -> 'hold', ledger.read_model_timestamp(p_now))
                 AND r.row ->> 'status' IN ('authorized', 'partially_captured')
                THEN jsonb_set(jsonb_set(r.row, '{status}',
                                         to_jsonb(CASE r.row ->> 'status' WHEN 'authorized' THEN 'expired' ELSE 'captured' END)),
                               '{hold,state}', '"closed"')
                ELSE r.row END
    FROM ledger.projection_rows r
    WHERE r.projection = 'orders'
$$;

-- The `inventory` read-model rows as a read at p_now shows them. Every hold still open but expired
-- at or before p_now returns the stock its expiry would release (the `holds` row's
-- released_on_expiry: empty when the expiry releases none, e.g. after the order shipped): per
-- product, `reserved` goes down and `available` up by those quantities. Every other field is as
-- recorded. Projection names and JSON keys are the read models' (Swift's CatalogReadModel and
-- HoldReadModel).
CREATE FUNCTION ledger.inventory_rows_at(p_now timestamptz)
RETURNS TABLE (key text, created_position bigint, "row" jsonb)
LANGUAGE sql STABLE AS $$
    WITH lapsed AS (
        SELECT l ->> 'product_id' AS product, sum((l ->> 'quantity')::bigint) AS quantity
        FROM ledger.projection_rows h, jsonb_array_elements(h.row -> 'released_on_expiry') AS l
        WHERE h.projection = 'holds' AND ledger.hold_lapsed(h.row, ledger.read_model_timestamp(p_now))
        GROUP BY 1
    )
    SELECT p.key, p.created_position,
           CASE WHEN l.quantity IS NULL THEN p.row
                ELSE p.row || jsonb_build_object('reserved', (p.row ->> 'reserved')::bigint - l.quantity,
                                                 'available', (p.row ->> 'available')::bigint + l.quantity) END
    FROM ledger.projection_rows p LEFT JOIN lapsed l ON l.product = p.key
    WHERE p.projection = 'inventory'
$$;

DROP INDEX ledger.events_settlement_items;

-- Functions are executable by PUBLIC by default; as in sql/0006, the grants say who is meant to call
-- them. Each reads tables with the caller's rights, which both roles have (sql/0002, sql/0008).
GRANT EXECUTE ON FUNCTION
    ledger.settlement_batch_takes(ledger.settlement_open_items, text, bigint, timestamptz),
    ledger.settlement_batch_candidates(text, bigint, timestamptz), ledger.read_model_timestamp(timestamptz),
    ledger.hold_lapsed(jsonb, text),
    ledger.order_rows_at(timestamptz), ledger.inventory_rows_at(timestamptz) TO ledger_app, ledger_auditor;
