#!/usr/bin/env bash
# Feeds benchmark (issue 16): commit-to-delivery lag of one durable subscription and one webhook endpoint
# while bench/payments.lua drives POST /payment, then how fast one SSE consumer catches up from position 1.
# A release ledgerd with its own durable embedded cluster on 127.0.0.1; a local webhook receiver (python3)
# that answers 200; a subscription consumer (python3) that long polls and acknowledges each page.
# Lag = delivery time − the event's recorded_at (the ledger's clock when the append took the head lock,
# just before its commit), on one machine's clock.
# Usage: bench/feeds.sh [seconds of load] [runs] [connections]   (needs wrk and python3)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
runs=${2:-3}
connections=${3:-16}
port=23467
hookport=23468
data=$(mktemp -d /tmp/ledgerd-bench-feeds.XXXXXX)
chmod 755 "$data"
# LEDGERD_BIN: a ledgerd binary to measure instead of building this checkout (e.g. a before/after pair).
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
export LEDGERD_DATA_DIR="$data/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00 LEDGERD_FEED_POLL_MS=1000
"$bin" serve --host 127.0.0.1 --port $port > "$data/serve.log" 2>&1 &
pid=$!
python3 - "$hookport" > "$data/receiver.log" 2>&1 <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
receiver=$!
trap 'kill -TERM $pid 2>/dev/null; kill $receiver 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$data/d/api-keys.json")
python3 bench/demo-stock.py "$data/stock.json"
"$bin" catalog import "$data/stock.json" > /dev/null
psql_() { psql -h "$data/d/run" -U postgres -d ledger -At -c "$1"; }
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$runs"); do
  curl -sf -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "{\"name\": \"bench$run\", \"from\": \"now\"}" "http://127.0.0.1:$port/subscriptions" > /dev/null
  hook=$(curl -sf -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "{\"url\": \"http://127.0.0.1:$hookport/hook\", \"secret\": \"bench-secret-0123456789\"}" "http://127.0.0.1:$port/webhooks" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  python3 - "$port" "$key" "bench$run" "$seconds" > "$data/sub$run.txt" <<'PY' &
import json, sys, time, urllib.request, datetime
port, key, name, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def req(method, path, body=None):
    r = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=body,
                               headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(r, timeout=120))
lags = []
end = time.time() + seconds + 5
while time.time() < end:
    page = req("GET", f"/subscriptions/{name}/events?limit=1000&wait=2")
    now = time.time()
    for e in page["events"]:
        at = datetime.datetime.strptime(e["recorded_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
        lags.append(now - at)
    if page["through"] > page["subscription"]["checkpoint"]:
        req("POST", f"/subscriptions/{name}/ack", json.dumps({"position": page["through"]}).encode())
lags.sort()
p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] * 1000 if lags else float("nan")
print(f"subscription events {len(lags)}  p50 {p(0.5):.1f} ms  p99 {p(0.99):.1f} ms")
PY
  consumer=$!
  printf "run %s: " "$run"
  wrk -t2 -c"$connections" -d"${seconds}s" -s bench/payments.lua "http://127.0.0.1:$port" | tail -1
  wait $consumer
  cat "$data/sub$run.txt"
  sleep 3
  psql_ "SELECT 'webhook deliveries ' || count(*) || '  p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY lag)::numeric, 1)
         || ' ms  p99 ' || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY lag)::numeric, 1) || ' ms'
         FROM (SELECT (ledger.epoch_us(d.attempted_at) + d.latency_us - ledger.epoch_us(e.recorded_at)) / 1000.0 AS lag
               FROM ledger.webhook_deliveries d JOIN ledger.events e ON e.position = d.position
               WHERE d.endpoint_id = '$hook' AND d.delivered) x"
done
head=$(psql_ "SELECT position FROM ledger.head")
echo "SSE catch-up from position 1 over $head events (3 runs):"
for run in 1 2 3; do
  start=$(date +%s.%N)
  "$bin" tail --url "http://127.0.0.1:$port" --api-key "$key" --after 0 --count "$head" > /dev/null
  end=$(date +%s.%N)
  python3 -c "import sys; s, e, n = map(float, sys.argv[1:4]); print(f'  run {int(float(sys.argv[4]))}: {n / (e - s):.0f} events/s ({e - s:.1f} s)')" "$start" "$end" "$head" "$run"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
