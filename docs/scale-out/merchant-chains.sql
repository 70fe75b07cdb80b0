-- The ledger distributed by merchant (docs/scale-out.md), shaped for Citus and runnable on one node.
-- Not a migration: nothing of the running ledger uses schema scaleout. MerchantChainsTests loads this file into a
-- fresh database. With the citus extension installed, the DO block at the end distributes the tables.

CREATE SCHEMA scaleout;

-- Reference table: the merchant directory (copied to every worker under Citus).
CREATE TABLE scaleout.merchants (
    merchant_id text PRIMARY KEY CHECK (merchant_id <> ''),
    name        text NOT NULL
);

-- One head per merchant: the last position and hash of that merchant's chain. Its row lock serialises only that
-- merchant's appends.
CREATE TABLE scaleout.heads (
    merchant_id text   PRIMARY KEY,
    position    bigint NOT NULL CHECK (position >= 0),
    hash        bytea  NOT NULL CHECK (octet_length(hash) = 32)
);

-- One gapless, hash-chained sequence per merchant. Every unique constraint includes the distribution column.
CREATE TABLE scaleout.events (
    merchant_id    text        NOT NULL,
    position       bigint      NOT NULL CHECK (position > 0),
    stream_id      text        NOT NULL CHECK (stream_id <> ''),
    stream_version bigint      NOT NULL CHECK (stream_version > 0),
    type           text        NOT NULL CHECK (type <> ''),
    data           jsonb       NOT NULL,
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    prev_hash      bytea       NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash           bytea       NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (merchant_id, position),
    UNIQUE (merchant_id, stream_id, stream_version)
);

-- The link: sha256(prev_hash || the event's canonical bytes). (The ledger's own layout, ledger.event_hash, has more
-- fields; the simulation keeps the shape: per-merchant genesis, per-merchant predecessor.)
CREATE FUNCTION scaleout.event_hash(p_prev bytea, p_merchant text, p_position bigint, p_stream text, p_version bigint,
                                    p_type text, p_data jsonb)
RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT sha256(p_prev || convert_to(
        p_merchant || E'\n' || p_position || E'\n' || p_stream || E'\n' || p_version || E'\n' || p_type || E'\n' ||
        p_data::text, 'UTF8'))
$$;

-- Appends one event to `p_stream` of merchant `p_merchant`, expecting the stream at `p_expected` (0: new). Locks
-- only the merchant's head row: appends of different merchants never wait for each other. Returns the position.
CREATE FUNCTION scaleout.append(p_merchant text, p_stream text, p_expected bigint, p_type text, p_data jsonb)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_head  scaleout.heads%ROWTYPE;
    v_found bigint;
    v_pos   bigint;
BEGIN
    SELECT * INTO v_head FROM scaleout.heads WHERE merchant_id = p_merchant FOR UPDATE;
    IF NOT FOUND THEN
        -- First event of a known merchant: its genesis head (the merchant directory says it exists).
        PERFORM 1 FROM scaleout.merchants WHERE merchant_id = p_merchant;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown merchant %', p_merchant USING ERRCODE = '23503';
        END IF;
        INSERT INTO scaleout.heads VALUES (p_merchant, 0, decode(repeat('00', 32), 'hex')) ON CONFLICT DO NOTHING;
        SELECT * INTO v_head FROM scaleout.heads WHERE merchant_id = p_merchant FOR UPDATE;
    END IF;
    SELECT coalesce(max(stream_version), 0) INTO v_found
    FROM scaleout.events WHERE merchant_id = p_merchant AND stream_id = p_stream;
    IF v_found <> p_expected THEN
        RAISE EXCEPTION 'stream % of % is at version %, not %', p_stream, p_merchant, v_found, p_expected
            USING ERRCODE = '40001';
    END IF;
    v_pos := v_head.position + 1;
    INSERT INTO scaleout.events (merchant_id, position, stream_id, stream_version, type, data, prev_hash, hash)
    VALUES (p_merchant, v_pos, p_stream, p_expected + 1, p_type, p_data, v_head.hash,
            scaleout.event_hash(v_head.hash, p_merchant, v_pos, p_stream, p_expected + 1, p_type, p_data));
    UPDATE scaleout.heads
    SET position = v_pos,
        hash = scaleout.event_hash(v_head.hash, p_merchant, v_pos, p_stream, p_expected + 1, p_type, p_data)
    WHERE merchant_id = p_merchant;
    RETURN v_pos;
END
$$;

-- Recomputes every link of one merchant's chain: ok, how many events were checked, the first bad position.
CREATE FUNCTION scaleout.verify_chain(p_merchant text)
RETURNS TABLE (ok boolean, checked bigint, first_bad_position bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_prev     bytea := decode(repeat('00', 32), 'hex');
    v_expected bigint := 1;
    r          scaleout.events%ROWTYPE;
BEGIN
    checked := 0;
    FOR r IN SELECT * FROM scaleout.events WHERE merchant_id = p_merchant ORDER BY position LOOP
        IF r.position <> v_expected OR r.prev_hash <> v_prev
           OR r.hash <> scaleout.event_hash(v_prev, r.merchant_id, r.position, r.stream_id, r.stream_version, r.type, r.data)
        THEN
            ok := false; first_bad_position := r.position;
            RETURN NEXT;
            RETURN;
        END IF;
        v_prev := r.hash;
        v_expected := v_expected + 1;
        checked := checked + 1;
    END LOOP;
    IF EXISTS (SELECT 1 FROM scaleout.heads h WHERE h.merchant_id = p_merchant AND (h.position <> checked OR h.hash <> v_prev)) THEN
        ok := false; first_bad_position := checked;
        RETURN NEXT;
        RETURN;
    END IF;
    ok := true; first_bad_position := NULL;
    RETURN NEXT;
END
$$;

-- Under Citus: the merchant directory everywhere, heads and events sharded by merchant and co-located, so that an
-- append is a single-shard transaction. Without the extension, this does nothing.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM create_reference_table('scaleout.merchants');
        PERFORM create_distributed_table('scaleout.heads', 'merchant_id');
        PERFORM create_distributed_table('scaleout.events', 'merchant_id', colocate_with => 'scaleout.heads');
        PERFORM create_distributed_function('scaleout.append(text, text, bigint, text, jsonb)', 'p_merchant',
                                            colocate_with => 'scaleout.heads');
    END IF;
END
$$;
