#!/usr/bin/env bash
# End-to-end payments benchmark over HTTP on 127.0.0.1: a release ledgerd with its own durable
# embedded cluster, a catalog with ample stock, then wrk at 16 and 64 connections. Each wrk run is
# followed, in the same run and on the same cluster, by the two-commit SQL floor
# (bench/two-commit-payment.sql with pgbench, as many clients, as long), and the line ends with the
# ledger's share of that floor.
# Usage: bench/payments.sh [seconds per run] [runs per concurrency]
#   (needs wrk and pgbench: apt-get install -y wrk postgresql-contrib or postgresql-15)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
runs=${2:-3}
port=23457
data=$(mktemp -d /tmp/ledgerd-bench-payments.XXXXXX)
chmod 755 "$data"
# LEDGERD_BIN: a ledgerd binary to measure instead of building this checkout (e.g. a before/after pair).
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
export LEDGERD_DATA_DIR="$data/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00
"$bin" serve --host 127.0.0.1 --port $port > "$data/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
python3 bench/demo-stock.py "$data/stock.json"
"$bin" catalog import "$data/stock.json" > /dev/null
# The floor's scratch database, on the ledger's own cluster (trust auth on its socket; see EmbeddedPostgres).
pg=(-h "$data/d/run" -p 5432 -U postgres)
psql "${pg[@]}" -qc "CREATE DATABASE floor" postgres
psql "${pg[@]}" -qc "CREATE TABLE ev(id bigserial PRIMARY KEY, stream text, data jsonb, at timestamptz DEFAULT now())" floor
# CPU time (user + system, in clock ticks) of a process, and of every PostgreSQL process (the cluster's backends):
# sampled around each wrk run, divided by the payments it made — stable on a noisy machine where throughput is not.
. bench/lib.sh
postgres_ticks() { local t=0 p; for p in $(pgrep -x postgres); do t=$((t + $(ticks "$p"))); done; echo "$t"; }
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%FT%TZ)"
for clients in 16 64; do
  for run in $(seq 1 "$runs"); do
    printf "clients %-3s run %s (load %s): " "$clients" "$run" "$(cut -d' ' -f1 /proc/loadavg)"
    before_cpu=$(ticks "$pid"); before_pg=$(postgres_ticks)
    ledger=$(wrk -t2 -c"$clients" -d"${seconds}s" -s bench/payments.lua "http://127.0.0.1:$port" | tail -1)
    requests=$(echo "$ledger" | sed -n 's/.* of \([0-9]*\)$/\1/p')
    cpu=$(awk -v a="$before_cpu" -v b="$(ticks "$pid")" -v p="$before_pg" -v q="$(postgres_ticks)" -v n="$requests" -v hz="$(getconf CLK_TCK)" \
      'BEGIN {printf "CPU/payment ledgerd %.3f ms postgres %.3f ms", 1000 * (b - a) / hz / n, 1000 * (q - p) / hz / n}')
    ledger="$ledger  $cpu"
    floor=$(pgbench "${pg[@]}" -n -c "$clients" -j 2 -T "$seconds" -f bench/two-commit-payment.sql floor 2>/dev/null \
      | awk '/^tps =/ {printf "%.0f", $3}')
    echo "$ledger  floor/s $floor  share of floor $(awk -v l="${ledger#payments/s }" -v f="$floor" \
      'BEGIN {split(l, a, " "); printf "%.0f %%", 100 * a[1] / f}')"
  done
done
