#!/usr/bin/env bash
# Captures over HTTP on 127.0.0.1: a release ledgerd on its own durable embedded cluster, a catalog
# with ample stock, a few thousand authorized orders made through POST /payment, then wrk at 64
# connections sending POST /orders/{id}/capture {"amount": "0.01"} to random orders (partial
# captures: each order takes many, so the run never runs out of open holds).
# Usage: bench/captures.sh [seconds per run] [runs] [orders]   (needs wrk: apt-get install -y wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
runs=${2:-3}
orders=${3:-4000}
port=23458
data=$(mktemp -d /tmp/ledgerd-bench-captures.XXXXXX)
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
python3 - "$data/stock.json" <<'PY'
import json, sys
json.dump({"products": [{"name": "Clock", "description": "", "price": "50.00", "stock": 10_000_000}]}, open(sys.argv[1], "w"))
PY
"$bin" catalog import "$data/stock.json" > /dev/null
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$data/d/api-keys.json")
# Authorized orders: wrk posts payments until there are enough.
while [ "$(python3 bench/open_holds.py $port "$key")" -lt "$orders" ]; do
  wrk -t2 -c16 -d3s -s bench/payments.lua "http://127.0.0.1:$port" > /dev/null
done
made=$(python3 bench/open_holds.py $port "$key" "$data/orders.lua")
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%FT%TZ); $made authorized orders"
for run in $(seq 1 "$runs"); do
  printf "clients 64 run %s: " "$run"
  ORDERS="$data/orders.lua" API_KEY="$key" wrk -t2 -c64 -d"${seconds}s" -s bench/captures.lua "http://127.0.0.1:$port" | tail -1
done
