-- 0008: settlement items — one row per capture or refund the log records, and the batch that
-- settled it. A projection the database keeps itself, in the same statement as the events, so
-- the nightly job selects and streams a batch's items with an index instead of reading the log,
-- and a settlement batch's closed event stays small however many items it has.
--
-- Batch membership is a rule, pinned by the batch's events, not a list:
--   the items of batch B (opened with currency C, cut-off T, pinned position P) are the captures
--   and refunds in C at positions <= P, recorded (captured_at / refunded_at) before T, that no batch
--   closed earlier in the log took.
-- SettlementBatchClosed (schema 2) carries the counts and gross credit/debit the job computed from
-- that rule, and the SHA-256 of the items' canonical lines. Its trigger applies the rule in the
-- same statement and refuses the append (SQLSTATE LDG10, which the writer reports as a version
-- conflict) when the rule took other items than the event says, e.g. because another daemon's
-- batch took some of them meanwhile — so two batches never claim one capture, across processes.
-- ledger.rebuild_settlement_items() derives the whole table again from the log.
CREATE TABLE ledger.settlement_items (
    position                   bigint      PRIMARY KEY,
    kind                       text        NOT NULL CHECK (kind IN ('capture', 'refund')),
    order_id                   text        NOT NULL,
    modification_reference     text        NOT NULL,
    psp_modification_reference text        NOT NULL,
    currency                   text        NOT NULL,
    amount_minor               bigint      NOT NULL CHECK (amount_minor > 0),
    recorded_at                timestamptz NOT NULL,
    batch_id                   text
);
CREATE INDEX settlement_items_unsettled ON ledger.settlement_items (currency, position) WHERE batch_id IS NULL;
CREATE INDEX settlement_items_by_batch ON ledger.settlement_items (batch_id, position) WHERE batch_id IS NOT NULL;
CREATE INDEX settlement_items_by_reference ON ledger.settlement_items (modification_reference);
CREATE INDEX settlement_items_by_psp_reference ON ledger.settlement_items (psp_modification_reference);

-- The row of a HoldCaptured / HoldRefunded event. Amounts are decimal strings with exactly the
-- currency's minor-unit digits (Money.decimalString), so dropping the point gives minor units.
CREATE FUNCTION ledger.settlement_item_row(p_position bigint, p_type text, p_data jsonb)
RETURNS ledger.settlement_items LANGUAGE sql STABLE AS $$
    SELECT p_position,
           CASE p_type WHEN 'HoldCaptured' THEN 'capture' ELSE 'refund' END,
           p_data ->> 'order_id', p_data ->> 'modification_reference', p_data ->> 'psp_modification_reference',
           p_data -> 'amount' ->> 'currency', replace(p_data -> 'amount' ->> 'amount', '.', '')::bigint,
           (p_data ->> CASE p_type WHEN 'HoldCaptured' THEN 'captured_at' ELSE 'refunded_at' END)::timestamptz,
           NULL::text
$$;

CREATE FUNCTION ledger.project_settlement_item() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger.settlement_items SELECT (ledger.settlement_item_row(NEW.position, NEW.type, NEW.data)).*;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_settlement_items AFTER INSERT ON ledger.events
    FOR EACH ROW WHEN (NEW.type IN ('HoldCaptured', 'HoldRefunded'))
    EXECUTE FUNCTION ledger.project_settlement_item();

-- Applies a closed event's membership rule (schema 2) or its item list (schema 1, which listed
-- the items) and checks the counts and gross amounts the event states.
CREATE FUNCTION ledger.assign_settlement_items(p_stream text, p_schema integer, p_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_opened jsonb;
    v_batch  text := p_data ->> 'batch_id';
    v_captures bigint; v_refunds bigint; v_credit bigint; v_debit bigint;
BEGIN
    IF p_schema = 1 THEN
        UPDATE ledger.settlement_items s SET batch_id = v_batch
        FROM jsonb_array_elements(p_data -> 'items') AS i(item)
        WHERE s.modification_reference = i.item ->> 'modification_reference' AND s.batch_id IS NULL;
        RETURN;
    END IF;
    SELECT e.data INTO v_opened FROM ledger.events e
    WHERE e.stream_id = p_stream AND e.stream_version = 1 AND e.type = 'SettlementBatchOpened';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'settlement batch % closed without being opened', v_batch USING ERRCODE = 'LDG10';
    END IF;
    WITH taken AS (
        UPDATE ledger.settlement_items s SET batch_id = v_batch
        WHERE s.batch_id IS NULL AND s.currency = v_opened ->> 'currency'
          AND s.position <= (v_opened ->> 'pinned_position')::bigint
          AND s.recorded_at < (v_opened ->> 'cut_off_at')::timestamptz
        RETURNING s.kind, s.amount_minor
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

CREATE FUNCTION ledger.close_settlement_batch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.assign_settlement_items(NEW.stream_id, NEW.schema_version, NEW.data);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_settlement_batch_closed AFTER INSERT ON ledger.events
    FOR EACH ROW WHEN (NEW.type = 'SettlementBatchClosed')
    EXECUTE FUNCTION ledger.close_settlement_batch();

-- Derives the table from the log again: every capture and refund, then every closed batch in log
-- order. Run by the owner (`ledgerd rebuild`); the log is not touched.
CREATE FUNCTION ledger.rebuild_settlement_items() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_closed record;
BEGIN
    DELETE FROM ledger.settlement_items;
    INSERT INTO ledger.settlement_items
    SELECT (ledger.settlement_item_row(e.position, e.type, e.data)).*
    FROM ledger.events e WHERE e.type IN ('HoldCaptured', 'HoldRefunded') ORDER BY e.position;
    FOR v_closed IN SELECT stream_id, schema_version, data FROM ledger.events
                    WHERE type = 'SettlementBatchClosed' ORDER BY position LOOP
        PERFORM ledger.assign_settlement_items(v_closed.stream_id, v_closed.schema_version, v_closed.data);
    END LOOP;
    RETURN (SELECT count(*) FROM ledger.settlement_items);
END
$$;

SELECT ledger.rebuild_settlement_items();

GRANT SELECT, INSERT, UPDATE ON ledger.settlement_items TO ledger_app;
GRANT SELECT ON ledger.settlement_items TO ledger_auditor;
