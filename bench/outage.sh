#!/usr/bin/env bash
# Database outage figures (issue 15): a release ledgerd on its durable embedded cluster; each run pays a few
# orders, stops PostgreSQL like a crash (pg_ctl stop -m immediate), times /health, POST /payment and a
# back-office read at once and again 3 s later, starts PostgreSQL again, times how long until a payment
# succeeds, and checks that every payment acknowledged before (and after) is in the ledger.
# Goals: /health 503 in <= 2 s, POST /payment 503 in <= 5 s, no 500, resume <= 5 s, lost 0.
# Usage: bench/outage.sh [runs]     (as root: the cluster runs as the postgres OS user)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
port=23461
data=$(mktemp -d /tmp/ledgerd-bench-outage.XXXXXX)
chmod 711 "$data"
swift build --ignore-lock -c release --product ledgerd >/dev/null
bin=.build/release/ledgerd
pgbin=${LEDGERD_PG_BINDIR:-$(dirname "$(ls /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -1)")}
export LEDGERD_DATA_DIR="$data/d" LEDGERD_LOG_LEVEL=warning
"$bin" serve --host 127.0.0.1 --port $port >"$data/serve.log" 2>&1 &
pid=$!
pgctl() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$pgbin/pg_ctl" -D "$data/d/pg" "$@" >/dev/null; }
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; pgctl stop -m immediate 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
base="http://127.0.0.1:$port"
# Stock enough for every run (the demo catalog's clocks run out).
echo '{"products": [{"name": "Clock", "description": "", "price": "50.00", "stock": 1000000}]}' >"$data/stock.json"
"$bin" catalog import "$data/stock.json" >/dev/null
op="Authorization: Bearer $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$data/d/api-keys.json")"
body='{"gateway": "stripe", "source": "tok_visa", "amount": 5900, "currency": "USD", "description": "Clock", "shipping_contact": "Jane Appleseed", "shipping_email": "jane@example.com", "shipping_street": "1 Infinite Loop", "shipping_city": "Cupertino", "shipping_state": "CA", "shipping_zip": "95014", "shipping_method_name": "Standard"}'
acked="$data/acknowledged"
: >"$acked"
pay() {  # prints "status seconds"; records an acknowledged order id
  local out status
  out=$(curl -s -m 30 -o "$data/reply" -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' -d "$body" "$base/payment")
  status=${out%% *}
  [ "$status" = 200 ] && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["order_id"])' "$data/reply" >>"$acked"
  echo "$out"
}
probe() { curl -s -m 30 -o /dev/null -w '%{http_code} %{time_total}' "$@"; }
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); $runs runs"
printf '%-4s %-6s | %-18s %-18s %-18s | %-18s %-18s | %-9s\n' run load "health (at once)" "payment (at once)" "read (at once)" "health (+3 s)" "payment (+3 s)" "resume s"
results="$data/results"
: >"$results"
fivehundreds=0
for run in $(seq 1 "$runs"); do
  for _ in 1 2 3 4 5; do pay >/dev/null; done
  load=$(cut -d' ' -f1 /proc/loadavg)
  pgctl stop -m immediate
  # The three at once, side by side: each one's own time to its answer.
  probe "$base/health" >"$data/h1" &
  j1=$!
  pay >"$data/p1" &
  j2=$!
  probe -H "$op" "$base/orders?limit=1" >"$data/r1" &
  wait $j1 $! $j2
  h1=$(cat "$data/h1"); p1=$(cat "$data/p1"); r1=$(cat "$data/r1")
  sleep 3
  h2=$(probe "$base/health"); p2=$(pay)
  pgctl start -l "$data/d/pg/server.log" -w -t 60
  back=$(date +%s%N)
  while :; do
    out=$(pay)
    case "${out%% *}" in
      200) break ;;
      503) ;;
      *) echo "run $run: a payment after the restart answered ${out%% *}: $(cat "$data/reply")"; exit 1 ;;
    esac
    sleep 0.05
  done
  resume=$(awk -v a="$back" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
  for v in "$h1" "$p1" "$r1" "$h2" "$p2"; do [ "${v%% *}" = 500 ] && fivehundreds=$((fivehundreds + 1)); done
  printf '%-4s %-6s | %-18s %-18s %-18s | %-18s %-18s | %-9s\n' "$run" "$load" "$h1" "$p1" "$r1" "$h2" "$p2" "$resume"
  echo "${h1#* } ${p1#* } ${h2#* } ${p2#* } $resume" >>"$results"
done
lost=0
while read -r id; do
  case "$(probe -H "$op" "$base/orders/$id")" in 200*) ;; *) lost=$((lost + 1)) ;; esac
done <"$acked"
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "medians: health 503 at once $(cut -d' ' -f1 "$results" | median) s, +3 s $(cut -d' ' -f3 "$results" | median) s;" \
  "payment 503 at once $(cut -d' ' -f2 "$results" | median) s, +3 s $(cut -d' ' -f4 "$results" | median) s;" \
  "resume $(cut -d' ' -f5 "$results" | median) s"
echo "500s: $fivehundreds; acknowledged payments: $(wc -l <"$acked"); lost: $lost"
[ "$lost" = 0 ] && [ "$fivehundreds" = 0 ]
