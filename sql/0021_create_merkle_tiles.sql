-- 0021: the transparency log's Merkle tree over the event log, stored as C2SP tlog-tiles.
--
-- The tree is RFC 9162's (§2.1): leaf i (0-based) is the event at position i + 1, its data that event's 32-byte
-- chain `hash`, so the leaf hash is sha256('\x00' || hash); an interior node is sha256('\x01' || left || right).
-- It is stored as c2sp.org/tlog-tiles stores it: the tile at `level` L and `tile_index` N holds the 256 hashes of the
-- perfect subtrees of height 8·L numbered N·256 … N·256 + 255, concatenated (8,192 bytes); at level 0 those are
-- leaf hashes, at level L > 0 each is the `root` of a full tile of level L − 1. Only full tiles are stored; a
-- partial tile (the right edge, fewer than 256 hashes) is computed when asked, from at most 255 events or 255
-- stored roots (ledger.merkle_tile). Every proof is then a few tile reads: nothing recomputes the tree.
--
-- Protected like the log: rows are only ever inserted, and only by ledger.extend_merkle_tree, which runs as the
-- table's owner (SECURITY DEFINER) and derives every hash from ledger.events itself. The application role may
-- call it and read the tiles, never write them, so the daemon cannot forge a node; a superuser who edits a tile
-- is found out by the signed checkpoints, and by ledger.verify_merkle_tree(), which recomputes every stored tile
-- from the events (an auditor can run it in psql).
--
-- Built incrementally and resumably: each call extends the tree by at most p_max_tiles full level-0 tiles in
-- the caller's transaction, inserting a parent tile in the same transaction as the tile that completes it, so
-- a kill -9 at any point leaves whole tiles and the next call goes on from the first missing one. The daemon
-- calls it in a loop (MerkleTreeBuilder): first to build the tree of an existing ledger, then after appends.
CREATE TABLE ledger.merkle_tiles (
    level  smallint NOT NULL CHECK (level BETWEEN 0 AND 7),
    tile_index bigint NOT NULL CHECK (tile_index >= 0),
    hashes bytea    NOT NULL CHECK (octet_length(hashes) = 8192),
    root   bytea    NOT NULL CHECK (octet_length(root) = 32),
    PRIMARY KEY (level, tile_index)
);
ALTER TABLE ledger.merkle_tiles ALTER COLUMN hashes SET STORAGE EXTERNAL;

CREATE TRIGGER merkle_tiles_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger.merkle_tiles
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.reject_mutation();

-- The hash of the perfect subtree over a concatenation of 2^k hashes: k rounds of pairwise sha256('\x01' ‖ l ‖ r).
CREATE FUNCTION ledger.merkle_fold(p_hashes bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_row bytea := p_hashes;
    v_n   integer := octet_length(p_hashes) / 32;
BEGIN
    IF v_n = 0 OR octet_length(p_hashes) % 32 <> 0 OR (v_n & (v_n - 1)) <> 0 THEN
        RAISE EXCEPTION 'merkle_fold: % bytes is not a power of two of 32-byte hashes', octet_length(p_hashes)
            USING ERRCODE = '22023';
    END IF;
    WHILE v_n > 1 LOOP
        SELECT string_agg(sha256('\x01'::bytea || substring(v_row FROM i * 64 + 1 FOR 64)), ''::bytea ORDER BY i)
          INTO v_row
          FROM generate_series(0, v_n / 2 - 1) AS i;
        v_n := v_n / 2;
    END LOOP;
    RETURN v_row;
END
$$;

-- Extends the stored tree by up to p_max_tiles full level-0 tiles (and every parent tile they complete);
-- returns the number of leaves the stored full level-0 tiles now cover (a multiple of 256).
CREATE FUNCTION ledger.extend_merkle_tree(p_max_tiles integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_next   bigint;
    v_head   bigint;
    v_done   integer := 0;
    v_hashes bytea;
    v_level  integer;
    v_index  bigint;
BEGIN
    -- One builder at a time (several daemons may share the database): the others return at once.
    IF NOT pg_try_advisory_xact_lock(hashtext('ledger.extend_merkle_tree')) THEN
        SELECT coalesce(max(t.tile_index) + 1, 0) * 256 INTO v_next FROM ledger.merkle_tiles t WHERE t.level = 0;
        RETURN v_next;
    END IF;
    SELECT coalesce(max(t.tile_index) + 1, 0) INTO v_next FROM ledger.merkle_tiles t WHERE t.level = 0;
    SELECT h.position INTO v_head FROM ledger.head h;
    WHILE v_done < p_max_tiles AND (v_next + 1) * 256 <= v_head LOOP
        SELECT string_agg(sha256('\x00'::bytea || e.hash), ''::bytea ORDER BY e.position)
          INTO v_hashes
          FROM ledger.events e
         WHERE e.position > v_next * 256 AND e.position <= (v_next + 1) * 256;
        IF octet_length(v_hashes) IS DISTINCT FROM 8192 THEN
            RAISE EXCEPTION 'extend_merkle_tree: positions % to % are not 256 events', v_next * 256 + 1, (v_next + 1) * 256
                USING ERRCODE = 'LDG02';
        END IF;
        INSERT INTO ledger.merkle_tiles (level, tile_index, hashes, root) VALUES (0, v_next, v_hashes, ledger.merkle_fold(v_hashes));
        -- A tile that is the 256th of its parent completes the parent (and perhaps the grandparent …).
        v_level := 0;
        v_index := v_next;
        WHILE v_index % 256 = 255 LOOP
            SELECT string_agg(t.root, ''::bytea ORDER BY t.tile_index)
              INTO v_hashes
              FROM ledger.merkle_tiles t
             WHERE t.level = v_level AND t.tile_index BETWEEN v_index - 255 AND v_index;
            v_level := v_level + 1;
            v_index := v_index / 256;
            INSERT INTO ledger.merkle_tiles (level, tile_index, hashes, root) VALUES (v_level, v_index, v_hashes, ledger.merkle_fold(v_hashes));
        END LOOP;
        v_next := v_next + 1;
        v_done := v_done + 1;
    END LOOP;
    RETURN v_next * 256;
END
$$;

-- The tile at (p_level, p_index) of width p_width (1 … 256) as tlog-tiles serves it: a stored full tile, or a
-- partial one computed from the events (level 0) or from the stored roots of the level below. NULL when the
-- stored tree does not reach it yet. Usable by auditors from psql: it reads only what they may read.
CREATE FUNCTION ledger.merkle_tile(p_level integer, p_index bigint, p_width integer) RETURNS bytea
LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_tile bytea;
BEGIN
    IF p_level < 0 OR p_level > 7 OR p_index < 0 OR p_width < 1 OR p_width > 256 THEN
        RAISE EXCEPTION 'merkle_tile: no tile %/%/.p/%', p_level, p_index, p_width USING ERRCODE = '22023';
    END IF;
    IF p_width = 256 THEN
        SELECT t.hashes INTO v_tile FROM ledger.merkle_tiles t WHERE t.level = p_level AND t.tile_index = p_index;
        RETURN v_tile;
    END IF;
    IF p_level = 0 THEN
        SELECT string_agg(sha256('\x00'::bytea || e.hash), ''::bytea ORDER BY e.position)
          INTO v_tile
          FROM ledger.events e
         WHERE e.position > p_index * 256 AND e.position <= p_index * 256 + p_width;
    ELSE
        SELECT string_agg(t.root, ''::bytea ORDER BY t.tile_index)
          INTO v_tile
          FROM ledger.merkle_tiles t
         WHERE t.level = p_level - 1 AND t.tile_index >= p_index * 256 AND t.tile_index < p_index * 256 + p_width;
    END IF;
    IF octet_length(v_tile) IS DISTINCT FROM p_width * 32 THEN
        RETURN NULL;
    END IF;
    RETURN v_tile;
END
$$;

-- The psql-only inclusion check (README): the root that an inclusion proof makes of the event at p_position in
-- a tree of p_size leaves, by RFC 9162 §2.1.3.2 with sha256() alone. Equal to a signed checkpoint's root
-- (decode(<root line>, 'base64')) exactly when the proof places that event in that tree.
CREATE FUNCTION ledger.merkle_root_from_inclusion(p_event_hash bytea, p_position bigint, p_size bigint, p_proof bytea[])
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_fn bigint := p_position - 1;
    v_sn bigint := p_size - 1;
    v_r  bytea := sha256('\x00'::bytea || p_event_hash);
    v_p  bytea;
BEGIN
    IF p_position < 1 OR p_position > p_size THEN
        RETURN NULL;
    END IF;
    FOREACH v_p IN ARRAY p_proof LOOP
        IF v_sn = 0 OR octet_length(v_p) <> 32 THEN
            RETURN NULL;
        END IF;
        IF v_fn % 2 = 1 OR v_fn = v_sn THEN
            v_r := sha256('\x01'::bytea || v_p || v_r);
            WHILE v_fn % 2 = 0 AND v_fn <> 0 LOOP
                v_fn := v_fn / 2;
                v_sn := v_sn / 2;
            END LOOP;
        ELSE
            v_r := sha256('\x01'::bytea || v_r || v_p);
        END IF;
        v_fn := v_fn / 2;
        v_sn := v_sn / 2;
    END LOOP;
    IF v_sn <> 0 THEN
        RETURN NULL;
    END IF;
    RETURN v_r;
END
$$;

-- Recomputes every stored tile from the events (level 0) or from the tiles below (their roots), and each tile's
-- root from its hashes, in order: ok, or the first tile that differs or is missing (a gap in the indices).
CREATE FUNCTION ledger.verify_merkle_tree(OUT ok boolean, OUT tiles_checked bigint, OUT first_bad_level integer, OUT first_bad_index bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r        record;
    v_level  integer := -1;
    v_expect bigint := 0;
    v_from   bytea;
BEGIN
    ok := true;
    tiles_checked := 0;
    FOR r IN SELECT t.level, t.tile_index, t.hashes, t.root FROM ledger.merkle_tiles t ORDER BY t.level, t.tile_index LOOP
        IF r.level <> v_level THEN
            v_level := r.level;
            v_expect := 0;
        END IF;
        IF r.level = 0 THEN
            SELECT string_agg(sha256('\x00'::bytea || e.hash), ''::bytea ORDER BY e.position)
              INTO v_from
              FROM ledger.events e
             WHERE e.position > r.tile_index * 256 AND e.position <= r.tile_index * 256 + 256;
        ELSE
            SELECT string_agg(c.root, ''::bytea ORDER BY c.tile_index)
              INTO v_from
              FROM ledger.merkle_tiles c
             WHERE c.level = r.level - 1 AND c.tile_index >= r.tile_index * 256 AND c.tile_index < r.tile_index * 256 + 256;
        END IF;
        IF r.tile_index <> v_expect OR r.hashes IS DISTINCT FROM v_from OR r.root IS DISTINCT FROM ledger.merkle_fold(r.hashes) THEN
            ok := false;
            first_bad_level := r.level;
            first_bad_index := least(r.tile_index, v_expect);
            RETURN;
        END IF;
        v_expect := v_expect + 1;
        tiles_checked := tiles_checked + 1;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION ledger.extend_merkle_tree(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.extend_merkle_tree(integer) TO ledger_app;
GRANT SELECT ON ledger.merkle_tiles TO ledger_app, ledger_auditor;
