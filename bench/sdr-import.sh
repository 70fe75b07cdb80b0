#!/usr/bin/env bash
# bench/sdr-import.sh BIN CAPTURES OUT [perf]: runs `BIN bench sdr --captures N --data-dir DIR` under /usr/bin/time -v
# and reads ledgerd's CPU (user + sys clock ticks, /proc/PID/stat) when the setup line appears and at the end, so the
# import phase's CPU is known apart from the setup's (the figure a loaded machine does not blur; the wall time is the
# machine's). With "perf", records a cpu-clock profile of ledgerd during the import (PERFSECS seconds, default 20).
# Issue 52: run it for two builds one after the other, e.g. a release build of the commit before a change and after it.
set -u
bin=$1; n=$2; out=$3; mode=${4:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/sdr-bench-XXXX")
tick=$(getconf CLK_TCK)
cpu() { # total utime+stime ticks of pids
  local t=0; for p in "$@"; do [ -r /proc/$p/stat ] && t=$((t + $(awk '{print $14+$15+$16+$17}' /proc/$p/stat))); done; echo $t; }
echo "load at start: $(cat /proc/loadavg)" > $out
/usr/bin/time -v stdbuf -oL "$bin" bench sdr --captures $n --data-dir $dir >> $out 2>&1 &
tpid=$!
sleep 1
lpid=$(pgrep -P $tpid | head -1)
while ! grep -q '^setup:' $out 2>/dev/null; do sleep 0.5; kill -0 $tpid 2>/dev/null || break; done
l0=$(cpu $lpid); t0=$(date +%s.%N)
echo "import start: load $(cat /proc/loadavg)" >> $out
if [ "$mode" = perf ]; then perf record -e cpu-clock -g -p $lpid -o $out.perf.data -- sleep ${PERFSECS:-20} > /dev/null 2>&1 & fi
l1=$l0; t1=$t0
while kill -0 $lpid 2>/dev/null; do
  l1=$(cpu $lpid); t1=$(date +%s.%N)
  sleep 0.2
done
wait $tpid
echo "import end: load $(cat /proc/loadavg)" >> $out
echo "ledgerd cpu during the import (and teardown, to its last sample): $(( l1 - l0 ))/$tick s, wall $(echo "$t1 - $t0" | bc) s" >> $out
rm -rf $dir
