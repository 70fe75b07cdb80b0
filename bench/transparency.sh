#!/usr/bin/env bash
# The transparency log on a large ledger (issue 29's Measure table), with a release ledgerd on its embedded cluster:
#   1. a ledger of N events (default 10,000,000) without its tree: `serve` with LEDGERD_LOG_TREE=false migrates, then
#      the events go in by SQL (synthetic rows: the tree reads only their `hash`);
#   2. `serve` with the tree on: the time until /log/checkpoint signs the whole ledger is the time to build the tree of
#      an existing ledger (the daemon's own builder, transactions of 256 tiles);
#   3. inclusion and consistency proofs over HTTP (keep-alive, one connection, random positions and pairs): p50, p99.
# Usage: bench/transparency.sh [events] [requests] [data dir]; prints the load average next to each figure.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-10000000}
requests=${2:-2000}
data=$(realpath -m "${3:-./.ledgerd-bench-log}")
port=23461
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
mkdir -p "$data"
[ -f "$data/checkpoint.pem" ] || "$bin" audit keygen --out "$data/checkpoint.pem" >/dev/null
export LEDGERD_DATA_DIR="$data" LEDGERD_LOG_LEVEL=warning LEDGERD_SEED_DEMO_CATALOG=false LEDGERD_AUDITOR_KEYS=bench-auditor
export LEDGERD_CHECKPOINT_KEY="$data/checkpoint.pem" LEDGERD_LOG_ORIGIN=bench.ledgerd/log
unset LEDGERD_DATABASE_URL
psql_() { psql -X -q -h "$data/run" -U postgres -d ledger -v ON_ERROR_STOP=1 "$@"; }
serve() {
  "$bin" serve --host 127.0.0.1 --port $port >> "$data/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 480); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && return; sleep 0.25; done
  echo "ledgerd did not come up: see $data/serve.log" >&2; exit 1
}
stop() { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
trap 'stop' EXIT
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"

LEDGERD_LOG_TREE=false serve
head=$(psql_ -At -c 'SELECT position FROM ledger.head')
while [ "$head" -lt "$events" ]; do
  chunk=$(( events - head < 500000 ? events - head : 500000 ))
  psql_ -c "WITH h AS (SELECT position FROM ledger.head)
    INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version, data, metadata,
      effective_at, recorded_at, prev_hash, hash, data_text, metadata_text)
    SELECT h.position + g, 'bench-' || (h.position + g), 1, gen_random_uuid(), 'BenchRecorded', 1,
      '{\"n\": 1}', '{}', now(), now(), sha256(int8send(h.position + g - 1)), sha256(int8send(h.position + g)),
      '{\"n\": 1}', '{}'
    FROM h, generate_series(1, $chunk) AS g;
    UPDATE ledger.head SET position = e.position, hash = e.hash
      FROM (SELECT position, hash FROM ledger.events ORDER BY position DESC LIMIT 1) e;"
  head=$(psql_ -At -c 'SELECT position FROM ledger.head')
  echo "events: $head"
done
# Counted before the daemon stops: its embedded cluster stops with it.
tiles=$(psql_ -At -c 'SELECT count(*) FROM ledger.merkle_tiles')
stop
[ "$tiles" = 0 ] || echo "note: $tiles tiles were already built (the build below is not from scratch)"

started=$(date +%s.%N)
serve
until curl -sf -H "Authorization: Bearer bench-auditor" "http://127.0.0.1:$port/log/checkpoint" | sed -n 2p | grep -qx "$head"; do
  sleep 0.2
done
ended=$(date +%s.%N)
echo "tree of $head events built and signed in $(echo "$ended - $started" | bc) s (daemon start included); load $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$port" "$head" "$requests" <<'EOF'
import http.client, random, sys, time
port, size, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
random.seed(29)
conn = http.client.HTTPConnection("127.0.0.1", port)
headers = {"Authorization": "Bearer bench-auditor"}
def run(name, paths):
    times = []
    for path in paths:
        start = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        times.append((time.perf_counter() - start) * 1000)
        assert response.status == 200, (path, response.status)
    times.sort()
    load = open("/proc/loadavg").read().split()[:3]
    print(f"{name}: {len(times)} requests, p50 {times[len(times) // 2]:.2f} ms, p99 {times[len(times) * 99 // 100]:.2f} ms, "
          f"max {times[-1]:.2f} ms; load {' '.join(load)}")
for _ in range(3):
    run("inclusion proof (HTTP)", [f"/log/proof/inclusion?position={random.randint(1, size)}" for _ in range(n)])
    pairs = [sorted((random.randint(1, size), random.randint(1, size))) for _ in range(n)]
    run("consistency proof (HTTP)", [f"/log/proof/consistency?from={a}&to={b}" for a, b in pairs])
EOF
