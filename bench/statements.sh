#!/usr/bin/env bash
# SQL statements and commits per payment, for one or more ledgerd binaries: each on its own durable embedded
# cluster with pg_stat_statements loaded, the demo catalogue's 12 products with ample stock, wrk at 64 connections;
# the deltas of pg_stat_statements (calls, by statement) and pg_stat_database (xact_commit) over the run, divided
# by the payments made. The top statements per payment are listed.
# Usage: bench/statements.sh [seconds] [NAME=BINARY ...]   (default: this checkout's release build; a binary
#   with an sql/ directory beside it runs with those migrations; needs wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift $(( $# < 1 ? $# : 1 ))
if [ $# -eq 0 ]; then
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  set -- "this=.build/release/ledgerd"
fi
work=$(mktemp -d /tmp/ledgerd-bench-statements.XXXXXX)
chmod 755 "$work"
pid=
trap '[ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
. bench/lib.sh
python3 bench/demo-stock.py "$work/stock.json"
port=23470
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
  restart_with_pg_stat_statements "$dir/d"
  db=ledger  # the ledger's database (the supervised acquirer service has its own, "acquirer", on the same cluster)
  # A warm-up, then the measured run.
  wrk -t2 -c64 -d3s -s bench/payments.lua "http://127.0.0.1:$port" > /dev/null
  psql "${pg[@]}" -qc "SELECT pg_stat_statements_reset()" "$db" > /dev/null
  commits0=$(psql "${pg[@]}" -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'" postgres)
  line=$(wrk -t2 -c64 -d"${seconds}s" -s bench/payments.lua "http://127.0.0.1:$port" | tail -1)
  sleep 1  # statistics reach pg_stat_database within PGSTAT_MIN_INTERVAL
  commits1=$(psql "${pg[@]}" -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'" postgres)
  n=$(echo "$line" | sed -n 's/.* of \([0-9]*\)$/\1/p')
  calls=$(psql "${pg[@]}" -Atc "SELECT sum(calls) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db') AND query NOT LIKE '%pg_stat%'" "$db")
  echo "$name (load $(cut -d' ' -f1 /proc/loadavg)): $line"
  awk -v c="$calls" -v a="$commits0" -v b="$commits1" -v n="$n" 'BEGIN {printf "  per payment: %.2f statements, %.2f commits\n", c / n, (b - a) / n}'
  psql "${pg[@]}" -Atc "SELECT round(calls::numeric / $n, 2) || '  ' || left(regexp_replace(query, '\s+', ' ', 'g'), 110)
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db') AND query NOT LIKE '%pg_stat%'
    ORDER BY calls DESC LIMIT 8" "$db" | sed 's/^/    /'
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
  port=$((port + 1))
done
