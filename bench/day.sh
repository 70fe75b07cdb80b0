#!/usr/bin/env bash
# A compressed business day on one daemon (issue 57): the day, the night, the next morning, one `ledgerd serve`.
#
# A release ledgerd on its own durable embedded cluster (default settings), a catalogue of 240 products ("Item 1" …,
# three of them hot), holds that live HOLD_SECONDS (uncaptured orders expire during the day), two SSE readers of the
# live feed and a signed-webhook consumer. Then:
#   day      `ledgerd bench day-load`: an open-loop mix at RATE operations/s offered for DAY seconds — payments (1 in 50 on
#            the card the acquirer model disputes once settled), partial and final captures, refunds, voids, order
#            reads, the back office's order list (DayLoad.swift says the shares);
#   night    `ledgerd settle --today` (the day settled and reconciled), timed, while a quarter of the rate continues;
#   morning  the same mix for MORNING seconds on the same daemon.
# Every WINDOW seconds it prints one line of the load (offered ops/s, p50/p99 from each request's due time, per kind)
# and one of the machine: daemon and acquirer RSS, CPU ms per operation of the daemon, its acquirer and PostgreSQL
# (/proc), WAL bytes and requested/timed checkpoints in the window (pg_current_wal_lsn, pg_stat_checkpointer or
# pg_stat_bgwriter), bytes of WAL and of database growth per payment, the ledger database's size; and the daemon's
# bounded in-memory structures from /metrics (ledger_cache_entries), holds expired and the expiry passes' seconds.
# The end prints the largest tables and indexes.
# Usage: bench/day.sh [DAY seconds, 1800] [RATE ops/s, 400] [MORNING seconds, 300] [WINDOW seconds, 60]
#   env LEDGERD_BIN: the binary to run (default: this checkout's release build); LEDGERD_BENCH_KEEP=1 keeps the data;
#   RESTART=1 restarts the daemon on the same data before the morning;
#   HOLD_SECONDS (600) the holds' lifetime; STATEMENTS=1 loads pg_stat_statements and prints the day's statements per
#   operation. bench/day-plot.py draws the per-window curves of one or more runs (SVG).
#   STEPS="120 160 200 …": a step run instead of the day — DAY seconds at each rate in turn, then the end (no night,
#   no morning): the highest rate whose windows all answer what was offered with a bounded p99 is the machine's
#   sustained maximum (run it with HOLD_SECONDS=60 so that the expiry sweep is at its day's pace from the second step).
#   Short form for development: bench/day.sh 120 200 60 20
set -euo pipefail
cd "$(dirname "$0")/.."
day=${1:-1800}
rate=${2:-400}
morning=${3:-300}
window=${4:-60}
hold_seconds=${HOLD_SECONDS:-600}
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
work=$(mktemp -d /tmp/ledgerd-bench-day.XXXXXX)
chmod 755 "$work"
port=${PORT:-23490}
hook_port=$((port + 1))
pids=()
pid=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
  [ -n "${LEDGERD_BENCH_KEEP:-}" ] && echo "data kept in $work" || rm -rf "$work"
}
trap cleanup EXIT
python3 - "$work/catalog.json" <<'PY'
import json, sys
json.dump({"products": [{"name": f"Item {i}", "description": "", "price": "10.00", "stock": 100_000_000} for i in range(1, 241)]},
          open(sys.argv[1], "w"))
PY
export LEDGERD_DATA_DIR="$work/d" LEDGERD_LOG_LEVEL=warning LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00 \
  LEDGERD_HOLD_LIFETIMES="visa=$hold_seconds" LEDGERD_EXPIRY_INTERVAL_SECONDS=10 LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS=10 \
  LEDGERD_WEBHOOK_ALLOWED_ADDRESSES=127.0.0.1
# Starts the daemon and waits for its /health (up to 10 minutes: a restart after a long day may first recover its
# cluster); says how long the start took, or stops the run with the end of the daemon's log.
start() {
  local began=$SECONDS
  "$bin" serve --host 127.0.0.1 --port "$port" >> "$work/serve.log" 2>&1 &
  pid=$!
  echo "$pid" > "$work/pid"
  for _ in $(seq 1 2400); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && { echo "daemon $pid up in $((SECONDS - began)) s"; return; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  echo "the daemon did not come up; its log ends:"; tail -20 "$work/serve.log"
  exit 1
}
start
pg=(-h "$work/d/run" -p 5432 -U postgres)
. bench/lib.sh
if [ -n "${STATEMENTS:-}" ]; then
  restart_with_pg_stat_statements "$work/d"
fi
"$bin" catalog import "$work/catalog.json" > /dev/null
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$LEDGERD_DATA_DIR/api-keys.json")
export LEDGERD_API_KEY=$key LEDGERD_URL="http://127.0.0.1:$port"
sql() { psql "${pg[@]}" -XAtc "$1" "${2:-ledger}"; }

# The webhook consumer: answers 200 to every delivery and counts them.
python3 - "$hook_port" "$work/hooks" <<'PY' &
import http.server, sys
count = 0
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.end_headers()
        count += 1
        if count % 100 == 0: open(sys.argv[2], "w").write(str(count))
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hook).serve_forever()
PY
pids+=($!)
curl -sf -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d "{\"url\":\"http://127.0.0.1:$hook_port/hook\",\"secret\":\"day-bench-secret-0123456789\",\"types\":[\"HoldCaptured\",\"HoldRefunded\"]}" \
  "http://127.0.0.1:$port/webhooks" > /dev/null || echo "(webhook endpoint not registered)"
# Two SSE readers of the live feed, each counting bytes.
for reader in 1 2; do
  (curl -sN -H "Authorization: Bearer $key" "http://127.0.0.1:$port/events/stream" | wc -c > "$work/sse$reader") &
  pids+=($!)
done

hz=$(getconf CLK_TCK)
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
# The load generator's own process (the day's or the night's): its memory and CPU are printed beside the others, so
# that the bench's own cost cannot hide in the figures (session 8: a task group kept every request, 8 GB by minute 23).
loader_pid() { pgrep -n -f "bench day-load --url http://127.0.0.1:$port" || echo 0; }
acquirer_pid() { for p in $(pgrep -P "$pid"); do grep -q acquirer "/proc/$p/cmdline" 2>/dev/null && { echo "$p"; return; }; done; echo 0; }
postgres_ticks() { cluster_ticks "$(head -1 "$work/d/pg/postmaster.pid")"; }
# Checkpoints requested and timed: pg_stat_checkpointer (PostgreSQL 17) or pg_stat_bgwriter (before).
checkpoints() {
  sql "SELECT num_requested || ' ' || num_timed FROM pg_stat_checkpointer" postgres 2>/dev/null ||
    sql "SELECT checkpoints_req || ' ' || checkpoints_timed FROM pg_stat_bgwriter" postgres
}
payments() { sql "SELECT count(*) FROM ledger.events WHERE type = 'AuthorizationHoldPlaced'"; }
# Transactions committed in the ledger's and the acquirer's databases (every autocommit statement is one).
commits() { sql "SELECT string_agg(xact_commit::text, ' ' ORDER BY datname) FROM pg_stat_database WHERE datname IN ('acquirer', 'ledger')" postgres; }
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg); day ${day}s at $rate ops/s, morning ${morning}s, windows of ${window}s"
echo "binary: $bin; PostgreSQL: $(sql 'SHOW server_version' postgres); max_wal_size $(sql 'SHOW max_wal_size' postgres), checkpoint_timeout $(sql 'SHOW checkpoint_timeout' postgres), wal_compression $(sql 'SHOW wal_compression' postgres)"

# The machine's line every window, in the background, until the file stop exists.
sampler() {
  set +e +o pipefail  # a failed sample is a gap in one line, not the end of the sampling
  local n=0 c0 a0 p0 w0 k0 s0 y0 r0 e0 l0 acq ldr c1 a1 p1 w1 k1 s1 y1 r1 e1 l1 ops caches dc da dp dl expired t0 t1
  acq=$(acquirer_pid); ldr=$(loader_pid)
  c0=$(ticks "$pid"); a0=$(ticks "$acq"); l0=$(ticks "$ldr"); p0=$(postgres_ticks); w0=$(sql "SELECT pg_current_wal_lsn() - '0/0'" postgres)
  k0=$(checkpoints); s0=$(sql "SELECT pg_database_size('ledger')" postgres); y0=$(payments); r0=$(requests); e0=$(expiries)
  t0=$(commits); jobs_now > "$work/jobs0"
  while [ ! -e "$work/stop" ]; do
    sleep "$window"
    pid=$(cat "$work/pid")  # the daemon may have been restarted (RESTART=1): its ticks start again from 0
    n=$((n + 1)); acq=$(acquirer_pid)
    # A new load generator (the night's, the morning's) starts its ticks from 0.
    l1=$(loader_pid)
    if [ "$l1" != "$ldr" ]; then ldr=$l1; l0=0; fi
    c1=$(ticks "$pid"); a1=$(ticks "$acq"); l1=$(ticks "$ldr"); p1=$(postgres_ticks); w1=$(sql "SELECT pg_current_wal_lsn() - '0/0'" postgres)
    k1=$(checkpoints); s1=$(sql "SELECT pg_database_size('ledger')" postgres); y1=$(payments); t1=$(commits)
    r1=$(requests); ops=$((r1 - r0)); r0=$r1
    e1=$(expiries); expired=$(awk -v a="$e0" -v b="$e1" 'BEGIN {split(a, x, " "); split(b, y, " "); d = y[1] - x[1]; t = y[2] - x[2]; if (d < 0 || t < 0) { d = y[1]; t = y[2] } printf "%d holds in %.1f s of passes", d, t}'); e0=$e1
    # Across a restart the new process's counters start from zero: its own count is the window's.
    [ "$ops" -ge 0 ] || ops=$r1
    dc=$((c1 - c0)); [ "$dc" -ge 0 ] || dc=$c1
    da=$((a1 - a0)); [ "$da" -ge 0 ] || da=$a1
    dp=$((p1 - p0)); [ "$dp" -ge 0 ] || dp=$p1  # the embedded cluster restarts with the daemon
    dl=$((l1 - l0)); [ "$dl" -ge 0 ] || dl=$l1
    caches=$(curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics" | awk '/^ledger_cache_entries/ {sub(/.*cache="/, ""); sub(/"} /, " "); printf "%s ", $0}')
    awk -v n="$n" -v hz="$hz" -v c="$dc" -v a="$da" -v p="$dp" -v w=$((w1 - w0)) -v ops="${ops:-0}" \
      -v y=$((y1 - y0)) -v s=$((s1 - s0)) -v db="$s1" -v k0="$k0" -v k1="$k1" -v rss="$(rss_mib "$pid")" -v arss="$(rss_mib "$acq")" \
      -v l="$dl" -v lrss="$(rss_mib "$ldr")" -v t0="$t0" -v t1="$t1" \
      -v load="$(cut -d' ' -f1 /proc/loadavg)" -v caches="$caches" -v expired="$expired" 'BEGIN {
        split(k0, x, " "); split(k1, z, " "); o = ops > 0 ? ops : 1; q = y > 0 ? y : 1
        split(t0, ta, " "); split(t1, tb, " "); ta1 = tb[1] - ta[1]; tl = tb[2] - ta[2]
        printf "machine window %d (load %s): rss daemon %d MiB acquirer %d MiB | cpu ms/op daemon %.3f acquirer %.3f postgres %.3f | load generator %d MiB %.3f ms/op | transactions/op ledger %.1f acquirer %.1f | payments %d wal %.1f KB/payment disk %.1f KB/payment | checkpoints req %d timed %d | db %.0f MB | expired %s | %s\n",
          n, load, rss, arss, 1000 * c / hz / o, 1000 * a / hz / o, 1000 * p / hz / o, lrss, 1000 * l / hz / o, (tl < 0 ? tb[2] : tl) / o, (ta1 < 0 ? tb[1] : ta1) / o,
          y, w / q / 1024, s / q / 1024, z[1] - x[1], z[2] - x[2], db / 1048576, expired, caches }'
    jobs_now > "$work/jobs1"
    # Runs and seconds of each job in the window (a restarted daemon's counters start again: its own are the window's).
    awk 'NR == FNR { c[$1] = $2; t[$1] = $3; next } { dc = $2 - c[$1]; dt = $3 - t[$1]; if (dc < 0) { dc = $2; dt = $3 }
         if (dc > 0) printf "%s%s %d in %.2f s", (k++ ? ", " : "machine window jobs: "), $1, dc, dt } END { if (k) print "" }' "$work/jobs0" "$work/jobs1"
    mv "$work/jobs1" "$work/jobs0"
    c0=$c1; a0=$a1; p0=$p1; l0=$l1; w0=$w1; k0=$k1; s0=$s1; y0=$y1; t0=$t1
  done
}
# Operations the daemon answered so far (its http_requests_total): the divisor of CPU per operation.
requests() { curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics" | awk '/^http_requests_total/ {s += $NF} END {printf "%d", s}'; }
# Each background job's runs and seconds so far ("name runs seconds" per line): a window's line says what ran in it
# (a latency spike beside an inventory snapshot, an expiry page, a memory trim).
jobs_now() {
  curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics" |
    awk '/^ledger_job_duration_seconds_(count|sum)\{/ { n = $0; sub(/.*name="/, "", n); sub(/".*/, "", n); if ($0 ~ /_count/) c[n] = $NF; else t[n] = $NF }
         END { for (n in c) printf "%s %d %.3f\n", n, c[n], t[n] }' | sort
}
# Holds the expiry sweeper expired so far, and the seconds its passes took (their share of a window's work).
expiries() {
  curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics" |
    awk '/^ledger_holds_expired_total/ {e += $NF} /^ledger_job_duration_seconds_sum\{name="expiry"\}/ {t += $NF} END {printf "%d %.3f", e, t}'
}
load() {
  "$bin" bench day-load --url "http://127.0.0.1:$port" --rate "$1" --seconds "$2" --report-seconds "$window" --phase "$3"
}
sampler &
pids+=($!)
[ -z "${STATEMENTS:-}" ] || sql "SELECT pg_stat_statements_reset()" > /dev/null
day_requests=$(requests)
if [ -n "${STEPS:-}" ]; then
  for step in $STEPS; do load "$step" "$day" "step-$step"; done
else
  load "$rate" "$day" day
fi
if [ -n "${STATEMENTS:-}" ]; then
  # Every statement of the ledger's database over the day, per operation answered (STATEMENTS=1).
  ops=$(( $(requests) - day_requests ))
  echo "the day's statements in the ledger's database, per operation ($ops operations):"
  sql "SELECT round(calls::numeric / $ops, 3) || ' ' || round((total_exec_time / calls)::numeric, 3) || ' ' ||
         left(regexp_replace(query, '\s+', ' ', 'g'), 110)
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'ledger')
       ORDER BY calls DESC LIMIT 25" | awk '{printf "  %8s/op %8s ms  ", $1, $2; $1 = ""; $2 = ""; print substr($0, 3)}'
fi
if [ -n "${STEPS:-}" ]; then
  touch "$work/stop"
  echo "end: $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
echo "night: settling the day (ledgerd settle --today) while a quarter of the rate continues"
"$bin" bench day-load --url "http://127.0.0.1:$port" --rate "$(awk -v r="$rate" 'BEGIN {print r / 4}')" --seconds 100000 \
  --report-seconds "$window" --phase night > "$work/night.log" &
night=$!
pids+=($night)
started=$(date +%s.%N)
"$bin" settle --today 2>&1 | tail -6
echo "night: settled and reconciled in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
kill "$night" 2>/dev/null || true
wait "$night" 2>/dev/null || true
cat "$work/night.log"
if [ -n "${RESTART:-}" ]; then
  # The same data on a fresh process: the morning's first windows against the day's last say what a restart gives
  # back (the issue: a decay that a restart does not undo lives in the database).
  echo "restart: the daemon stops and starts again on the same data"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  start
fi
load "$rate" "$morning" morning
touch "$work/stop"
echo "webhook deliveries received: $(cat "$work/hooks" 2>/dev/null || echo 0)+; disputes: $(sql "SELECT count(*) FROM ledger.events WHERE type LIKE 'Dispute%'")"
echo "largest relations of the ledger (bytes per payment over $(payments) payments):"
sql "SELECT c.relname || ' ' || pg_total_relation_size(c.oid) || ' ' ||
       round(pg_total_relation_size(c.oid)::numeric / greatest(1, (SELECT count(*) FROM ledger.events WHERE type = 'AuthorizationHoldPlaced')))
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'ledger' AND c.relkind IN ('r', 'i') ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 16" |
  awk '{printf "  %-48s %10.1f MB %8d B/payment\n", $1, $2 / 1048576, $3}'
echo "end: $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
