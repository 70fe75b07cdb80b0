-- 0008: settlement items — one row per capture or refund the log records, and the batch that
-- settled it. Projections the database keeps itself, in the same statement as the events, so the
-- nightly job selects and streams a batch's items with an index instead of reading the log, and a
-- settlement batch's closed event stays small however many items it has.
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
--
-- Three tables, none updated in place (a batch of a million items is a million inserts and
-- deletes, not a million updates of a wide, indexed row):
--   settlement_items        every capture and refund (immutable);
--   settlement_open_items   those no batch took yet (deleted when one does);
--   settlement_assignments  which batch took which item (append-only, like the log).
-- ledger.rebuild_settlement_items() derives all three again from the log.
CREATE TABLE ledger.settlement_items (
    position                   bigint      PRIMARY KEY,
    kind                       text        NOT NULL CHECK (kind IN ('capture', 'refund')),
    order_id                   text        NOT NULL,
    modification_reference     text        NOT NULL,
    psp_modification_reference text        NOT NULL,
    currency                   text        NOT NULL,
    amount_minor               bigint      NOT NULL CHECK (amount_minor > 0),
    recorded_at                timestamptz NOT NULL
);
CREATE INDEX settlement_items_by_reference ON ledger.settlement_items (modification_reference);
CREATE INDEX settlement_items_by_psp_reference ON ledger.settlement_items (psp_modification_reference);

CREATE TABLE ledger.settlement_open_items (
    position     bigint      PRIMARY KEY,
    currency     text        NOT NULL,
    recorded_at  timestamptz NOT NULL,
    kind         text        NOT NULL,
    amount_minor bigint      NOT NULL
);

CREATE TABLE ledger.settlement_assignments (
    position bigint PRIMARY KEY,
    batch_id text   NOT NULL
);
CREATE INDEX settlement_assignments_by_batch ON ledger.settlement_assignments (batch_id, position);
CREATE TRIGGER settlement_assignments_append_only BEFORE UPDATE OR DELETE ON ledger.settlement_assignments
    FOR EACH ROW EXECUTE FUNCTION ledger.reject_mutation();

-- The row of a HoldCaptured / HoldRefunded event. Amounts are decimal strings with exactly the
-- currency's minor-unit digits (Money.decimalString), so dropping the point gives minor units.
CREATE FUNCTION ledger.settlement_item_row(p_position bigint, p_type text, p_data jsonb)
RETURNS ledger.settlement_items LANGUAGE sql STABLE AS $$
    SELECT p_position,
           CASE p_type WHEN 'HoldCaptured' THEN 'capture' ELSE 'refund' END,
           p_data ->> 'order_id', p_data ->> 'modification_reference', p_data ->> 'psp_modification_reference',
           p_data -> 'amount' ->> 'currency', replace(p_data -> 'amount' ->> 'amount', '.', '')::bigint,
           (p_data ->> CASE p_type WHEN 'HoldCaptured' THEN 'captured_at' ELSE 'refunded_at' END)::timestamptz
$$;

CREATE FUNCTION ledger.project_settlement_item() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_item ledger.settlement_items;
BEGIN
    v_item := ledger.settlement_item_row(NEW.position, NEW.type, NEW.data);
    INSERT INTO ledger.settlement_items VALUES (v_item.*);
    INSERT INTO ledger.settlement_open_items (position, currency, recorded_at, kind, amount_minor)
    VALUES (v_item.position, v_item.currency, v_item.recorded_at, v_item.kind, v_item.amount_minor);
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
        WHERE o.currency = v_opened ->> 'currency'
          AND o.position <= (v_opened ->> 'pinned_position')::bigint
          AND o.recorded_at < (v_opened ->> 'cut_off_at')::timestamptz
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

CREATE FUNCTION ledger.close_settlement_batch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.assign_settlement_items(NEW.stream_id, NEW.schema_version, NEW.data);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_settlement_batch_closed AFTER INSERT ON ledger.events
    FOR EACH ROW WHEN (NEW.type = 'SettlementBatchClosed')
    EXECUTE FUNCTION ledger.close_settlement_batch();

-- Derives the three tables from the log again: every capture and refund, then every closed batch in
-- log order. Run by the owner (`ledgerd rebuild`); the log is not touched.
CREATE FUNCTION ledger.rebuild_settlement_items() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_closed record;
BEGIN
    TRUNCATE ledger.settlement_items, ledger.settlement_open_items, ledger.settlement_assignments;
    INSERT INTO ledger.settlement_items
    SELECT (ledger.settlement_item_row(e.position, e.type, e.data)).*
    FROM ledger.events e WHERE e.type IN ('HoldCaptured', 'HoldRefunded') ORDER BY e.position;
    INSERT INTO ledger.settlement_open_items (position, currency, recorded_at, kind, amount_minor)
    SELECT position, currency, recorded_at, kind, amount_minor FROM ledger.settlement_items;
    FOR v_closed IN SELECT stream_id, schema_version, data FROM ledger.events
                    WHERE type = 'SettlementBatchClosed' ORDER BY position LOOP
        PERFORM ledger.assign_settlement_items(v_closed.stream_id, v_closed.schema_version, v_closed.data);
    END LOOP;
    RETURN (SELECT count(*) FROM ledger.settlement_items);
END
$$;

SELECT ledger.rebuild_settlement_items();

GRANT SELECT, INSERT ON ledger.settlement_items, ledger.settlement_assignments TO ledger_app;
GRANT SELECT, INSERT, DELETE ON ledger.settlement_open_items TO ledger_app;
GRANT SELECT ON ledger.settlement_items, ledger.settlement_open_items, ledger.settlement_assignments TO ledger_auditor;
