-- 0014: ledger.verify_prefix refuses a checkpoint hash that is not 32 bytes.
--
-- Until now a hash of the wrong length (a hex string passed as text bytes, a truncated copy) was
-- compared with the event's hash, differed, and was reported as "history up to it was rewritten":
-- an auditor's typo read as tampering. It now raises SQLSTATE 22023 (invalid_parameter_value) with
-- the length it got, before any verification. Everything else is as in 0006; the grants carry over
-- (CREATE OR REPLACE keeps them).
CREATE OR REPLACE FUNCTION ledger.verify_prefix(p_position bigint, p_hash bytea)
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
    IF octet_length(p_hash) <> 32 THEN
        RAISE EXCEPTION 'verify_prefix: the checkpoint hash must be 32 bytes (a SHA-256), got %', octet_length(p_hash)
            USING ERRCODE = '22023',
                  HINT = 'Pass the checkpoint''s hash as bytea, e.g. decode(''<64 hex digits>'', ''hex'').';
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
