-- 0002: the group-commit writer's whole batch in one statement (one round trip, autocommit).
--
-- A batch is a list of requests; each request appends to one or more streams atomically, each
-- stream with an expected version (-1 any, 0 no stream, n exact), and may carry an idempotency key
-- with the hash of its request. Requests are decided in order under the head lock, each seeing the
-- versions left by the ones before it:
--   replayed              key already stored with the same request hash → its stored result
--   same_as               key used earlier in this batch with the same hash → that request's result
--   idempotency_conflict  key stored (or used earlier in the batch) with a different request hash
--   version_conflict      a stream's current version does not match its expectation
--   appended              accepted: versions assigned, events chained by ledger.append_events
-- Refused requests append nothing. Accepted requests with a key store (key, hash, result) in the
-- same transaction. Arrays: requests (keys, hashes); stream appends in request order (request
-- index, stream, expected version, event count); events in stream-append order.

CREATE FUNCTION ledger.append_batch(
    p_keys text[], p_hashes bytea[],
    p_append_requests integer[], p_append_streams text[], p_append_expected bigint[], p_append_counts integer[],
    p_event_ids uuid[], p_types text[], p_schema_versions integer[], p_data text[], p_metadata text[],
    p_effective_us bigint[]
) RETURNS TABLE (
    request integer, outcome text, first_position bigint, last_position bigint,
    versions bigint[], conflict_stream text, conflict_version bigint, same_as integer, result text
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_requests    integer := coalesce(cardinality(p_keys), 0);
    v_appends     integer := coalesce(cardinality(p_append_streams), 0);
    -- local copies: plpgsql keeps local arrays expanded, so subscripting them is O(1)
    -- "" and an empty hash stand for "no idempotency key" (arrays of the client cannot hold NULLs)
    v_keys        text[] := ARRAY(SELECT nullif(k, '') FROM unnest(p_keys) WITH ORDINALITY AS u(k, o) ORDER BY o);
    v_hashes      bytea[] := p_hashes;
    v_areq        integer[] := p_append_requests;
    v_astream     text[] := p_append_streams;
    v_aexp        bigint[] := p_append_expected;
    v_acount      integer[] := p_append_counts;
    v_stored      jsonb;
    v_current     jsonb;
    v_seen        jsonb := '{}';
    v_outcome     text[] := '{}';
    v_detail_s    text[] := '{}';
    v_detail_v    bigint[] := '{}';
    v_same_as     integer[] := '{}';
    v_result      text[] := '{}';
    v_req_first   integer[] := '{}';   -- accepted: ordinal of first event among accepted events
    v_req_count   integer[] := '{}';
    v_req_vers    text[] := '{}';      -- accepted: versions as a text array literal (one per stream)
    v_acc_streams text[] := '{}';
    v_acc_vers    bigint[] := '{}';
    v_acc_events  integer[] := '{}';   -- indexes into the event arrays
    v_a           integer := 1;
    v_e           integer := 1;
    v_a_first     integer;
    v_e_first     integer;
    v_ok          boolean;
    v_cur         bigint;
    v_exp         bigint;
    v_versions    bigint[];
    v_first_pos   bigint;
    v_key         text;
    i             integer;
    a             integer;
    k             integer;
BEGIN
    IF v_requests = 0 THEN
        RAISE EXCEPTION 'append_batch: empty batch' USING ERRCODE = '22023';
    END IF;
    IF coalesce(cardinality(p_hashes), 0) <> v_requests OR coalesce(cardinality(p_append_requests), 0) <> v_appends
       OR coalesce(cardinality(p_append_expected), 0) <> v_appends OR coalesce(cardinality(p_append_counts), 0) <> v_appends THEN
        RAISE EXCEPTION 'append_batch: argument arrays differ in length' USING ERRCODE = '22023';
    END IF;

    PERFORM 1 FROM ledger.head h WHERE h.singleton FOR UPDATE;

    SELECT coalesce(jsonb_object_agg(ik.key, jsonb_build_object('h', encode(ik.request_hash, 'hex'), 'r', ik.result::text)), '{}')
    INTO v_stored FROM ledger.idempotency_keys ik WHERE ik.key = ANY(v_keys);

    SELECT coalesce(jsonb_object_agg(s.id, coalesce((SELECT max(e.stream_version) FROM ledger.events e WHERE e.stream_id = s.id), 0)), '{}')
    INTO v_current FROM (SELECT DISTINCT unnest(v_astream) AS id) s;

    FOR i IN 1..v_requests LOOP
        v_a_first := v_a;
        v_e_first := v_e;
        WHILE v_a <= v_appends AND v_areq[v_a] = i LOOP
            v_e := v_e + v_acount[v_a];
            v_a := v_a + 1;
        END LOOP;
        v_key := v_keys[i];
        v_outcome[i] := NULL;
        IF v_key IS NOT NULL THEN
            IF v_stored ? v_key THEN
                IF v_stored -> v_key ->> 'h' = encode(v_hashes[i], 'hex') THEN
                    v_outcome[i] := 'replayed';
                    v_result[i] := v_stored -> v_key ->> 'r';
                ELSE
                    v_outcome[i] := 'idempotency_conflict';
                END IF;
            ELSIF v_seen ? v_key THEN
                IF v_seen -> v_key ->> 'h' = encode(v_hashes[i], 'hex') THEN
                    v_outcome[i] := 'same_as';
                    v_same_as[i] := (v_seen -> v_key ->> 'i')::integer;
                ELSE
                    v_outcome[i] := 'idempotency_conflict';
                END IF;
            END IF;
        END IF;
        IF v_outcome[i] IS NOT NULL THEN
            CONTINUE;
        END IF;

        v_ok := true;
        FOR a IN v_a_first..(v_a - 1) LOOP
            v_cur := coalesce((v_current ->> v_astream[a])::bigint, 0);
            v_exp := v_aexp[a];
            IF NOT (v_exp = -1 OR v_exp = v_cur) THEN
                v_outcome[i] := 'version_conflict';
                v_detail_s[i] := v_astream[a];
                v_detail_v[i] := v_cur;
                v_ok := false;
                EXIT;
            END IF;
        END LOOP;
        IF NOT v_ok THEN
            CONTINUE;
        END IF;

        v_outcome[i] := 'appended';
        v_req_first[i] := coalesce(cardinality(v_acc_events), 0) + 1;
        v_versions := '{}';
        k := v_e_first;
        FOR a IN v_a_first..(v_a - 1) LOOP
            v_cur := coalesce((v_current ->> v_astream[a])::bigint, 0);
            FOR j IN 1..v_acount[a] LOOP
                v_cur := v_cur + 1;
                v_acc_streams := v_acc_streams || v_astream[a];
                v_acc_vers := v_acc_vers || v_cur;
                v_acc_events := v_acc_events || k;
                k := k + 1;
            END LOOP;
            v_current := jsonb_set(v_current, ARRAY[v_astream[a]], to_jsonb(v_cur));
            v_versions := v_versions || v_cur;
        END LOOP;
        v_req_count[i] := coalesce(cardinality(v_acc_events), 0) - v_req_first[i] + 1;
        v_req_vers[i] := v_versions::text;
        IF v_key IS NOT NULL THEN
            v_seen := v_seen || jsonb_build_object(v_key, jsonb_build_object('h', encode(v_hashes[i], 'hex'), 'i', i));
        END IF;
    END LOOP;

    IF coalesce(cardinality(v_acc_events), 0) > 0 THEN
        SELECT ae.first_position INTO v_first_pos
        FROM ledger.append_events(
            v_acc_streams, v_acc_vers,
            ARRAY(SELECT p_event_ids[x] FROM unnest(v_acc_events) WITH ORDINALITY u(x, o) ORDER BY o),
            ARRAY(SELECT p_types[x] FROM unnest(v_acc_events) WITH ORDINALITY u(x, o) ORDER BY o),
            ARRAY(SELECT p_schema_versions[x] FROM unnest(v_acc_events) WITH ORDINALITY u(x, o) ORDER BY o),
            ARRAY(SELECT p_data[x] FROM unnest(v_acc_events) WITH ORDINALITY u(x, o) ORDER BY o),
            ARRAY(SELECT p_metadata[x] FROM unnest(v_acc_events) WITH ORDINALITY u(x, o) ORDER BY o),
            ARRAY(SELECT p_effective_us[x] FROM unnest(v_acc_events) WITH ORDINALITY u(x, o) ORDER BY o)
        ) ae;
    END IF;

    -- The stored result has the shape of the writer's AppendResult: positions and stream versions.
    FOR i IN 1..v_requests LOOP
        IF v_outcome[i] = 'appended' THEN
            v_result[i] := jsonb_build_object(
                'first_position', v_first_pos + v_req_first[i] - 1,
                'last_position', v_first_pos + v_req_first[i] + v_req_count[i] - 2,
                'streams', (SELECT jsonb_agg(jsonb_build_object('stream_id', s.stream, 'version', s.version) ORDER BY s.o)
                            FROM unnest(
                                ARRAY(SELECT v_astream[x] FROM generate_series(1, v_appends) x WHERE v_areq[x] = i ORDER BY x),
                                v_req_vers[i]::bigint[]) WITH ORDINALITY AS s(stream, version, o))
            )::text;
            IF v_keys[i] IS NOT NULL THEN
                INSERT INTO ledger.idempotency_keys (key, request_hash, first_position, last_position, result, recorded_at)
                VALUES (v_keys[i], v_hashes[i], v_first_pos + v_req_first[i] - 1,
                        v_first_pos + v_req_first[i] + v_req_count[i] - 2, v_result[i]::jsonb, now());
            END IF;
        END IF;
    END LOOP;

    RETURN QUERY
    SELECT g.n, v_outcome[g.n],
           CASE WHEN v_outcome[g.n] = 'appended' THEN v_first_pos + v_req_first[g.n] - 1 END,
           CASE WHEN v_outcome[g.n] = 'appended' THEN v_first_pos + v_req_first[g.n] + v_req_count[g.n] - 2 END,
           CASE WHEN v_outcome[g.n] = 'appended' THEN v_req_vers[g.n]::bigint[] END,
           v_detail_s[g.n], v_detail_v[g.n], v_same_as[g.n], v_result[g.n]
    FROM generate_series(1, v_requests) AS g(n);
END
$$;

REVOKE ALL ON FUNCTION ledger.append_batch(text[], bytea[], integer[], text[], bigint[], integer[], uuid[], text[], integer[], text[], text[], bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.append_batch(text[], bytea[], integer[], text[], bigint[], integer[], uuid[], text[], integer[], text[], text[], bigint[]) TO ledger_app;
