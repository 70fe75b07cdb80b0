#!/usr/bin/env bash
# Payments/s with a synchronous standby vs an asynchronous one — the same clusters and daemon, alternating within
# one run — and the standby's replay lag under that load (pg_stat_replication.replay_lag and bytes not yet replayed,
# sampled every 200 ms). A primary and a streaming standby on 127.0.0.1 (deploy/ha/lib.sh, as the failover drill),
# `ledgerd serve` on the two-host URL, wrk with bench/payments.lua.
# Usage: bench/replication.sh [seconds per run] [runs] [connections]   (needs wrk: apt-get install -y wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
seconds=${1:-10}
runs=${2:-3}
connections=${3:-16}
sync=on
. deploy/ha/lib.sh
work=$(mktemp -d /tmp/ledgerd-bench-replication.XXXXXX)
chmod 711 "$work"
failed=0
trap ha_cleanup EXIT
ha_setup >/dev/null
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%FT%TZ); $bin; $connections connections, ${seconds}s per run"
sample_lag() {  # until $work/lag-stop exists: "replay lag in ms, bytes not yet replayed" every 200 ms
  while [ ! -e "$work/lag-stop" ]; do
    sql "$p1" postgres "SELECT coalesce(round(extract(epoch FROM replay_lag) * 1000), 0) || ' ' || pg_wal_lsn_diff(sent_lsn, replay_lsn)
      FROM pg_stat_replication WHERE application_name = 'standby'" >>"$1" || true
    sleep 0.2
  done
}
for run in $(seq 1 "$runs"); do
  for mode in sync async; do
    names="'standby'"
    [ "$mode" = async ] && names="''"
    sql "$p1" postgres "ALTER SYSTEM SET synchronous_standby_names = $names" >/dev/null
    sql "$p1" postgres "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 50); do
      state=$(sql "$p1" postgres "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")
      [ "$state" = "$mode" ] && break
      sleep 0.1
    done
    rm -f "$work/lag-stop"
    : >"$work/lag"
    sample_lag "$work/lag" &
    sampler=$!
    load=$(cut -d' ' -f1 /proc/loadavg)
    result=$(wrk -t2 -c"$connections" -d"${seconds}s" -s bench/payments.lua "http://127.0.0.1:$http" | tail -1)
    touch "$work/lag-stop"
    wait "$sampler"
    lag=$(awk 'NF == 2 {print $1}' "$work/lag" | sort -n | awk '{a[NR] = $1} END {if (NR) printf "median %s ms, max %s ms", a[int((NR + 1) / 2)], a[NR]; else printf "no samples"}')
    behind=$(awk 'NF == 2 {print $2}' "$work/lag" | sort -n | awk '{a[NR] = $1} END {if (NR) printf "median %s B, max %s B", a[int((NR + 1) / 2)], a[NR]}')
    printf 'run %s %-5s (standby %s, load %s): %s | replay lag %s; not yet replayed %s\n' "$run" "$mode" "$state" "$load" "$result" "$lag" "$behind"
  done
done
