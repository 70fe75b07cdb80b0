#!/usr/bin/env bash
# swift-openapi-hummingbird's server overhead (issue 31): the same two operations of the ledger's document
# (listDisputes: GET /disputes?status=charged_back&due_before=…, 20 disputes, about 8 KB of JSON; captureOrder:
# POST /orders/{id}/capture {"amount": "20.00"} with an Idempotency-Key) served by bench/openapi-overhead/ in two
# modes: `plain` (Hummingbird routes as ledgerd writes them, Foundation's JSON coders) and `generated` (the server
# swift-openapi-generator made, registered by swift-openapi-hummingbird, the runtime's ErrorHandlingMiddleware). Both
# use the same generated Codable types and the same in-memory work; no database.
#
# Builds the package (release), starts both modes on 127.0.0.1 (ports 23611 and 23612), checks that they answer the
# same bytes (curl + cmp) and that a missing Idempotency-Key is a 400 in both (and shows each mode's refusals), then
# for each run, each operation, each mode in turn (plain, generated, plain, generated… so drift hits both): a warm
# wrk at 16 connections (2 threads) for [seconds], and prints requests/s, the server process's CPU per request
# (utime + stime from /proc/PID/stat, before and after, ÷ requests) and the 1-minute load average. The end prints the
# medians per mode and operation and the ratios generated/plain.
#
# Usage: bench/openapi-overhead.sh [seconds per run, 10] [runs, 3]   (needs wrk and curl: apt-get install -y wrk curl)
#   OPENAPI_OVERHEAD_SKIP_BUILD=1 uses the existing release build.
#   OPENAPI_OVERHEAD_MODES="plain generated generated-buffered" adds the diagnosis mode (the generated server on a
#   transport that answers its reply in one buffer, bench/openapi-overhead/Sources/OpenAPIOverhead/GeneratedAPI.swift);
#   plain comes first, the ratios are each mode's to plain.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
runs=${2:-3}
package=bench/openapi-overhead
if [ -z "${OPENAPI_OVERHEAD_SKIP_BUILD:-}" ]; then
  swift build -c release --package-path "$package" --product openapi-overhead >&2
fi
bin="$(swift build -c release --package-path "$package" --show-bin-path)/openapi-overhead"
work=$(mktemp -d /tmp/openapi-overhead.XXXXXX)
read -r -a modes <<<"${OPENAPI_OVERHEAD_MODES:-plain generated}"
[ "${modes[0]}" = plain ] || { echo "OPENAPI_OVERHEAD_MODES must start with plain" >&2; exit 2; }
declare -A pid port
for i in "${!modes[@]}"; do port[${modes[$i]}]=$((23611 + i)); done
stop() {
  local p
  for p in "${pid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pid[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

for mode in "${modes[@]}"; do
  "$bin" "$mode" "${port[$mode]}" >"$work/$mode.log" 2>&1 &
  pid[$mode]=$!
done
for mode in "${modes[@]}"; do
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:${port[$mode]}/disputes" && break
    kill -0 "${pid[$mode]}" 2>/dev/null || { cat "$work/$mode.log" >&2; exit 1; }
    sleep 0.1
  done
done

list_path='/disputes?status=charged_back&due_before=2030-01-01T00:00:00Z'
capture_path='/orders/order-1001-7b3e9d/capture'

# The check: the same reply bytes for the same request, and each mode's refusals side by side.
# request NAME MODE CURL-ARGS...: the body to $work/NAME.MODE, prints the status.
request() {
  local name=$1 mode=$2; shift 2
  curl -s -o "$work/$name.$mode" -w '%{http_code}' "$@"
}
failed=0
for case in list capture; do
  for mode in "${modes[@]}"; do
    base="http://127.0.0.1:${port[$mode]}"
    if [ "$case" = list ]; then
      status=$(request "$case" "$mode" "$base$list_path")
    else
      status=$(request "$case" "$mode" -X POST -H 'Content-Type: application/json' -H 'Idempotency-Key: bench-capture-1' \
        --data '{"amount": "20.00"}' "$base$capture_path")
    fi
    [ "$status" = 200 ] || { echo "check: $case in $mode mode answered $status" >&2; failed=1; }
  done
  for mode in "${modes[@]:1}"; do
    if cmp -s "$work/$case.plain" "$work/$case.$mode"; then
      echo "check: $case: the same $(wc -c <"$work/$case.plain") bytes in plain and $mode mode"
    else
      echo "check: $case: plain and $mode mode answer different bytes" >&2; failed=1
      diff <(head -c 600 "$work/$case.plain") <(head -c 600 "$work/$case.$mode") >&2 || true
    fi
  done
done
echo "check: refusals (status, content-type, body) in each mode:"
refusal() {
  local label=$1; shift
  for mode in "${modes[@]}"; do
    base="http://127.0.0.1:${port[$mode]}"
    out=$(curl -s -D "$work/headers" -o "$work/body" -w '%{http_code}' "$@" "${curl_path/@/$base}")
    ctype=$(grep -i '^content-type:' "$work/headers" | tr -d '\r' | cut -d' ' -f2- || true)
    printf '  %-30s %-18s %s %-32s %s\n' "$label" "$mode" "$out" "${ctype:--}" "$(head -c 200 "$work/body")"
    echo "$label $mode $out" >>"$work/refusals"
  done
}
curl_path="@$capture_path"
refusal "capture, no Idempotency-Key" -X POST -H 'Content-Type: application/json' --data '{"amount": "20.00"}'
refusal "capture, bad JSON" -X POST -H 'Content-Type: application/json' -H 'Idempotency-Key: k' --data '{"amount": '
refusal "capture, unknown member" -X POST -H 'Content-Type: application/json' -H 'Idempotency-Key: k' --data '{"amont": "1.00"}'
refusal "capture, text/plain body" -X POST -H 'Content-Type: text/plain' -H 'Idempotency-Key: k' --data '{"amount": "1.00"}'
refusal "capture, 201-byte key" -X POST -H 'Content-Type: application/json' -H "Idempotency-Key: $(printf 'k%.0s' $(seq 201))" --data '{}'
curl_path="@/disputes?status=nonsense"
refusal "list, unknown status"
curl_path="@/disputes?due_before=yesterday"
refusal "list, bad due_before"
for mode in "${modes[@]}"; do
  grep -q "^capture, no Idempotency-Key $mode 400\$" "$work/refusals" || { echo "check: a missing Idempotency-Key is not a 400 in $mode mode" >&2; failed=1; }
done
[ "$failed" = 0 ] || exit 1

hz=$(getconf CLK_TCK)
. bench/lib.sh
# drive OP MODE SECONDS: wrk against one mode; prints "requests duration_us non2xx socket_errors cpu_ticks".
drive() {
  local op=$1 mode=$2 secs=$3 url before after line
  url="http://127.0.0.1:${port[$mode]}"
  if [ "$op" = list ]; then url+=$list_path; else url+=$capture_path; fi
  before=$(ticks "${pid[$mode]}")
  line=$(OP=$op wrk -t 2 -c 16 -d "${secs}s" -s bench/openapi-overhead.lua "$url" | grep '^requests ')
  after=$(ticks "${pid[$mode]}")
  awk -v t=$((after - before)) '{print $2, $4, $6, $8, t}' <<<"$line"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%FT%TZ)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); ${seconds}s per run, $runs runs per mode and operation, wrk -t2 -c16"
for op in list capture; do for mode in "${modes[@]}"; do drive "$op" "$mode" 3 >/dev/null; done; done  # warm-up
printf '%-4s %-8s %-18s %12s %14s %10s %8s\n' run op mode "requests/s" "CPU µs/req" non-2xx load1
for run in $(seq "$runs"); do
  for op in list capture; do
    for mode in "${modes[@]}"; do
      read -r requests duration non2xx errors t < <(drive "$op" "$mode" "$seconds")
      load=$(cut -d' ' -f1 /proc/loadavg)
      rps=$(awk -v r="$requests" -v d="$duration" 'BEGIN {printf "%.0f", r / (d / 1e6)}')
      cpu=$(awk -v t="$t" -v hz="$hz" -v r="$requests" 'BEGIN {printf "%.1f", t * 1e6 / hz / r}')
      printf '%-4s %-8s %-18s %12s %14s %10s %8s\n' "$run" "$op" "$mode" "$rps" "$cpu" "$((non2xx + errors))" "$load"
      echo "$op $mode $rps $cpu" >>"$work/results"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/results" "${modes[@]}" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
modes = sys.argv[2:]
median = {}
for op in ("list", "capture"):
    for mode in modes:
        mine = [r for r in rows if r[0] == op and r[1] == mode]
        median[op, mode] = (statistics.median(float(r[2]) for r in mine), statistics.median(float(r[3]) for r in mine))
print(f"\nmedians of {len(rows) // (2 * len(modes))} runs")
print(f"{'operation':<10} {'mode':<19} {'requests/s':>11} {'CPU µs/req':>11}")
for (op, mode), (rps, cpu) in median.items():
    print(f"{op:<10} {mode:<19} {rps:>11.0f} {cpu:>11.1f}")
print(f"\n{'operation':<10} {'ratio to plain':<19} {'CPU/req':>11} {'requests/s':>11}")
for op in ("list", "capture"):
    prps, pcpu = median[op, "plain"]
    for mode in modes[1:]:
        rps, cpu = median[op, mode]
        print(f"{op:<10} {mode + '/plain':<19} {cpu / pcpu:>11.3f} {rps / prps:>11.3f}")
PY
