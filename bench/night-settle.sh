#!/usr/bin/env bash
# bench/night-settle.sh BIN CAPTURES OUTDIR [perf]: runs `BIN bench settle --captures N` under /usr/bin/time -v; once setup is
# done, optionally attaches perf (cpu-clock, call graphs) to the ledger process, the acquirer child and PostgreSQL.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bin=$1; n=$2; out=$3; prof=${4:-}
mkdir -p "$out"
work=$(mktemp -d /tmp/day-settle.XXXXXX); chmod 755 "$work"
echo "start $(date -u +%FT%TZ) load $(cat /proc/loadavg)" > "$out/meta"
last=
( cd "$work" && exec /usr/bin/time -v -o "$out/time.txt" stdbuf -oL "$bin" bench settle --captures "$n" --data-dir "$work/cluster" ) > "$out/bench.txt" 2> "$out/stderr.txt" &
tpid=$!
# wait for setup line
while kill -0 $tpid 2>/dev/null && ! grep -q '^setup:' "$out/bench.txt"; do sleep 0.3; done
echo "settle start $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >> "$out/meta"
lpid=$(pgrep -P $tpid | head -1)
apid=$(pgrep -P "$lpid" -f 'acquirer serve' | head -1 || true)
echo "ledger $lpid acquirer $apid" >> "$out/meta"
pm=$(postmaster_pid "$work")
echo "settle-start ticks ledger $(ticks $lpid) acquirer $(ticks $apid) pg $(cluster_ticks $pm)" >> "$out/meta"
if [ -n "$prof" ]; then
  pids="$lpid,$apid"
  perf record -e cpu-clock -g -F 499 -o "$out/perf.data" -p "$pids" 2> "$out/perf.err" &
  ppid=$!
fi
while kill -0 $tpid 2>/dev/null; do
  a=$(ticks $apid); [ "$a" = 0 ] || last="last-sample $(date -u +%T) ticks ledger $(ticks $lpid) acquirer $a pg $(cluster_ticks $pm)"
  sleep 1
done
wait $tpid || echo "bench exit $?" >> "$out/meta"
[ -z "$prof" ] || { kill -INT $ppid 2>/dev/null; wait $ppid || true; }
echo "end $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >> "$out/meta"
echo "$last" >> "$out/meta"
rm -rf "$work"
