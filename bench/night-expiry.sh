#!/usr/bin/env bash
# bench/night-expiry.sh BIN HOLDS OUTDIR [perf]: `BIN bench expiry --holds N` under /usr/bin/time -v; when the first HoldExpired
# event is in the database (the sweep began), records CPU ticks of ledgerd and PostgreSQL (and attaches perf to ledgerd).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bin=$1; n=$2; out=$3; prof=${4:-}
mkdir -p "$out"
work=$(mktemp -d /tmp/day-expiry.XXXXXX); chmod 755 "$work"
echo "start $(date -u +%FT%TZ) load $(cat /proc/loadavg)" > "$out/meta"
( cd "$work" && exec /usr/bin/time -v -o "$out/time.txt" "$bin" bench expiry --holds "$n" --data-dir "$work/cluster" ) > "$out/bench.txt" 2> "$out/stderr.txt" &
tpid=$!
sleep 2
lpid=$(pgrep -P $tpid | head -1)
sock=
while kill -0 $tpid 2>/dev/null; do
  [ -n "$sock" ] || sock=$(dirname "$(find "$work" -name '.s.PGSQL.*' -not -name '*.lock' 2>/dev/null | head -1)" 2>/dev/null || true)
  [ "$sock" = "." ] && sock=
  if [ -n "$sock" ] && [ "$(psql -h "$sock" -U postgres -d ledger_bench -Atc "SELECT count(*) FROM (SELECT 1 FROM ledger.events WHERE type = 'HoldExpired' LIMIT 1) x" 2>/dev/null)" = "1" ]; then break; fi
  sleep 0.5
done
pm=$(postmaster_pid "$work")
echo "sweep start $(date -u +%FT%TZ) load $(cat /proc/loadavg) ledger $lpid ticks $(ticks $lpid) pg $pm ticks $(cluster_ticks $pm)" >> "$out/meta"
if [ -n "$prof" ]; then perf record -e cpu-clock -g -F 499 -o "$out/perf.data" -p "$lpid" 2> "$out/perf.err" & ppid=$!; fi
while kill -0 $tpid 2>/dev/null; do
  c=$(psql -h "$sock" -U postgres -d ledger_bench -Atc "SELECT count(*) FROM ledger.events WHERE type = 'HoldExpired'" 2>/dev/null || echo 0)
  [ "$c" -ge "$n" ] && break
  sleep 0.5
done
echo "sweep end $(date -u +%FT%TZ) ledger ticks $(ticks $lpid) pg ticks $(cluster_ticks $pm)" >> "$out/meta"
[ -z "$prof" ] || { kill -INT $ppid 2>/dev/null; wait $ppid || true; }
wait $tpid || echo "bench exit $?" >> "$out/meta"
echo "end $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >> "$out/meta"
rm -rf "$work"
