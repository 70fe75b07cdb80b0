#!/usr/bin/env bash
# The auditor's reads over HTTP on 127.0.0.1: a release ledgerd serving the benchmark ledger that
# `ledgerd bench audit` built (run that first), then wrk on random orders at 1 and 16 connections:
# GET /orders/{id}/history, and GET /orders/{id}?as_of=<the head's position>.
# Usage: bench/audit.sh [seconds per run] [data dir]   (needs wrk: apt-get install -y wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
data=$(realpath "${2:-./.ledgerd-bench-audit}")
port=23459
# LEDGERD_BIN: a ledgerd binary to measure instead of building this checkout (e.g. a before/after pair).
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
[ -f "$data/orders.lua" ] || { echo "no $data/orders.lua: run $bin bench audit --data-dir $data first" >&2; exit 1; }
export LEDGERD_DATA_DIR="$data" LEDGERD_LOG_LEVEL=warning LEDGERD_SEED_DEMO_CATALOG=false
unset LEDGERD_DATABASE_URL LEDGERD_CHECKPOINT_KEY
"$bin" serve --host 127.0.0.1 --port $port > "$data/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
head=$(curl -sf "http://127.0.0.1:$port/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["database"]["last_position"])')
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["auditor_keys"][0])' "$data/api-keys.json")
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%FT%TZ); ledger head $head"
for mode in history asof; do
  for connections in 1 16; do
    printf "connections %2d " "$connections"
    ORDERS="$data/orders.lua" API_KEY="$key" MODE=$mode AS_OF=$head \
      wrk -t1 -c"$connections" -d"${seconds}s" -s bench/audit.lua "http://127.0.0.1:$port" | tail -1
  done
done
