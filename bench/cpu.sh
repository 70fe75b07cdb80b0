#!/usr/bin/env bash
# CPU per operation, by process kind, and the database's work per operation — the figure every hot-path change
# reports before and after (issue 28). CPU seconds come from /proc accounting, stable on a noisy machine where
# throughput is not.
#
# For each binary: a release ledgerd on its own durable embedded cluster with pg_stat_statements loaded, a catalogue
# with ample stock, then for each load (payments: POST /payment at 64 connections over the 12 demo products;
# captures: POST /orders/{id}/capture of 0.01 at 64 connections on a few thousand authorized orders; mixed: a day's
# mix of six payments, three captures and one order read in every ten requests, bench/mixed.lua), several rounds of
# a fixed length. Each round prints, per operation:
#   - CPU ms of the daemon (`ledgerd serve`), its supervised acquirer (`ledgerd acquirer serve`), the PostgreSQL
#     cluster (postmaster and backends) and the load generator (wrk, from its rusage);
#   - SQL statements (pg_stat_statements calls), commits (pg_stat_database xact_commit), rows inserted
#     (tup_inserted) and rows read (tup_returned + tup_fetched) in the ledger's database;
# and the end prints the medians of the rounds, with the load average at the time.
# Usage: bench/cpu.sh [seconds per round] [rounds] [NAME=BINARY ...]   (default: this checkout's release build; a binary
#   with an sql/ directory beside it runs with those migrations)
#   (needs wrk: apt-get install -y wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
if [ $# -eq 0 ]; then
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  set -- "this=.build/release/ledgerd"
fi
work=$(mktemp -d /tmp/ledgerd-bench-cpu.XXXXXX)
chmod 755 "$work"
pid=
trap '[ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
python3 bench/demo-stock.py "$work/stock.json"
hz=$(getconf CLK_TCK)
. bench/lib.sh
# The cluster's processes: the postmaster (its data directory's pid file) and its children.
postgres_ticks() { cluster_ticks "$(head -1 "$1/pg/postmaster.pid")"; }
# The supervised acquirer service: the daemon's child running `acquirer serve`.
acquirer_ticks() {
  local t=0 p
  for p in $(pgrep -P "$1"); do grep -q "acquirer" "/proc/$p/cmdline" 2>/dev/null && t=$((t + $(ticks "$p"))); done
  echo "$t"
}
# Runs wrk (arguments as given) and prints its last line, then its CPU seconds (user + system) on a second line.
wrk_with_cpu() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
out = subprocess.run(["wrk", *sys.argv[1:]], capture_output=True, text=True, check=True).stdout.strip().splitlines()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out[-1])
print(f"{usage.ru_utime + usage.ru_stime:.3f}")
PY
}
port=23480
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); ${seconds}s per round, $rounds rounds, 64 connections"
for spec in "$@"; do
  name=${spec%%=*}; bin=${spec#*=}; dir="$work/$name"; mkdir -p "$dir"; chmod 755 "$dir"
  # A binary with an sql/ directory beside it (another checkout's build) runs with its own migrations.
  if [ -d "$(dirname "$bin")/sql" ]; then export LEDGERD_MIGRATIONS_DIR="$(cd "$(dirname "$bin")/sql" && pwd)"; else unset LEDGERD_MIGRATIONS_DIR; fi
  export LEDGERD_DATA_DIR="$dir/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00
  start() {
    "$bin" serve --host 127.0.0.1 --port $port > "$dir/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
  }
  pg=(-h "$dir/d/run" -p 5432 -U postgres)
  start
  "$bin" catalog import "$work/stock.json" > /dev/null
  psql "${pg[@]}" -qc "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" postgres
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
  su postgres -s /bin/sh -c "pg_ctl=\$(ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1); \$pg_ctl -D '$dir/d/pg' -m fast -w stop" >/dev/null 2>&1 || true
  start
  db=ledger  # the ledger's database (the supervised acquirer service has its own, "acquirer", on the same cluster)
  psql "${pg[@]}" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" "$db"
  key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$dir/d/api-keys.json")
  database() {
    psql "${pg[@]}" -Atc "SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db') AND query NOT LIKE '%pg_stat%')
      || ' ' || xact_commit || ' ' || tup_inserted || ' ' || (tup_returned + tup_fetched)
      FROM pg_stat_database WHERE datname = '$db'" "$db"
  }
  # A warm-up (and the authorized orders the captures need), then the measured rounds.
  wrk -t2 -c64 -d3s -s bench/payments.lua "http://127.0.0.1:$port" > /dev/null
  while [ "$(python3 bench/open_holds.py $port "$key")" -lt 4000 ]; do
    wrk -t2 -c16 -d3s -s bench/payments.lua "http://127.0.0.1:$port" > /dev/null
  done
  python3 bench/open_holds.py $port "$key" "$dir/orders.lua" > /dev/null
  for round in $(seq 1 "$rounds"); do
    for load in payments captures mixed; do
      sleep 1  # the previous round's statistics reach pg_stat_database (PGSTAT_MIN_INTERVAL)
      d0=$(database); c0=$(ticks "$pid"); a0=$(acquirer_ticks "$pid"); p0=$(postgres_ticks "$dir/d")
      if [ "$load" = payments ]; then
        out=$(wrk_with_cpu -t2 -c64 -d"${seconds}s" -s bench/payments.lua "http://127.0.0.1:$port")
      else
        out=$(ORDERS="$dir/orders.lua" API_KEY="$key" wrk_with_cpu -t2 -c64 -d"${seconds}s" -s "bench/$load.lua" "http://127.0.0.1:$port")
      fi
      c1=$(ticks "$pid"); a1=$(acquirer_ticks "$pid"); p1=$(postgres_ticks "$dir/d")
      sleep 1
      d1=$(database)
      line=$(echo "$out" | head -1); wrk_cpu=$(echo "$out" | tail -1)
      n=$(echo "$line" | sed -n 's/.* of \([0-9]*\)$/\1/p')
      figures=$(awk -v n="$n" -v hz="$hz" -v c="$((c1 - c0))" -v a="$((a1 - a0))" -v p="$((p1 - p0))" -v w="$wrk_cpu" \
        -v d0="$d0" -v d1="$d1" 'BEGIN {
          split(d0, x, " "); split(d1, y, " ")
          printf "cpu_ms daemon %.3f acquirer %.3f postgres %.3f wrk %.3f  sql statements %.2f commits %.2f inserted %.2f read %.2f",
            1000 * c / hz / n, 1000 * a / hz / n, 1000 * p / hz / n, 1000 * w / n,
            (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n, (y[4] - x[4]) / n }')
      echo "round $round $name $load (load $(cut -d' ' -f1 /proc/loadavg)): $line" | tee -a "$work/lines"
      echo "round $round $name $load per op: $figures" | tee -a "$work/lines"
    done
  done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
  port=$((port + 1))
done
echo "medians of $rounds rounds, per operation:"
for spec in "$@"; do
  name=${spec%%=*}
  for load in payments captures mixed; do
    grep " $name $load per op: " "$work/lines" | sed 's/.*per op: //' | python3 -c '
import sys, statistics
rows = [line.split() for line in sys.stdin if line.strip()]
numeric = [i for i, field in enumerate(rows[0]) if field.replace(".", "", 1).isdigit()]
print(f"  {sys.argv[1]}: cpu ms " + "  ".join(
    ("sql " if rows[0][i - 1] == "statements" else "") + f"{rows[0][i - 1]} {statistics.median(float(r[i]) for r in rows):.3f}"
    for i in numeric))
' "$name $load"
  done
done
