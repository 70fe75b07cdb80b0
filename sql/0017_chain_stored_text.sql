-- 0017: the chain covers stored bytes; the writer computes the links; both verifiers hash what is stored.
--
-- Until now the hash covered `data::text` and `metadata::text`, jsonb's canonical output, computed by
-- PL/pgSQL under the head lock (15-20 µs per event, most of it jsonb→text) and again by every verifier.
-- Now each event keeps the exact text that was hashed, next to the jsonb:
--
--   data_text, metadata_text   the JSON texts the writer sent, byte for byte; `data` and `metadata`
--                              are their jsonb (what queries use), i.e. data = data_text::jsonb.
--
-- The canonical layout is unchanged (layout version 1, 0001's header) except that its two JSON fields
-- are z(data_text) and z(metadata_text). For every event stored before this migration the texts are
-- set to data::text and metadata::text, exactly the bytes its hash already covers, so old links verify
-- unchanged and no event is rehashed.
--
-- Who computes what:
-- * the writer (LedgerWriter, Swift) computes positions, prev_hash, hash and recorded_at from the
--   head it believes, and ledger.append_batch checks that belief under the head lock: a batch built on
--   a head that moved (another daemon appended) appends nothing and answers the actual head (row
--   'head'); the writer then links the batch again with the head read under the lock.
-- * ledger.append_events (benchmarks, tests) still links in SQL, now over the texts it is given.
-- * ledger.verify_chain recomputes every link with PostgreSQL's sha256() over the stored bytes
--   (set-based: one scan, no jsonb→text). That the jsonb is the hashed text is a CHECK constraint
--   (below); when it has been dropped or invalidated, verify_chain compares every row's jsonb with its
--   text instead. Tampering with the text breaks the hash; tampering with the jsonb is refused by the
--   constraint, or, once it is gone, reported ('the stored jsonb is not the hashed text'). The reasons
--   are reported in this order for the first bad position: missing event, prev_hash, hash, jsonb;
--   then, as before (0011), a head that disagrees with its event and an event stored beyond the head.

ALTER TABLE ledger.events ADD COLUMN data_text text, ADD COLUMN metadata_text text;
-- Filling the new columns is the only UPDATE the log ever sees: the owner lifts the append-only
-- trigger for this one statement, inside this migration's transaction.
ALTER TABLE ledger.events DISABLE TRIGGER events_append_only;
UPDATE ledger.events SET data_text = data::text, metadata_text = metadata::text;
ALTER TABLE ledger.events ENABLE TRIGGER events_append_only;
ALTER TABLE ledger.events ALTER COLUMN data_text SET NOT NULL, ALTER COLUMN metadata_text SET NOT NULL;

-- The jsonb is the parse of the hashed text, for every row, enforced by PostgreSQL on every INSERT and
-- on every UPDATE (even a superuser's with the append-only trigger disabled). To make them differ one
-- has to drop (or invalidate) this constraint first, and that shows in the catalog:
-- ledger.events_jsonb_guarded() says whether it stands, validated and as written here. While it does,
-- the verifiers need not parse every row's text again; when it does not, they compare each row's jsonb
-- with its text and name the first that differs.
ALTER TABLE ledger.events ADD CONSTRAINT events_jsonb_is_hashed_text
    CHECK (data = data_text::jsonb AND metadata = metadata_text::jsonb);

CREATE FUNCTION ledger.events_jsonb_guarded() RETURNS boolean
LANGUAGE sql STABLE
RETURN EXISTS (
    SELECT 1 FROM pg_catalog.pg_constraint c
    WHERE c.conrelid = 'ledger.events'::regclass AND c.conname = 'events_jsonb_is_hashed_text'
      AND c.contype = 'c' AND c.convalidated
      AND pg_catalog.pg_get_constraintdef(c.oid)
          = 'CHECK (((data = (data_text)::jsonb) AND (metadata = (metadata_text)::jsonb)))'
);

-- One chain link over the stored texts; an inlinable SQL expression as before.
CREATE FUNCTION ledger.event_hash(
    p_prev_hash bytea, p_position bigint, p_stream_id text, p_stream_version bigint, p_event_id uuid,
    p_type text, p_schema_version integer, p_data_text text, p_metadata_text text,
    p_effective_at timestamptz, p_recorded_at timestamptz
) RETURNS bytea
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN sha256(
    p_prev_hash
    || '\x01'::bytea
    || int8send(p_position)
    || convert_to(p_stream_id, 'UTF8') || '\x00'::bytea
    || int8send(p_stream_version)
    || uuid_send(p_event_id)
    || convert_to(p_type, 'UTF8') || '\x00'::bytea
    || int4send(p_schema_version)
    || convert_to(p_data_text, 'UTF8') || '\x00'::bytea
    || convert_to(p_metadata_text, 'UTF8') || '\x00'::bytea
    || int8send(ledger.epoch_us(p_effective_at))
    || int8send(ledger.epoch_us(p_recorded_at))
);

-- Appends already-checked events under the head lock, linking them in SQL (not the writer's path:
-- benchmarks and tests that build ledgers directly). Set-based except the link itself.
CREATE OR REPLACE FUNCTION ledger.append_events(
    p_stream_ids text[], p_stream_versions bigint[], p_event_ids uuid[], p_types text[],
    p_schema_versions integer[], p_data text[], p_metadata text[], p_effective_us bigint[]
) RETURNS TABLE (first_position bigint, last_position bigint, recorded_at timestamptz, head_hash bytea)
LANGUAGE plpgsql AS $$
DECLARE
    v_n        integer := coalesce(cardinality(p_event_ids), 0);
    v_pos      bigint;
    v_first    bigint;
    v_hash     bytea;
    v_last_at  timestamptz;
    v_rec      timestamptz;
    v_prevs    bytea[] := array_fill(NULL::bytea, ARRAY[v_n]);
    v_hashes   bytea[] := array_fill(NULL::bytea, ARRAY[v_n]);
    i          integer;
BEGIN
    IF v_n = 0 THEN
        RAISE EXCEPTION 'append_events: empty batch' USING ERRCODE = '22023';
    END IF;
    IF coalesce(cardinality(p_stream_ids), 0) <> v_n OR coalesce(cardinality(p_stream_versions), 0) <> v_n
       OR coalesce(cardinality(p_types), 0) <> v_n OR coalesce(cardinality(p_schema_versions), 0) <> v_n
       OR coalesce(cardinality(p_data), 0) <> v_n OR coalesce(cardinality(p_metadata), 0) <> v_n
       OR coalesce(cardinality(p_effective_us), 0) <> v_n THEN
        RAISE EXCEPTION 'append_events: argument arrays differ in length' USING ERRCODE = '22023';
    END IF;

    SELECT h.position, h.hash, h.recorded_at INTO v_pos, v_hash, v_last_at
    FROM ledger.head h WHERE h.singleton FOR UPDATE;
    v_rec := greatest(clock_timestamp(), v_last_at);
    v_first := v_pos + 1;

    FOR i IN 1..v_n LOOP
        v_prevs[i] := v_hash;
        v_hash := ledger.event_hash(v_hash, v_first + i - 1, p_stream_ids[i], p_stream_versions[i], p_event_ids[i],
                                    p_types[i], p_schema_versions[i], p_data[i], p_metadata[i],
                                    timestamptz 'epoch' + p_effective_us[i] * interval '1 microsecond', v_rec);
        v_hashes[i] := v_hash;
    END LOOP;

    INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version,
                               data, metadata, data_text, metadata_text, effective_at, recorded_at, prev_hash, hash)
    SELECT v_first + u.ord - 1, u.stream_id, u.stream_version, u.event_id, u.type, u.schema_version,
           u.data::jsonb, u.metadata::jsonb, u.data, u.metadata,
           timestamptz 'epoch' + u.effective_us * interval '1 microsecond', v_rec, u.prev_hash, u.hash
    FROM unnest(p_stream_ids, p_stream_versions, p_event_ids, p_types, p_schema_versions,
                p_data, p_metadata, p_effective_us, v_prevs, v_hashes) WITH ORDINALITY
         AS u(stream_id, stream_version, event_id, type, schema_version, data, metadata, effective_us,
              prev_hash, hash, ord);

    UPDATE ledger.head SET position = v_first + v_n - 1, hash = v_hash, recorded_at = v_rec WHERE singleton;
    PERFORM pg_notify('ledger_events', (v_first + v_n - 1)::text);

    RETURN QUERY SELECT v_first, v_first + v_n - 1, v_rec, v_hash;
END
$$;

-- The writer's batch (0002's contract, plus the links). New arguments:
--   p_head_position, p_head_hash   the head the writer linked the batch onto
--   p_recorded_us                  the batch's recorded_at (µs since 1970), ≥ the head's
--   p_prev_hashes, p_hashes        each event's prev_hash and hash, in array order (positions are
--                                  p_head_position + 1, + 2, …)
-- After the version and key checks (unchanged), if the head is not the one believed (or the batch's
-- time is earlier than the head's) it appends nothing and answers one row ('head', NULL, position,
-- hash, recorded_at µs as text, NULL). Links that do not chain onto each other or onto the head are
-- a writer bug: the statement fails.
CREATE FUNCTION ledger.append_batch(
    p_check_streams text[], p_check_versions bigint[], p_probe_keys text[],
    p_keys text[], p_hashes bytea[], p_key_first integer[], p_key_last integer[], p_key_streams text[],
    p_stream_ids text[], p_stream_versions bigint[], p_event_ids uuid[], p_types text[],
    p_schema_versions integer[], p_data text[], p_metadata text[], p_effective_us bigint[],
    p_row_projections text[], p_row_keys text[], p_row_versions bigint[], p_row_json text[], p_row_ordinals integer[],
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

    RETURN QUERY SELECT 'appended'::text, NULL::text, NULL::bigint, NULL::bytea, NULL::text, v_first;
END
$$;

DROP FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[]);
REVOKE ALL ON FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], bigint, bytea, bigint, bytea[], bytea[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.append_batch(text[], bigint[], text[], text[], bytea[], integer[], integer[], text[], text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[], text[], text[], bigint[], text[], integer[], bigint, bytea, bigint, bytea[], bytea[]) TO ledger_app;

-- Verifies the chain over [p_from, p_to] with SQL alone, in one scan: the range, the rules and the
-- result as in 0011; the links are recomputed over the stored texts.
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
    v_stored    bytea;
    v_reached   bigint;
    v_bad       record;
    v_guarded   boolean := ledger.events_jsonb_guarded();
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

    -- The first row that breaks a rule, with the position to report (for a gap: the missing one).
    SELECT c.bad_position, c.reason INTO v_bad
    FROM (
        SELECT CASE WHEN l.position <> l.expected THEN l.expected ELSE l.position END AS bad_position,
               CASE
                   WHEN l.position <> l.expected THEN 'event is missing'
                   WHEN l.prev_hash <> l.prev THEN 'prev_hash is not the hash of the previous event'
                   WHEN ledger.event_hash(l.prev_hash, l.position, l.stream_id, l.stream_version, l.event_id, l.type,
                                          l.schema_version, l.data_text, l.metadata_text, l.effective_at,
                                          l.recorded_at) <> l.hash
                       THEN 'hash does not match the event''s contents'
                   WHEN NOT v_guarded AND (l.data_text::jsonb <> l.data OR l.metadata_text::jsonb <> l.metadata)
                       THEN 'the stored jsonb is not the hashed text'
               END AS reason
        FROM (
            SELECT e.*, coalesce(lag(e.position) OVER w, v_from - 1) + 1 AS expected,
                   coalesce(lag(e.hash) OVER w, v_prev) AS prev
            FROM ledger.events e
            WHERE e.position BETWEEN v_from AND v_to
            WINDOW w AS (ORDER BY e.position)
        ) l
    ) c
    WHERE c.reason IS NOT NULL
    ORDER BY c.bad_position
    LIMIT 1;
    IF FOUND THEN
        RETURN QUERY SELECT false, v_bad.bad_position - v_from, v_bad.bad_position, v_bad.reason;
        RETURN;
    END IF;

    -- No row broke a rule, so the rows run without a gap from v_from to the last one stored in range.
    SELECT coalesce(max(e.position), v_from - 1) INTO v_reached FROM ledger.events e WHERE e.position BETWEEN v_from AND v_to;
    IF v_reached < v_to THEN
        RETURN QUERY SELECT false, v_reached - v_from + 1, v_reached + 1, 'event is missing'::text;
        RETURN;
    END IF;
    IF v_head_pos BETWEEN v_from AND v_to THEN
        SELECT e.hash INTO v_stored FROM ledger.events e WHERE e.position = v_head_pos;
        IF v_stored IS DISTINCT FROM v_head_hash THEN
            RETURN QUERY SELECT false, v_to - v_from + 1, v_head_pos, 'ledger head does not match the last event'::text;
            RETURN;
        END IF;
    END IF;
    IF v_to > v_head_pos THEN
        RETURN QUERY SELECT false, v_to - v_from + 1, v_head_pos + 1,
            'event stored beyond the ledger head: the head was moved back'::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, v_to - v_from + 1, NULL::bigint, NULL::text;
END
$$;

-- The jsonb-based link is gone: a link is over the stored texts.
DROP FUNCTION ledger.event_hash(bytea, bigint, text, bigint, uuid, text, integer, jsonb, jsonb, timestamptz, timestamptz);
