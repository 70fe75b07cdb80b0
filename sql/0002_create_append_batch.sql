-- 0002: the group-commit writer's batch in one statement (one round trip, autocommit).
--
-- The writer decides a batch in Swift, in queue order, against the stream versions it has cached
-- (optimistic concurrency and idempotency), then calls ledger.append_batch with:
--   p_check_streams / p_check_versions  every stream the batch touched and the version the writer
--                                       believed current when deciding (accepted or refused requests)
--   p_probe_keys                        every idempotency key in the batch the writer does not know
--                                       to be stored (a key decides before any version check)
--   p_keys / p_hashes / p_key_first / p_key_last / p_key_streams
--                                       the idempotency keys of accepted requests, their request
--                                       hashes, their first/last event ordinal in the batch and
--                                       their stream versions as JSON (for the stored result)
--   event arrays                        the accepted events, with the stream versions assigned
-- Under the head lock it verifies, set-based, that every believed version is still current and
-- that no key is already stored. If so, it appends (ledger.append_events), stores the keys and
-- returns one row ('appended', first position). If not, it appends nothing and returns the truth:
-- rows ('stale', stream, actual version) and ('key_exists', key, request hash, stored result);
-- the writer refreshes what it believed and decides the batch again. With one writer process the
-- cache is always right, so a batch is one round trip and no per-request SQL.

-- Inline read models (inventory, shipping methods, orders, …): one row per aggregate, in the
-- shape the API serves, computed in Swift from the aggregate's state after its events and written
-- by append_batch in the same statement as the events, so a read right after a commit is exact.
-- A row only moves forward (its stream version guards the update); created_position orders rows
-- the way they were created (the catalog's listing order). Rebuilt by replaying the log.
CREATE TABLE ledger.projection_rows (
    projection       text        NOT NULL,
    key              text        NOT NULL,
    version          bigint      NOT NULL,
    row              jsonb       NOT NULL,
    created_position bigint      NOT NULL,
    PRIMARY KEY (projection, key)
);

CREATE FUNCTION ledger.append_batch(
    p_check_streams text[], p_check_versions bigint[], p_probe_keys text[],
    p_keys text[], p_hashes bytea[], p_key_first integer[], p_key_last integer[], p_key_streams text[],
    p_stream_ids text[], p_stream_versions bigint[], p_event_ids uuid[], p_types text[],
    p_schema_versions integer[], p_data text[], p_metadata text[], p_effective_us bigint[],
    p_row_projections text[], p_row_keys text[], p_row_versions bigint[], p_row_json text[], p_row_ordinals integer[]
) RETURNS TABLE (kind text, name text, version bigint, request_hash bytea, result text, first_position bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_first bigint;
    v_refused boolean := false;
BEGIN
    PERFORM 1 FROM ledger.head h WHERE h.singleton FOR UPDATE;

    RETURN QUERY
    SELECT 'stale'::text, c.stream, c.actual, NULL::bytea, NULL::text, NULL::bigint
    FROM (
        SELECT u.stream, u.believed,
               coalesce((SELECT max(e.stream_version) FROM ledger.events e WHERE e.stream_id = u.stream), 0) AS actual
        FROM unnest(p_check_streams, p_check_versions) AS u(stream, believed)
    ) c
    WHERE c.actual <> c.believed;
    v_refused := FOUND;

    IF coalesce(cardinality(p_probe_keys), 0) > 0 THEN
        RETURN QUERY
        SELECT 'key_exists'::text, ik.key, NULL::bigint, ik.request_hash, ik.result::text, NULL::bigint
        FROM ledger.idempotency_keys ik WHERE ik.key = ANY(p_probe_keys);
        v_refused := v_refused OR FOUND;
    END IF;

    IF v_refused OR coalesce(cardinality(p_event_ids), 0) = 0 THEN
        RETURN;
    END IF;

    SELECT ae.first_position INTO v_first
    FROM ledger.append_events(p_stream_ids, p_stream_versions, p_event_ids, p_types, p_schema_versions,
                              p_data, p_metadata, p_effective_us) ae;

    IF coalesce(cardinality(p_keys), 0) > 0 THEN
        INSERT INTO ledger.idempotency_keys (key, request_hash, first_position, last_position, result, recorded_at)
        SELECT k.key, k.hash, v_first + k.first - 1, v_first + k.last - 1,
               jsonb_build_object('first_position', v_first + k.first - 1, 'last_position', v_first + k.last - 1,
                                  'streams', k.streams::jsonb),
               now()
        FROM unnest(p_keys, p_hashes, p_key_first, p_key_last, p_key_streams) AS k(key, hash, first, last, streams);
    END IF;

    IF coalesce(cardinality(p_row_keys), 0) > 0 THEN
        INSERT INTO ledger.projection_rows AS pr (projection, key, version, row, created_position)
        SELECT u.projection, u.key, u.version, u.json::jsonb, v_first + u.ordinal - 1
        FROM unnest(p_row_projections, p_row_keys, p_row_versions, p_row_json, p_row_ordinals)
             AS u(projection, key, version, json, ordinal)
        ON CONFLICT (projection, key) DO UPDATE
            SET version = EXCLUDED.version, row = EXCLUDED.row
            WHERE pr.version < EXCLUDED.version;
    END IF;

    RETURN QUERY SELECT 'appended'::text, NULL::text, NULL::bigint, NULL::bytea, NULL::text, v_first;
END
$$;

REVOKE ALL ON FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[]) TO ledger_app;

GRANT SELECT, INSERT, UPDATE ON ledger.projection_rows TO ledger_app;
GRANT SELECT ON ledger.projection_rows TO ledger_auditor;
