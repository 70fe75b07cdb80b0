#!/usr/bin/env bash
# Hot products: payments over 1, 12 and 240 products at 64 connections, interleaved by round, for one or more
# ledgerd binaries, each on its own durable embedded cluster with a catalogue of 240 products ("Item 1" … "Item 240",
# ample stock). Each wrk run prints its throughput, latency and CPU per payment (ledgerd and PostgreSQL, from
# /proc); the end prints, per binary, the medians by product count and the ratio of 1 product to 240.
# A flash sale on one item is the moment a storefront needs its ledger most: the ratio is the figure.
# Usage: bench/products.sh [seconds per run] [rounds] [NAME=BINARY ...]   (default: this checkout's release build; a binary
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
work=$(mktemp -d /tmp/ledgerd-bench-products.XXXXXX)
chmod 755 "$work"
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
python3 - "$work/catalog.json" <<'PY'
import json, sys
json.dump({"products": [{"name": f"Item {i}", "description": "", "price": "10.00", "stock": 10_000_000} for i in range(1, 241)]},
          open(sys.argv[1], "w"))
PY
names=(); bins=(); ports=(); dirs=()
port=23460
for spec in "$@"; do
  name=${spec%%=*}; bin=${spec#*=}; dir="$work/$name"; mkdir -p "$dir"; chmod 755 "$dir"
  # A binary with an sql/ directory beside it (another checkout's build) runs with its own migrations.
  if [ -d "$(dirname "$bin")/sql" ]; then export LEDGERD_MIGRATIONS_DIR="$(cd "$(dirname "$bin")/sql" && pwd)"; else unset LEDGERD_MIGRATIONS_DIR; fi
  LEDGERD_DATA_DIR="$dir/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00 \
    "$bin" serve --host 127.0.0.1 --port $port > "$dir/serve.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
  LEDGERD_DATA_DIR="$dir/d" "$bin" catalog import "$work/catalog.json" > /dev/null
  names+=("$name"); bins+=("$bin"); ports+=("$port"); dirs+=("$dir"); port=$((port + 1))
done
. bench/lib.sh
# The PostgreSQL processes of one binary's cluster: the postmaster (its data directory's pid file) and its children.
postgres_ticks() { cluster_ticks "$(head -1 "$1/d/pg/postmaster.pid")"; }
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); ${seconds}s per run, 64 connections"
for round in $(seq 1 "$rounds"); do
  for i in "${!names[@]}"; do
    for products in 1 12 240; do
      pid=${pids[$i]}; before=$(ticks "$pid"); before_pg=$(postgres_ticks "${dirs[$i]}")
      line=$(PRODUCTS=$products wrk -t2 -c64 -d"${seconds}s" -s bench/products.lua "http://127.0.0.1:${ports[$i]}" | tail -1)
      n=$(echo "$line" | sed -n 's/.* of \([0-9]*\)$/\1/p')
      cpu=$(awk -v a="$before" -v b="$(ticks "$pid")" -v p="$before_pg" -v q="$(postgres_ticks "${dirs[$i]}")" -v n="$n" \
        -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "CPU/payment ledgerd %.3f ms postgres %.3f ms", 1000 * (b - a) / hz / n, 1000 * (q - p) / hz / n}')
      echo "round $round ${names[$i]} products $products (load $(cut -d' ' -f1 /proc/loadavg)): $line  $cpu" | tee -a "$work/lines"
    done
  done
done
echo "medians of $rounds rounds (payments/s):"
for name in "${names[@]}"; do
  for products in 1 12 240; do
    m=$(grep " $name products $products " "$work/lines" | sed 's/.*payments\/s \([0-9]*\).*/\1/' | sort -n \
      | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2)}')
    eval "m_$products=$m"
  done
  echo "$name: 1 product $m_1  12 products $m_12  240 products $m_240  ratio 1/240 $(awk -v a="$m_1" -v b="$m_240" 'BEGIN {printf "%.0f %%", 100 * a / b}')"
done
