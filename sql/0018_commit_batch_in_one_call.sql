-- 0018: the writer's batch, committed in one round trip.
--
-- Until now a batch took three round trips, BEGIN, SELECT … FROM ledger.append_batch(…) and COMMIT, so that
-- the writer acknowledged its callers on the COMMIT's answer (an implicit transaction commits at the
-- protocol's Sync, after the rows have been read, where a failure would not reach them). Profiles of
-- `ledgerd bench append` showed the writer waiting on those round trips, not on the disk (an fsync here is
-- ~90 µs) or the CPU (40 % idle). A procedure may COMMIT: `CALL ledger.append_batch_committed(…)` runs
-- ledger.append_batch (0017, unchanged) and commits before the CALL answers, so its answer arrives only once
-- the batch is durable, in one round trip.
--
-- The answer comes back in the INOUT parameters (a procedure returns one row): p_first_position, the first
-- position appended (NULL when nothing was), and p_answer, NULL when append_batch answered only 'appended',
-- else its rows as a JSON array of {kind, name, version, request_hash (hex), result, first_position}.
-- Called outside any transaction block (the writer's optimistic path). The path that reads the head under
-- its lock first keeps the explicit transaction and calls ledger.append_batch itself.
CREATE PROCEDURE ledger.append_batch_committed(
    p_check_streams text[], p_check_versions bigint[], p_probe_keys text[],
    p_keys text[], p_hashes bytea[], p_key_first integer[], p_key_last integer[], p_key_streams text[],
    p_stream_ids text[], p_stream_versions bigint[], p_event_ids uuid[], p_types text[],
    p_schema_versions integer[], p_data text[], p_metadata text[], p_effective_us bigint[],
    p_row_projections text[], p_row_keys text[], p_row_versions bigint[], p_row_json text[], p_row_ordinals integer[],
    p_head_position bigint, p_head_hash bytea, p_recorded_us bigint, p_prev_hashes bytea[], p_link_hashes bytea[],
    INOUT p_first_position bigint DEFAULT NULL, INOUT p_answer text DEFAULT NULL
)
LANGUAGE plpgsql AS $$
DECLARE
    v_rows jsonb := '[]';
    v_other boolean := false;
    r record;
BEGIN
    p_first_position := NULL;
    FOR r IN
        SELECT * FROM ledger.append_batch(
            p_check_streams, p_check_versions, p_probe_keys, p_keys, p_hashes, p_key_first, p_key_last, p_key_streams,
            p_stream_ids, p_stream_versions, p_event_ids, p_types, p_schema_versions, p_data, p_metadata, p_effective_us,
            p_row_projections, p_row_keys, p_row_versions, p_row_json, p_row_ordinals,
            p_head_position, p_head_hash, p_recorded_us, p_prev_hashes, p_link_hashes)
    LOOP
        IF r.kind = 'appended' THEN
            p_first_position := r.first_position;
        ELSE
            v_other := true;
        END IF;
        v_rows := v_rows || jsonb_build_array(jsonb_build_object(
            'kind', r.kind, 'name', r.name, 'version', r.version, 'request_hash', encode(r.request_hash, 'hex'),
            'result', r.result, 'first_position', r.first_position));
    END LOOP;
    p_answer := CASE WHEN v_other OR p_first_position IS NULL THEN v_rows::text END;
    COMMIT;
END
$$;

REVOKE ALL ON PROCEDURE ledger.append_batch_committed(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], bigint, bytea, bigint, bytea[], bytea[], bigint, text) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE ledger.append_batch_committed(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], bigint, bytea, bigint, bytea[], bytea[], bigint, text) TO ledger_app;
