-- 0011: ledger.verify_chain checks every stored event, not only those up to ledger.head.
--
-- Until now the range defaulted to (and was capped at) the head's position. ledger_app may UPDATE
-- ledger.head (every append moves it), so a role with the daemon's rights could move the head back one
-- event; a superuser could then edit the event beyond it, and verify_chain(), which stopped at the
-- head, still answered ok. Now the range runs to the last stored event (or the head, when the head
-- claims more than is stored: the missing positions are reported as before), and an event stored
-- beyond the head is tampering in itself: the head is moved by the same statement that inserts, so
-- no committed event can lie beyond it. The reasons, in the order they are reported:
--   1. a missing position, a prev_hash that is not the previous hash, or a hash that does not match
--      the event's contents: at the first such position, as before;
--   2. 'ledger head does not match the last event': the head's hash differs from the stored hash at
--      the head's position (when the range covers it);
--   3. 'event stored beyond the ledger head: the head was moved back' at head + 1, when the range
--      reaches past the head.
-- The signature and the result columns are unchanged, so `SELECT * FROM ledger.verify_chain();` and
-- ledger.verify_prefix (sql/0006, which calls verify_chain(1, p_position)) keep working as written.
-- The function is STABLE: every query in it sees the snapshot of the calling statement, so the head
-- and the last stored position are read consistently even while the daemon appends.
-- ChainVerifier.verify (Swift) applies the same rules, independently.

CREATE OR REPLACE FUNCTION ledger.verify_chain(p_from bigint DEFAULT 1, p_to bigint DEFAULT NULL)
RETURNS TABLE (ok boolean, checked bigint, first_bad_position bigint, reason text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_from      bigint := greatest(coalesce(p_from, 1), 1);
    v_head_pos  bigint;
    v_head_hash bytea;
    v_last      bigint;
    v_end       bigint;
    v_to        bigint;
    v_prev      bytea;
    v_expected  bigint;
    v_checked   bigint := 0;
    v_hash      bytea;
    v_stored    bytea;
    r           ledger.events%ROWTYPE;
BEGIN
    SELECT h.position, h.hash INTO v_head_pos, v_head_hash FROM ledger.head h WHERE h.singleton;
    SELECT coalesce(max(e.position), 0) INTO v_last FROM ledger.events e;
    v_end := greatest(v_head_pos, v_last);
    v_to := least(coalesce(p_to, v_end), v_end);
    IF v_from > v_to THEN
        RETURN QUERY SELECT true, 0::bigint, NULL::bigint, NULL::text;
        RETURN;
    END IF;

    IF v_from = 1 THEN
        v_prev := decode(repeat('00', 32), 'hex');
    ELSE
        SELECT e.hash INTO v_prev FROM ledger.events e WHERE e.position = v_from - 1;
        IF NOT FOUND THEN
            RETURN QUERY SELECT false, 0::bigint, v_from - 1, 'event is missing'::text;
            RETURN;
        END IF;
    END IF;

    v_expected := v_from;
    FOR r IN SELECT * FROM ledger.events e WHERE e.position BETWEEN v_from AND v_to ORDER BY e.position LOOP
        IF r.position <> v_expected THEN
            RETURN QUERY SELECT false, v_checked, v_expected, 'event is missing'::text;
            RETURN;
        END IF;
        IF r.prev_hash <> v_prev THEN
            RETURN QUERY SELECT false, v_checked, r.position, 'prev_hash is not the hash of the previous event'::text;
            RETURN;
        END IF;
        v_hash := ledger.event_hash(v_prev, r.position, r.stream_id, r.stream_version, r.event_id, r.type,
                                    r.schema_version, r.data, r.metadata, r.effective_at, r.recorded_at);
        IF v_hash <> r.hash THEN
            RETURN QUERY SELECT false, v_checked, r.position, 'hash does not match the event''s contents'::text;
            RETURN;
        END IF;
        v_prev := r.hash;
        v_expected := v_expected + 1;
        v_checked := v_checked + 1;
    END LOOP;

    IF v_expected <= v_to THEN
        RETURN QUERY SELECT false, v_checked, v_expected, 'event is missing'::text;
        RETURN;
    END IF;
    IF v_head_pos BETWEEN v_from AND v_to THEN
        SELECT e.hash INTO v_stored FROM ledger.events e WHERE e.position = v_head_pos;
        IF v_stored IS DISTINCT FROM v_head_hash THEN
            RETURN QUERY SELECT false, v_checked, v_head_pos, 'ledger head does not match the last event'::text;
            RETURN;
        END IF;
    END IF;
    IF v_to > v_head_pos THEN
        RETURN QUERY SELECT false, v_checked, v_head_pos + 1,
            'event stored beyond the ledger head: the head was moved back'::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, v_checked, NULL::bigint, NULL::text;
END
$$;
