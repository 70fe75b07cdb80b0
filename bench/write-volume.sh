#!/usr/bin/env bash
# What a payment costs the database (issue 57): bytes of WAL and bytes on disk per payment, per table and per index,
# and the checkpoints the load requests — figures robust to a noisy machine, where throughput is not.
#
# For each binary: a ledgerd on its own durable embedded cluster with the embedded defaults, a catalogue of 240
# products, then WINDOWS back-to-back windows of payments (wrk, 64 connections, bench/products.lua over 240 products).
# Each window prints its payments, WAL bytes per payment (pg_current_wal_lsn), full-page images per payment and their
# share of the WAL records (pg_stat_wal), requested and timed checkpoints (pg_stat_bgwriter), and the ledger
# database's growth per payment (pg_database_size). The end prints each relation's bytes per payment
# (pg_total_relation_size for tables, pg_relation_size for indexes) and the settings in force.
# CHECKPOINT_EVERY=S issues a CHECKPOINT every S seconds during the windows, for every binary alike: the cadence of
# the checkpoints PostgreSQL's defaults requested at the full rate (one per ~15 s, issue 57), so that a slower machine
# or build shows what each checkpoint costs in full-page images — the part of the WAL the keys' locality decides.
# Usage: bench/write-volume.sh [seconds per window, 30] [windows, 4] [NAME=BINARY ...]
#   (default: this checkout's release build; a binary with an sql/ directory beside it runs with those migrations)
#   (needs wrk: apt-get install -y wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
windows=${2:-4}
shift $(( $# < 2 ? $# : 2 ))
if [ $# -eq 0 ]; then
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  set -- "this=.build/release/ledgerd"
fi
work=$(mktemp -d /tmp/ledgerd-bench-wal.XXXXXX)
chmod 755 "$work"
pid=
trap '[ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
python3 - "$work/catalog.json" <<'PY'
import json, sys
json.dump({"products": [{"name": f"Item {i}", "description": "", "price": "10.00", "stock": 10_000_000} for i in range(1, 241)]},
          open(sys.argv[1], "w"))
PY
port=23470
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg); ${seconds}s windows, $windows per binary"
for spec in "$@"; do
  name=${spec%%=*}; bin=${spec#*=}; dir="$work/$name"; mkdir -p "$dir"; chmod 755 "$dir"
  if [ -d "$(dirname "$bin")/sql" ]; then export LEDGERD_MIGRATIONS_DIR="$(cd "$(dirname "$bin")/sql" && pwd)"; else unset LEDGERD_MIGRATIONS_DIR; fi
  export LEDGERD_DATA_DIR="$dir/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00
  "$bin" serve --host 127.0.0.1 --port $port > "$dir/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 480); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
  "$bin" catalog import "$work/catalog.json" > /dev/null
  pg=(-h "$dir/d/run" -p 5432 -U postgres)
  sql() { psql "${pg[@]}" -XAtc "$1" "${2:-ledger}"; }
  echo "$name: max_wal_size $(sql 'SHOW max_wal_size' postgres), checkpoint_timeout $(sql 'SHOW checkpoint_timeout' postgres), wal_compression $(sql 'SHOW wal_compression' postgres), shared_buffers $(sql 'SHOW shared_buffers' postgres)"
  counters() {
    sql "SELECT (pg_current_wal_lsn() - '0/0')::bigint || ' ' || w.wal_fpi || ' ' || w.wal_records || ' ' || b.checkpoints_req || ' ' ||
           b.checkpoints_timed || ' ' || pg_database_size('ledger') || ' ' ||
           (SELECT count(*) FROM ledger.events WHERE type = 'AuthorizationHoldPlaced')
         FROM pg_stat_wal w, pg_stat_bgwriter b"
  }
  for window in $(seq 1 "$windows"); do
    before=$(counters)
    forcer=
    if [ -n "${CHECKPOINT_EVERY:-}" ]; then
      (while sleep "$CHECKPOINT_EVERY"; do sql "CHECKPOINT" postgres >/dev/null; done) &
      forcer=$!
    fi
    line=$(PRODUCTS=240 wrk -t2 -c64 -d"${seconds}s" -s bench/products.lua "http://127.0.0.1:$port" | tail -1)
    [ -z "$forcer" ] || { kill "$forcer"; wait "$forcer" 2>/dev/null || true; }
    after=$(counters)
    awk -v name="$name" -v w="$window" -v a="$before" -v b="$after" -v line="$line" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
      split(a, x, " "); split(b, y, " "); n = y[7] - x[7]; q = n > 0 ? n : 1
      printf "%s window %d (load %s): %s | payments %d  WAL %.1f KB/payment  FPI %.2f/payment (%.0f %% of WAL records)  checkpoints req %d timed %d  disk %.1f KB/payment\n",
        name, w, load, line, n, (y[1] - x[1]) / q / 1024, (y[2] - x[2]) / q, 100 * (y[2] - x[2]) / ((y[3] - x[3]) > 0 ? (y[3] - x[3]) : 1),
        y[4] - x[4], y[5] - x[5], (y[6] - x[6]) / q / 1024 }' | tee -a "$work/lines"
  done
  echo "$name: relations, bytes per payment over $(sql "SELECT count(*) FROM ledger.events WHERE type = 'AuthorizationHoldPlaced'") payments:"
  sql "SELECT c.relname || ' ' || c.relkind::text || ' ' ||
         CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END || ' ' ||
         round(CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END::numeric
           / greatest(1, (SELECT count(*) FROM ledger.events WHERE type = 'AuthorizationHoldPlaced')))
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'ledger' AND c.relkind IN ('r', 'i')
         AND CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END > 65536
       ORDER BY CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END DESC" |
    awk '{printf "  %-52s %s %9.1f MB %7d B/payment\n", $1, ($2 == "r" ? "table" : "index"), $3 / 1048576, $4}'
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
  port=$((port + 1))
done
echo "end: $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
