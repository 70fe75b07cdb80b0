#!/usr/bin/env bash
# bench/night-expiry.sh BIN HOLDS OUTDIR [perf]: `BIN bench expiry --holds N` under /usr/bin/time -v; when the first HoldExpired
# event is in the database (the sweep began), records CPU ticks of ledgerd and PostgreSQL (and attaches perf to ledgerd).
set -euo pipefail
# CPU ticks: ticks of a pid (utime+stime), of a postgres cluster (postmaster incl. reaped children + live children)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() { # $1: postmaster pid
  local m=$1 t p
  t=$(awk '{print $14+$15+$16+$17}' /proc/$m/stat 2>/dev/null || echo 0)
  for p in $(pgrep -P "$m"); do t=$((t + $(ticks "$p"))); done
  echo "$t"
}
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
pm=$(head -1 "$(find "$work" -name postmaster.pid | head -1)")
echo "sweep start $(date -u +%FT%TZ) load $(cat /proc/loadavg) ledger $lpid ticks $(ticks $lpid) pg $pm ticks $(pg_ticks $pm)" >> "$out/meta"
if [ -n "$prof" ]; then perf record -e cpu-clock -g -F 499 -o "$out/perf.data" -p "$lpid" 2> "$out/perf.err" & ppid=$!; fi
while kill -0 $tpid 2>/dev/null; do
  c=$(psql -h "$sock" -U postgres -d ledger_bench -Atc "SELECT count(*) FROM ledger.events WHERE type = 'HoldExpired'" 2>/dev/null || echo 0)
  [ "$c" -ge "$n" ] && break
  sleep 0.5
done
echo "sweep end $(date -u +%FT%TZ) ledger ticks $(ticks $lpid) pg ticks $(pg_ticks $pm)" >> "$out/meta"
[ -z "$prof" ] || { kill -INT $ppid 2>/dev/null; wait $ppid || true; }
wait $tpid || echo "bench exit $?" >> "$out/meta"
echo "end $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >> "$out/meta"
rm -rf "$work"
