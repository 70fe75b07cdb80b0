#!/usr/bin/env bash
# bench/bank-import.sh BIN ENTRIES OUT [perf]: runs `BIN bench bank --entries N --data-dir DIR` (a fresh DIR) under
# /usr/bin/time -v, the load average before it in OUT; the bench itself prints each part's wall time, ledgerd's and
# PostgreSQL's CPU over the import and the outcome it checked (docs/bank-statements.md, "The figure"). With "perf",
# records a cpu-clock profile of ledgerd from its "setup:" line to its end (OUT.perf.data). Issue 53: run it for two
# builds one after the other, alternating, e.g. a release build of main with only the bench and one of the branch.
set -u
bin=$1; n=$2; out=$3; mode=${4:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bank-bench-XXXX")
echo "load before: $(cat /proc/loadavg)" > "$out"
/usr/bin/time -v stdbuf -oL "$bin" bench bank --entries "$n" --data-dir "$dir" >> "$out" 2>&1 &
tpid=$!
if [ "$mode" = perf ]; then
  lpid=
  while [ -z "$lpid" ] && kill -0 $tpid 2>/dev/null; do sleep 0.2; lpid=$(pgrep -P $tpid | head -1); done
  while ! grep -q '^setup:' "$out" 2>/dev/null; do sleep 0.2; kill -0 $tpid 2>/dev/null || break; done
  perf record -e cpu-clock -g -p "$lpid" -o "$out.perf.data" > /dev/null 2>&1 &
  ppid=$!
fi
wait $tpid
rc=$?
if [ "$mode" = perf ]; then kill -INT $ppid 2>/dev/null; wait $ppid 2>/dev/null; fi
echo "load after: $(cat /proc/loadavg); exit $rc" >> "$out"
rm -rf "$dir"
exit $rc
