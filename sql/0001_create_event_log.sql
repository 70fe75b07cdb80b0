-- 0001: the event log. Append-only, gapless, commit-ordered, hash-chained.
--
-- Canonical byte layout of an event (what `hash` covers), version 1. All integers big-endian,
-- "z(x)" is the UTF-8 bytes of x followed by one 0x00 byte (unambiguous: PostgreSQL text can never
-- contain a NUL character, and jsonb's text output escapes it as \u0000):
--
--   hash = SHA-256( prev_hash                      32 bytes (genesis: 32 zero bytes)
--                 ‖ 0x01                           layout version
--                 ‖ int8(position)
--                 ‖ z(stream_id)
--                 ‖ int8(stream_version)
--                 ‖ uuid(event_id)                 16 bytes, RFC 4122 order
--                 ‖ z(type)
--                 ‖ int4(schema_version)
--                 ‖ z(data::text)                  PostgreSQL's canonical jsonb text
--                 ‖ z(metadata::text)
--                 ‖ int8(effective_at µs since 1970-01-01T00:00:00Z)
--                 ‖ int8(recorded_at  µs since 1970-01-01T00:00:00Z) )
--
-- jsonb's text output is deterministic for a given value (keys sorted, fixed spacing), so the hash
-- is reproducible from the stored row with psql alone (ledger.verify_chain below) and independently
-- by `ledgerd audit verify`. Requires PostgreSQL >= 14 (exact numeric EXTRACT(EPOCH ...)).

CREATE SCHEMA IF NOT EXISTS ledger;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ledger_app') THEN
        CREATE ROLE ledger_app NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ledger_auditor') THEN
        CREATE ROLE ledger_auditor NOLOGIN;
    END IF;
END
$$;

-- The ledger head: one row, locked by every appending transaction. Positions and the chain are
-- assigned while this lock is held, so positions are gapless and in commit order.
CREATE TABLE ledger.head (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    position    bigint      NOT NULL CHECK (position >= 0),
    hash        bytea       NOT NULL CHECK (octet_length(hash) = 32),
    recorded_at timestamptz NOT NULL
);
INSERT INTO ledger.head (singleton, position, hash, recorded_at)
VALUES (true, 0, decode(repeat('00', 32), 'hex'), 'epoch');

CREATE TABLE ledger.events (
    position       bigint      PRIMARY KEY CHECK (position > 0),
    stream_id      text        NOT NULL CHECK (stream_id <> '' AND octet_length(stream_id) <= 200),
    stream_version bigint      NOT NULL CHECK (stream_version > 0),
    event_id       uuid        NOT NULL UNIQUE,
    type           text        NOT NULL CHECK (type <> '' AND octet_length(type) <= 200),
    schema_version integer     NOT NULL CHECK (schema_version > 0),
    data           jsonb       NOT NULL,
    metadata       jsonb       NOT NULL,
    effective_at   timestamptz NOT NULL,
    recorded_at    timestamptz NOT NULL,
    prev_hash      bytea       NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash           bytea       NOT NULL CHECK (octet_length(hash) = 32),
    CONSTRAINT events_stream_version_key UNIQUE (stream_id, stream_version)
);

-- Idempotency records: a command's key, the hash of its request and its result, written in the
-- same transaction as its events. Append-only like the log.
CREATE TABLE ledger.idempotency_keys (
    key            text        PRIMARY KEY CHECK (key <> '' AND octet_length(key) <= 255),
    request_hash   bytea       NOT NULL CHECK (octet_length(request_hash) = 32),
    first_position bigint      NOT NULL,
    last_position  bigint      NOT NULL,
    result         jsonb       NOT NULL,
    recorded_at    timestamptz NOT NULL
);

-- Immutability in the database, not only in Swift: statement-level triggers reject every
-- UPDATE, DELETE and TRUNCATE, whoever runs it (even the owner). Only a superuser who disables
-- the trigger can alter history, and the hash chain (and signed checkpoints) expose that.
CREATE FUNCTION ledger.reject_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger.% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'LDG01',
              HINT = 'Record a compensating event instead of changing history.';
END
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger.events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.reject_mutation();
CREATE TRIGGER idempotency_keys_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger.idempotency_keys
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.reject_mutation();

-- Microseconds since the Unix epoch, exactly (EXTRACT returns numeric since PostgreSQL 14).
-- STABLE, not IMMUTABLE, because EXTRACT on timestamptz is: a function declared less volatile than
-- its body is never inlined.
CREATE FUNCTION ledger.epoch_us(t timestamptz) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN (extract(epoch FROM t) * 1000000)::bigint;

-- The chain link of one event: SHA-256 over the previous hash and the canonical layout above.
-- Written as one expression that uses each argument once, so the planner inlines it (a non-inlined
-- SQL function call per event would dominate the cost of an append). STABLE like convert_to.
CREATE FUNCTION ledger.event_hash(
    p_prev_hash bytea, p_position bigint, p_stream_id text, p_stream_version bigint, p_event_id uuid,
    p_type text, p_schema_version integer, p_data jsonb, p_metadata jsonb,
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
    || convert_to(p_data::text, 'UTF8') || '\x00'::bytea
    || convert_to(p_metadata::text, 'UTF8') || '\x00'::bytea
    || int8send(ledger.epoch_us(p_effective_at))
    || int8send(ledger.epoch_us(p_recorded_at))
);

-- Appends a batch of already-checked events in one statement: takes the head lock, assigns
-- positions and chain links in array order, inserts, moves the head. Called by the group-commit
-- writer inside its transaction after it has checked stream versions under the same lock.
-- recorded_at is the ledger's clock, never earlier than the previous batch's (monotone in position).
CREATE FUNCTION ledger.append_events(
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
    v_prevs    bytea[] := '{}';
    v_hashes   bytea[] := '{}';
    v_datas    jsonb[] := '{}';
    v_metas    jsonb[] := '{}';
    r          record;
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

    FOR r IN
        SELECT u.stream_id, u.stream_version, u.event_id, u.type, u.schema_version,
               u.data::jsonb AS data, u.metadata::jsonb AS metadata,
               timestamptz 'epoch' + u.effective_us * interval '1 microsecond' AS effective_at
        FROM unnest(p_stream_ids, p_stream_versions, p_event_ids, p_types, p_schema_versions,
                    p_data, p_metadata, p_effective_us)
             AS u(stream_id, stream_version, event_id, type, schema_version, data, metadata, effective_us)
    LOOP
        v_pos := v_pos + 1;
        v_prevs := v_prevs || v_hash;
        v_hash := ledger.event_hash(v_hash, v_pos, r.stream_id, r.stream_version, r.event_id, r.type,
                                    r.schema_version, r.data, r.metadata, r.effective_at, v_rec);
        v_hashes := v_hashes || v_hash;
        v_datas := v_datas || r.data;
        v_metas := v_metas || r.metadata;
    END LOOP;

    INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version,
                               data, metadata, effective_at, recorded_at, prev_hash, hash)
    SELECT v_first + u.ord - 1, u.stream_id, u.stream_version, u.event_id, u.type, u.schema_version,
           u.data, u.metadata, timestamptz 'epoch' + u.effective_us * interval '1 microsecond', v_rec,
           u.prev_hash, u.hash
    FROM unnest(p_stream_ids, p_stream_versions, p_event_ids, p_types, p_schema_versions,
                v_datas, v_metas, p_effective_us, v_prevs, v_hashes) WITH ORDINALITY
         AS u(stream_id, stream_version, event_id, type, schema_version, data, metadata, effective_us,
              prev_hash, hash, ord);

    UPDATE ledger.head SET position = v_pos, hash = v_hash, recorded_at = v_rec WHERE singleton;
    -- Wakes async projectors (delivered at commit); they poll as a fallback.
    PERFORM pg_notify('ledger_events', v_pos::text);

    RETURN QUERY SELECT v_first, v_pos, v_rec, v_hash;
END
$$;

-- Verifies the chain over [p_from, p_to] (p_to defaults to the head) with nothing but SQL.
-- Reports the first position that does not verify: a missing position (deleted or truncated
-- event), a prev_hash that is not the previous event's hash, a hash that does not match the
-- event's contents, or a head that disagrees with the last event.
CREATE FUNCTION ledger.verify_chain(p_from bigint DEFAULT 1, p_to bigint DEFAULT NULL)
RETURNS TABLE (ok boolean, checked bigint, first_bad_position bigint, reason text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_from     bigint := greatest(coalesce(p_from, 1), 1);
    v_head_pos bigint;
    v_head_hash bytea;
    v_to       bigint;
    v_prev     bytea;
    v_expected bigint;
    v_checked  bigint := 0;
    v_hash     bytea;
    r          ledger.events%ROWTYPE;
BEGIN
    SELECT h.position, h.hash INTO v_head_pos, v_head_hash FROM ledger.head h WHERE h.singleton;
    v_to := least(coalesce(p_to, v_head_pos), v_head_pos);
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
    IF v_to = v_head_pos AND v_prev <> v_head_hash THEN
        RETURN QUERY SELECT false, v_checked, v_head_pos, 'ledger head does not match the last event'::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, v_checked, NULL::bigint, NULL::text;
END
$$;

-- Grants: the application may append and read; the auditor may only read and verify.
REVOKE ALL ON ALL TABLES IN SCHEMA ledger FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.append_events(text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[]) FROM PUBLIC;
GRANT USAGE ON SCHEMA ledger TO ledger_app, ledger_auditor;
GRANT SELECT, INSERT ON ledger.events, ledger.idempotency_keys TO ledger_app;
GRANT SELECT, UPDATE ON ledger.head TO ledger_app;
GRANT SELECT ON ledger.schema_migrations TO ledger_app, ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.append_events(text[], bigint[], uuid[], text[], integer[], text[], text[], bigint[]) TO ledger_app;
GRANT SELECT ON ledger.events, ledger.head, ledger.idempotency_keys TO ledger_auditor;
