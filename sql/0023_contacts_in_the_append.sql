-- 0023: the shopper's contact is written by the order's append, in its transaction.
--
-- Until now a payment inserted its shipping contact (ledger.shipping_contacts, 0003: personal data kept out of
-- the chain) in its own autocommit statement before the order was even decided, and deleted it again when the
-- order was not opened: a statement and a WAL flush per payment on their own (sampling pg_stat_activity during
-- the payments benchmark found that INSERT in 112 of 151 active statements), and a contact left behind when the
-- daemon died between the two. Now the contact travels with the append that opens its order: ledger.append_batch
-- and ledger.append_batch_committed take two more arrays,
--   p_contact_refs, p_contact_data   contact_ref and the contact as a JSON object, one row each,
-- inserted after the events and projection rows, only when the batch appends (a refused batch writes nothing, and
-- a replayed request is not part of the batch's arrays). The contact is still never hashed or put in an event: the
-- order's OrderOpened names it by contact_ref alone, and an erasure deletes the row as before.
--
-- The functions are otherwise 0017's and 0018's, unchanged; the old signatures are dropped.

DROP PROCEDURE ledger.append_batch_committed(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], bigint, bytea, bigint, bytea[], bytea[], bigint, text);
DROP FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], bigint, bytea, bigint, bytea[], bytea[]);

CREATE FUNCTION ledger.append_batch(
    p_check_streams text[], p_check_versions bigint[], p_probe_keys text[],
    p_keys text[], p_hashes bytea[], p_key_first integer[], p_key_last integer[], p_key_streams text[],
    p_stream_ids text[], p_stream_versions bigint[], p_event_ids uuid[], p_types text[],
    p_schema_versions integer[], p_data text[], p_metadata text[], p_effective_us bigint[],
    p_row_projections text[], p_row_keys text[], p_row_versions bigint[], p_row_json text[], p_row_ordinals integer[],
    p_contact_refs text[], p_contact_data text[],
    p_head_position bigint, p_head_hash bytea, p_recorded_us bigint, p_prev_hashes bytea[], p_link_hashes bytea[]
) RETURNS TABLE (kind text, name text, version bigint, request_hash bytea, result text, first_position bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_n         integer := coalesce(cardinality(p_event_ids), 0);
    v_head_pos  bigint;
    v_head_hash bytea;
    v_head_us   bigint;
    v_first     bigint;
    v_rec       timestamptz;
    v_refused   boolean := false;
BEGIN
    SELECT h.position, h.hash, ledger.epoch_us(h.recorded_at) INTO v_head_pos, v_head_hash, v_head_us
    FROM ledger.head h WHERE h.singleton FOR UPDATE;

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

    IF v_refused OR v_n = 0 THEN
        RETURN;
    END IF;

    IF p_head_position IS DISTINCT FROM v_head_pos OR p_head_hash IS DISTINCT FROM v_head_hash
       OR p_recorded_us IS NULL OR p_recorded_us < v_head_us THEN
        RETURN QUERY SELECT 'head'::text, NULL::text, v_head_pos, v_head_hash, v_head_us::text, NULL::bigint;
        RETURN;
    END IF;

    IF coalesce(cardinality(p_prev_hashes), 0) <> v_n OR coalesce(cardinality(p_link_hashes), 0) <> v_n
       OR p_prev_hashes[1] IS DISTINCT FROM v_head_hash
       OR EXISTS (SELECT 1 FROM unnest(p_prev_hashes[2:v_n], p_link_hashes[1:v_n - 1]) AS l(prev, hash)
                  WHERE l.prev IS DISTINCT FROM l.hash) THEN
        RAISE EXCEPTION 'append_batch: the links do not chain onto the head and onto each other' USING ERRCODE = '22023';
    END IF;

    v_first := v_head_pos + 1;
    v_rec := timestamptz 'epoch' + p_recorded_us * interval '1 microsecond';

    INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version,
                               data, metadata, data_text, metadata_text, effective_at, recorded_at, prev_hash, hash)
    SELECT v_head_pos + u.ord, u.stream_id, u.stream_version, u.event_id, u.type, u.schema_version,
           u.data::jsonb, u.metadata::jsonb, u.data, u.metadata,
           timestamptz 'epoch' + u.effective_us * interval '1 microsecond', v_rec, u.prev_hash, u.hash
    FROM unnest(p_stream_ids, p_stream_versions, p_event_ids, p_types, p_schema_versions,
                p_data, p_metadata, p_effective_us, p_prev_hashes, p_link_hashes) WITH ORDINALITY
         AS u(stream_id, stream_version, event_id, type, schema_version, data, metadata, effective_us,
              prev_hash, hash, ord);

    UPDATE ledger.head SET position = v_head_pos + v_n, hash = p_link_hashes[v_n], recorded_at = v_rec WHERE singleton;
    PERFORM pg_notify('ledger_events', (v_head_pos + v_n)::text);

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

    IF coalesce(cardinality(p_contact_refs), 0) > 0 THEN
        IF cardinality(p_contact_data) IS DISTINCT FROM cardinality(p_contact_refs) THEN
            RAISE EXCEPTION 'append_batch: contact arrays differ in length' USING ERRCODE = '22023';
        END IF;
        INSERT INTO ledger.shipping_contacts (contact_ref, data, created_at)
        SELECT c.ref, c.data::jsonb, now()
        FROM unnest(p_contact_refs, p_contact_data) AS c(ref, data);
    END IF;

    RETURN QUERY SELECT 'appended'::text, NULL::text, NULL::bigint, NULL::bytea, NULL::text, v_first;
END
$$;

REVOKE ALL ON FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], text[], text[], bigint, bytea, bigint, bytea[], bytea[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], text[], text[], bigint, bytea, bigint, bytea[], bytea[]) TO ledger_app;

CREATE PROCEDURE ledger.append_batch_committed(
    p_check_streams text[], p_check_versions bigint[], p_probe_keys text[],
    p_keys text[], p_hashes bytea[], p_key_first integer[], p_key_last integer[], p_key_streams text[],
    p_stream_ids text[], p_stream_versions bigint[], p_event_ids uuid[], p_types text[],
    p_schema_versions integer[], p_data text[], p_metadata text[], p_effective_us bigint[],
    p_row_projections text[], p_row_keys text[], p_row_versions bigint[], p_row_json text[], p_row_ordinals integer[],
    p_contact_refs text[], p_contact_data text[],
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
            p_contact_refs, p_contact_data,
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

REVOKE ALL ON PROCEDURE ledger.append_batch_committed(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], text[], text[], bigint, bytea, bigint, bytea[], bytea[], bigint, text) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE ledger.append_batch_committed(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], text[], text[], bigint, bytea, bigint, bytea[], bytea[], bigint, text) TO ledger_app;
