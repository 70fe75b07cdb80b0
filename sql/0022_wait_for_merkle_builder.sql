-- 0022: a builder that must reach the head can wait for another builder.
--
-- ledger.extend_merkle_tree (0021) lets one builder at a time extend the tree: any other call returns at once
-- with the leaves the committed tiles cover. A checkpoint signed on demand extends the tree to the head first, and
-- when the daemon's background builder (or another daemon's) held the lock at that moment, the call returned below
-- the head and the checkpoint was signed for a smaller tree than the log (seen beside two CPU-burning processes).
-- With p_wait the call waits for the other builder's transaction, then extends from the tiles it committed; without
-- it (the default, the background builder) it still returns at once. The body is 0021's otherwise.
DROP FUNCTION ledger.extend_merkle_tree(integer);

CREATE FUNCTION ledger.extend_merkle_tree(p_max_tiles integer, p_wait boolean DEFAULT false) RETURNS bigint
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
    -- With p_wait, this one waits for the other's transaction and goes on from the tiles it committed (each
    -- statement below reads a fresh snapshot).
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(hashtext('ledger.extend_merkle_tree'));
    ELSIF NOT pg_try_advisory_xact_lock(hashtext('ledger.extend_merkle_tree')) THEN
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
REVOKE ALL ON FUNCTION ledger.extend_merkle_tree(integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.extend_merkle_tree(integer, boolean) TO ledger_app;
