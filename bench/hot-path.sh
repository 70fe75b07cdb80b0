#!/usr/bin/env bash
# Every row of docs/performance.md in one run: bench append, bench expiry and the verification lines of bench
# audit (three runs each, with the load average before each), then bench/payments.sh and bench/captures.sh.
# Usage: bench/hot-path.sh [binary] [its sql/ directory]
#   default: this checkout's release build and sql/. Pass another pair to measure a before/after.
#   (needs wrk and pgbench: apt-get install -y wrk postgresql-15 or postgresql-contrib)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${1:-}" ]; then bin=$1; else swift build -c release --product ledgerd >/dev/null; bin=$PWD/.build/release/ledgerd; fi
export LEDGERD_BIN=$bin LEDGERD_MIGRATIONS_DIR=${2:-$PWD/sql}
work=$(mktemp -d /tmp/ledgerd-hot-path.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== $(date -u +%FT%TZ) $bin, $(nproc) cores"
for i in 1 2 3; do echo "-- append run $i, load $(load)"; rm -rf "$work/a"; "$bin" bench append --data-dir "$work/a" 2>&1 | tail -5; done
for i in 1 2 3; do echo "-- expiry run $i, load $(load)"; rm -rf "$work/e"; "$bin" bench expiry --data-dir "$work/e" 2>&1 | tail -1; done
rm -rf "$work/a" "$work/e"
for i in 1 2 3; do
  echo "-- verification run $i, load $(load)"
  "$bin" bench audit --events 2000000 --samples 200 --data-dir "$work/au" 2>&1 | grep -E "^(ledger|chain verification)"
done
rm -rf "$work/au"
echo "-- payments"; bash bench/payments.sh 10 3 2>&1 | tail -7
echo "-- captures"; bash bench/captures.sh 10 3 2>&1 | tail -4
echo "== done $(date -u +%FT%TZ)"
