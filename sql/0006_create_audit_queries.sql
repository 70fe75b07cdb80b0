-- 0005: what auditors ask of the log — by order, by type, by request, by time — and the check of
-- a signed checkpoint, all runnable in psql as ledger_auditor.

-- An order's whole history (its own and its hold's stream, the stock it reserved, sold or released
-- on product streams, later settlement lines): every event whose payload names the order.
CREATE INDEX events_by_order_id ON ledger.events ((data ->> 'order_id'), position);
-- The feed filtered by type (e.g. every CheckpointSigned) and one request's events by correlation id.
CREATE INDEX events_by_type ON ledger.events (type, position);
CREATE INDEX events_by_correlation_id ON ledger.events ((metadata ->> 'correlation_id'), position);

-- The last position recorded at or before p_at (0 when none): "the ledger as of a time" is the
-- ledger as of this position. recorded_at never decreases with position (ledger.append_events),
-- so a binary search over the primary key finds it in ~log2(head) lookups without an index on
-- time. A missing position (a tampered log) falls back to a scan; verify_chain reports the gap.
CREATE FUNCTION ledger.position_at(p_at timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
    v_lo  bigint := 0;
    v_hi  bigint;
    v_mid bigint;
    v_at  timestamptz;
BEGIN
    SELECT h.position INTO v_hi FROM ledger.head h WHERE h.singleton;
    -- Invariant: the answer is in [v_lo, v_hi].
    WHILE v_lo < v_hi LOOP
        v_mid := v_lo + (v_hi - v_lo + 1) / 2;
        SELECT e.recorded_at INTO v_at FROM ledger.events e WHERE e.position = v_mid;
        IF NOT FOUND THEN
            RETURN coalesce((SELECT max(e.position) FROM ledger.events e WHERE e.recorded_at <= p_at), 0);
        END IF;
        IF v_at <= p_at THEN
            v_lo := v_mid;
        ELSE
            v_hi := v_mid - 1;
        END IF;
    END LOOP;
    RETURN v_lo;
END
$$;

-- Checks the log against a signed checkpoint (position, hash): the chain verifies over
-- [1, p_position] and the event at p_position still has the signed hash. Catches what the chain
-- alone cannot: a superuser who truncates the tail and moves the head back (the remaining chain
-- is intact), or who rewrites every hash after an edit. The signature itself is checked by
-- `ledgerd audit verify --checkpoint FILE --public-key KEY` (PostgreSQL has no Ed25519).
CREATE FUNCTION ledger.verify_prefix(p_position bigint, p_hash bytea)
RETURNS TABLE (ok boolean, checked bigint, first_bad_position bigint, reason text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_head  bigint;
    v_hash  bytea;
    r       record;
BEGIN
    IF p_position IS NULL OR p_position < 1 OR p_hash IS NULL THEN
        RAISE EXCEPTION 'verify_prefix: a position >= 1 and a hash are required' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM ledger.verify_chain(1, p_position);
    IF NOT r.ok THEN
        RETURN QUERY SELECT r.ok, r.checked, r.first_bad_position, r.reason;
        RETURN;
    END IF;
    SELECT h.position INTO v_head FROM ledger.head h WHERE h.singleton;
    IF r.checked < p_position THEN
        RETURN QUERY SELECT false, r.checked, r.checked + 1,
            format('the log ends at position %s but the checkpoint covers %s: events were removed', v_head, p_position);
        RETURN;
    END IF;
    SELECT e.hash INTO v_hash FROM ledger.events e WHERE e.position = p_position;
    IF v_hash <> p_hash THEN
        RETURN QUERY SELECT false, r.checked, p_position,
            'the event at the checkpoint''s position does not have the signed hash: history up to it was rewritten'::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, r.checked, NULL::bigint, NULL::text;
END
$$;

GRANT EXECUTE ON FUNCTION ledger.position_at(timestamptz), ledger.verify_prefix(bigint, bytea) TO ledger_app, ledger_auditor;
