#!/usr/bin/env bash
# The stream read's plan on a benchmark ledger (e.g. the 10,000,000 events of `ledgerd bench asof`), in three forms,
# each under EXPLAIN (ANALYZE, BUFFERS): what sql/0020 chose and the two it was chosen against.
#   index   EventStore.readStreams as it is: `stream_id = s AND position <= bound`, with events_by_stream_position
#   before  the same statement without that index (dropped inside a transaction that is rolled back)
#   fence   without that index, the bound applied after the stream's lookup (OFFSET 0 keeps it out of the scan)
# for 500 hold streams unbounded (an expiry page), one order and its hold as of a position, and the longest product
# stream as of an early position. Prints the buffers touched, the rows returned and the time of each.
# Usage: bench/stream-reads.sh DATA_DIR    (a benchmark's data directory, never a real ledger's; its cluster is
#        started as the `postgres` user when it is not running, and left as it was found)
set -euo pipefail
data=$(cd "${1:?usage: bench/stream-reads.sh DATA_DIR}" && pwd)
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_owner() { if [ "$(id -u)" = 0 ]; then setpriv --reuid="$(stat -c %u "$data/pg")" --regid="$(stat -c %g "$data/pg")" --clear-groups "$@"; else "$@"; fi; }
started=
if ! as_owner "$bin/pg_ctl" -D "$data/pg" status >/dev/null 2>&1; then
  as_owner "$bin/pg_ctl" -D "$data/pg" -l "$data/pg/server.log" -w -t 120 start >/dev/null
  started=1
fi
trap '[ -z "$started" ] || as_owner "$bin/pg_ctl" -D "$data/pg" -m fast -w stop >/dev/null' EXIT
psql=(psql -X -q -h "$data/run" -p 5432 -U postgres -d ledger -v ON_ERROR_STOP=1)
echo "ledger: $("${psql[@]}" -Atc "SELECT position FROM ledger.head") events; load $(cut -d' ' -f1-3 /proc/loadavg)"

"${psql[@]}" <<'SQL'
SELECT position AS head FROM ledger.head \gset
SELECT array_agg(stream_id) AS holds FROM (
    SELECT DISTINCT stream_id FROM ledger.events WHERE position > :head - 20000 AND stream_id LIKE 'hold-%' LIMIT 500) s \gset
SELECT 'order-' || (data ->> 'order_id') AS order_stream, 'hold-' || (data ->> 'order_id') AS hold_stream, position AS opened
FROM ledger.events WHERE type = 'OrderOpened' AND position > :head / 2 ORDER BY position LIMIT 1 \gset
SELECT stream_id AS product, count(*) AS product_events FROM ledger.events
WHERE stream_id LIKE 'product-%' AND position > :head - 100000 GROUP BY 1 ORDER BY 2 DESC LIMIT 1 \gset
SELECT :head / 100 AS early \gset

CREATE TEMP TABLE results (form text, read text, buffers bigint, rows bigint, ms numeric);
CREATE FUNCTION pg_temp.cost(p_form text, p_read text, p_sql text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ' || p_sql INTO plan;
    INSERT INTO results VALUES (p_form, p_read,
        (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::bigint + (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::bigint,
        (plan -> 0 -> 'Plan' ->> 'Actual Rows')::bigint, round((plan -> 0 ->> 'Execution Time')::numeric, 1));
END $$;

\set statement 'SELECT e.position FROM unnest(%L::text[]) AS wanted(stream) CROSS JOIN LATERAL (SELECT * FROM ledger.events e WHERE e.stream_id = wanted.stream AND e.position <= %s OFFSET 0) e ORDER BY position'
\set fence 'SELECT e.position FROM unnest(%L::text[]) AS wanted(stream) CROSS JOIN LATERAL (SELECT * FROM ledger.events e WHERE e.stream_id = wanted.stream OFFSET 0) e WHERE e.position <= %s ORDER BY position'

-- Twice each, the first warming the cache; the second run's figures are kept.
SELECT pg_temp.cost(f.form, r.read, format(CASE f.form WHEN 'fence' THEN :'fence' ELSE :'statement' END, r.streams, r.bound))
FROM (VALUES ('500 hold streams, unbounded', :'holds'::text[], 9223372036854775807),
             ('an order and its hold as of its opening', ARRAY[:'order_stream', :'hold_stream'], :opened),
             ('the longest product stream as of position ' || :early, ARRAY[:'product'], :early)) r(read, streams, bound),
     (VALUES ('index'), ('index')) f(form);
BEGIN;
DROP INDEX ledger.events_by_stream_position;
SELECT pg_temp.cost(f.form, r.read, format(CASE f.form WHEN 'fence' THEN :'fence' ELSE :'statement' END, r.streams, r.bound))
FROM (VALUES ('500 hold streams, unbounded', :'holds'::text[], 9223372036854775807),
             ('an order and its hold as of its opening', ARRAY[:'order_stream', :'hold_stream'], :opened),
             ('the longest product stream as of position ' || :early, ARRAY[:'product'], :early)) r(read, streams, bound),
     (VALUES ('before'), ('before'), ('fence'), ('fence')) f(form);
\pset footer off
SELECT DISTINCT ON (read, form) read, form, buffers, rows, ms FROM (SELECT *, row_number() OVER () AS n FROM results) r
ORDER BY read, form, n DESC;
ROLLBACK;
SELECT pg_size_pretty(pg_relation_size('ledger.events_by_stream_position')) AS "events_by_stream_position",
       pg_size_pretty(pg_relation_size('ledger.events_stream_version_key')) AS "events_stream_version_key",
       pg_size_pretty(pg_relation_size('ledger.events')) AS "events (heap)";
SQL
