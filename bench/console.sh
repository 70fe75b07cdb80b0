#!/usr/bin/env bash
# The console's page times on a ledger of a million events (issue 32: "no page takes longer than 200 ms on a
# 1,000,000-event ledger"), over HTTP on 127.0.0.1 against a release ledgerd on its own durable embedded cluster.
#
# The ledger is made as a shop makes it, through the API (the real writer, its inline read models, the acquirer
# service's journal): payments (4 events each) until two thirds of EVENTS, then partial captures of random open
# holds (2 events each) until three quarters, then payments again until EVENTS, then the day closed now (`POST /settlements/run {"close_now": true}`: one batch
# of every capture, submitted, cleared, reconciled) and the acquirer's report uploaded again with one line changed
# (one amount_mismatch break). With DATA set to an existing directory, that ledger is reused (no traffic).
#
# Then, signed in to the console as an operator (its session cookie), wrk at one connection for SECONDS each:
# Today, a random order's page, the batch's page (its figures and every report's reconciliation); and a few single
# timings of the searches (by PSP reference and by e-mail: scans, no index on the hot path). Prints p50/p90/p99,
# the daemon's CPU per page (utime + stime from /proc) and the load average.
#
# Usage: bench/console.sh [events, default 1000000] [seconds per page, default 20]   (needs wrk: apt-get install -y wrk)
# Environment: DATA (a data directory to make or reuse; default a new one under /tmp, removed after), LEDGERD_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
seconds=${2:-20}
port=23461
keep=1
if [ -z "${DATA:-}" ]; then DATA=$(mktemp -d /tmp/ledgerd-bench-console.XXXXXX); keep=0; fi
mkdir -p "$DATA" && chmod 755 "$DATA"
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
base="http://127.0.0.1:$port"
export LEDGERD_DATA_DIR="$DATA/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00
"$bin" serve --host 127.0.0.1 --port $port > "$DATA/serve.log" 2>&1 &
pid=$!
cleanup() { kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true; [ "$keep" = 1 ] || rm -rf "$DATA"; }
trap cleanup EXIT
for _ in $(seq 1 480); do curl -sf "$base/health" >/dev/null && break; sleep 0.25; done
position() { curl -sf "$base/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["database"]["last_position"])'; }
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$DATA/d/api-keys.json")
auth="Authorization: Bearer $key"
if [ ! -f "$DATA/made" ]; then
  python3 bench/demo-stock.py "$DATA/stock.json"
  "$bin" catalog import "$DATA/stock.json" > /dev/null
  made_started=$(date +%s)
  # Each round must add events (a refused payment appends none): a stalled round stops the script.
  grow() { local before; before=$(position); "$@" > /dev/null; [ "$(position)" -gt "$before" ] || { echo "no events added by: $*" >&2; exit 1; }; }
  while [ "$(position)" -lt $(( events * 2 / 3 )) ]; do grow wrk -t2 -c64 -d20s -s bench/payments.lua "$base"; done
  [ -f "$DATA/orders.lua" ] || python3 bench/open_holds.py $port "$key" "$DATA/orders.lua" > /dev/null
  while [ "$(position)" -lt $(( events * 3 / 4 )) ]; do
    ORDERS="$DATA/orders.lua" API_KEY="$key" grow wrk -t2 -c64 -d20s -s bench/captures.lua "$base"
  done
  # The rest in payments again (captures get slower as the acquirer's books grow: docs/performance.md).
  while [ "$(position)" -lt "$events" ]; do grow wrk -t2 -c64 -d20s -s bench/payments.lua "$base"; done
  echo "made $(position) events through the API in $(( $(date +%s) - made_started )) s"
  settle_started=$(date +%s)
  curl -sf -X POST -H "$auth" -H 'Content-Type: application/json' -d '{"close_now": true}' "$base/settlements/run" > "$DATA/run.json"
  batch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["batches"][0]["batch_id"])' "$DATA/run.json")
  echo "settled batch $batch in $(( $(date +%s) - settle_started )) s"
  # The acquirer's report once more, one settled line's gross a cent higher: one amount_mismatch break.
  curl -sf -H "$auth" "$base/settlements/$batch/report.csv" | python3 -c '
import csv, io, sys
rows = list(csv.reader(io.StringIO(sys.stdin.read())))
header, gross, kind = rows[0], rows[0].index("Gross Credit (GC)"), rows[0].index("Type")
for row in rows[1:]:
    if row[kind] == "Settled":
        units, cents = row[gross].split(".")
        total = int(units) * 100 + int(cents) + 1
        row[gross] = "%d.%02d" % (total // 100, total % 100)
        break
out = io.StringIO()
csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(rows)
sys.stdout.write(out.getvalue())' > "$DATA/altered.csv"
  curl -sf -X POST -H "$auth" -H 'Content-Type: text/csv' --data-binary @"$DATA/altered.csv" "$base/reconciliation/reports" > /dev/null
  echo "$batch" > "$DATA/made"
fi
batch=$(cat "$DATA/made")
[ -f "$DATA/orders.lua" ] || python3 bench/open_holds.py $port "$key" "$DATA/orders.lua" > /dev/null
# Sign in as a browser does: the form's token and cookie, then the key for the session cookie.
jar="$DATA/cookies.txt"
rm -f "$jar"
csrf=$(curl -sf -c "$jar" "$base/console/sign-in" | sed -n 's/.*name="csrf_token" value="\([^"]*\)".*/\1/p' | head -1)
curl -sf -b "$jar" -c "$jar" -o /dev/null --data-urlencode "csrf_token=$csrf" --data-urlencode "key=$key" "$base/console/sign-in"
session=$(awk '$6 == "ledgerd_console" { print $7 }' "$jar")
[ -n "$session" ] || { echo "console sign-in failed" >&2; exit 1; }
cookie="ledgerd_console=$session"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%FT%TZ); ledger head $(position); batch $batch"
cpu() { awk '{ print $14 + $15 }' /proc/$pid/stat; }
ticks=$(getconf CLK_TCK)
for page in today order batch; do
  before=$(cpu)
  out=$(COOKIE="$cookie" PAGE=$page ORDERS="$DATA/orders.lua" BATCH="$batch" wrk -t1 -c1 -d"${seconds}s" -s bench/console.lua "$base" | tail -1)
  after=$(cpu)
  requests=$(echo "$out" | sed -n 's/.* of \([0-9]*\)$/\1/p')
  echo "$out  daemon CPU $(python3 -c "print(f'{($after - $before) * 1000 / $ticks / max(1, $requests):.2f}')") ms/page  load $(cut -d' ' -f1-3 /proc/loadavg)"
done
# The searches, single timings (a scan each: no index on the payment path).
psp=$(curl -sf -H "$auth" "$base/orders/$(python3 -c 'import re,sys; print(re.findall(r"\"([^\"]+)\"", open(sys.argv[1]).read())[0])' "$DATA/orders.lua")" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["order"]["psp_reference"])')
for query in "$psp" "jane%40example.com" "nobody%40example.com"; do
  printf "search %-40s" "$query"
  curl -s -o /dev/null -b "$cookie" -H "Cookie: $cookie" -w "%{http_code} %{time_total} s\n" "$base/console/orders?q=$query"
done
