#!/usr/bin/env bash
# The daemon's resident memory under the big requests review 3 found unbounded (N3 journal, N4 upload, N8 event
# stream, N15 memory kept afterwards), the probe's commands as one script: a ledgerd serving a ledger of N events
# (built once by `ledgerd bench audit`, as the probe's "big" daemon was), then one phase after the other:
#   journal  6 concurrent exports of the whole period, every page (following next_after, 10,000 entries a page);
#   upload   4 concurrent 250 MB reports with the ledger layout's header and rows that are not (refused at row 2);
#   stream   50 concurrent /events/stream?after=0 catch-ups for 30 s with one auditor key (8 are served, the rest 429).
# For each phase: resident memory before, the peak during (VmHWM, reset before the phase) and after (5 s later), in
# MiB, with what the phase answered. The probe saw 317 → 924 MB (journal), 94 MB → 1.21 GB (one upload), 2 GB streamed.
# Usage: bench/memory.sh [events] [data dir]   (default 300000, ./.ledgerd-bench-memory; LEDGERD_BIN: a binary)
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-300000}
data=$(realpath -m "${2:-./.ledgerd-bench-memory}")
port=23461
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
unset LEDGERD_DATABASE_URL LEDGERD_CHECKPOINT_KEY
# The ledger is built once (orders.lua marks a finished build); later runs serve it as it is.
[ -f "$data/orders.lua" ] || "$bin" bench audit --events "$events" --samples 10 --skip-verify --data-dir "$data" > /dev/null
work=$(mktemp -d /tmp/ledgerd-bench-memory.XXXXXX)
export LEDGERD_DATA_DIR="$data" LEDGERD_LOG_LEVEL=warning LEDGERD_SEED_DEMO_CATALOG=false
"$bin" serve --host 127.0.0.1 --port $port > "$work/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
head=$(curl -sf "http://127.0.0.1:$port/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["database"]["last_position"])')
auditor=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["auditor_keys"][0])' "$data/api-keys.json")
operator=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$data/api-keys.json")
kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
mib() { echo $(( $1 / 1024 )); }
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg); ledger head $head; $bin"
echo "resident at start: $(mib "$(kib VmRSS)") MiB"
phase() {  # name, command…
  local name=$1; shift
  sleep 5
  local before; before=$(kib VmRSS)
  echo 5 > "/proc/$pid/clear_refs"  # resets VmHWM to the current resident set
  local answered; answered=$("$@")
  local peak; peak=$(kib VmHWM)
  sleep 5
  printf "%-8s before %5d MiB  peak %5d MiB  after %5d MiB  %s\n" "$name" "$(mib "$before")" "$(mib "$peak")" "$(mib "$(kib VmRSS)")" "$answered"
}
journal() {  # 6 concurrent exports of the whole period, every page
  for i in 1 2 3 4 5 6; do
    python3 - "$port" "$auditor" > "$work/journal-$i" <<'PY' &
import json, sys, urllib.request
port, key = sys.argv[1], sys.argv[2]
after, entries, pages, size = 0, 0, 0, 0
while True:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/journal?from=2000-01-01&to=2100-01-01&limit=10000&after={after}",
                                     headers={"Authorization": f"Bearer {key}"})
    try:
        body = urllib.request.urlopen(request, timeout=120).read()
    except urllib.error.HTTPError as error:
        if error.code == 429:  # the expensive-request limit: try the page again
            continue
        raise
    page = json.loads(body)
    pages, size, entries = pages + 1, size + len(body), entries + len(page["entries"])
    if page.get("next_after") is None:
        break
    after = page["next_after"]
print(entries, pages, size)
PY
  done
  wait
  awk '{e += $1; p += $2; s += $3} END {printf "6 exports: %d entries in %d pages, %.1f MB", e, p, s / 1e6}' "$work"/journal-*
}
upload() {  # 4 concurrent 250 MB uploads in the ledger layout, refused at row 2
  [ -f "$work/report.csv" ] || python3 - "$work/report.csv" "$(head -1 Tests/LedgerAcquirerTests/Golden/settlement-seed42.csv | tr -d '\r')" <<'PY'
import sys
row = ("x," * 22 + "x\r\n").encode()
chunk = row * (1_048_576 // len(row))
with open(sys.argv[1], "wb") as out:
    out.write(sys.argv[2].encode() + b"\r\n")
    for _ in range(250):
        out.write(chunk)
PY
  for i in 1 2 3 4; do
    curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $operator" -H 'Content-Type: text/csv' \
      --data-binary @"$work/report.csv" "http://127.0.0.1:$port/reconciliation/reports" > "$work/upload-$i" &
  done
  wait
  echo "4 uploads of $(( $(stat -c %s "$work/report.csv") / 1048576 )) MiB: statuses $(sort "$work"/upload-* | uniq -c | awk '{printf "%s×%s ", $1, $2}')"
}
stream() {  # 50 concurrent catch-ups from position 0 for 30 s, one auditor key
  for i in $(seq 1 50); do
    curl -s -N -m 30 -o "$work/stream-$i" -w '%{http_code}\n' -H "Authorization: Bearer $auditor" \
      "http://127.0.0.1:$port/events/stream?after=0" > "$work/stream-status-$i" || true &
  done
  wait
  local bytes; bytes=$(cat "$work"/stream-[0-9]* | wc -c)
  echo "50 streams: statuses $(sort "$work"/stream-status-* | uniq -c | awk '{printf "%s×%s ", $1, $2}')$(( bytes / 1000000 )) MB streamed"
}
phase journal journal
phase upload upload
phase stream stream
echo "resident at the end: $(mib "$(kib VmRSS)") MiB; /health: $(curl -s -o /dev/null -w '%{http_code} in %{time_total} s' "http://127.0.0.1:$port/health")"
