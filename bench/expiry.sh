#!/usr/bin/env bash
# `ledgerd bench expiry` for several forms, interleaved: each round runs every form once, one after the other, so a
# machine that slows down or speeds up during the script affects every form alike. A form is NAME=BINARY or
# NAME=BINARY:SQL_DIR (the migrations to apply, e.g. a copy of sql/ without one migration). Prints the load average
# at the start of each run, then each form's runs and median.
# Usage: bench/expiry.sh ROUNDS HOLDS FORM...
#   e.g. bench/expiry.sh 3 100000 after=.build/release/ledgerd before=/tmp/ledgerd-old no-index=.build/release/ledgerd:/tmp/sql-without-0020
set -euo pipefail
rounds=${1:?usage: bench/expiry.sh ROUNDS HOLDS NAME=BINARY[:SQL_DIR]...}
holds=${2:?usage: bench/expiry.sh ROUNDS HOLDS NAME=BINARY[:SQL_DIR]...}
shift 2
[ $# -gt 0 ] || { echo "usage: bench/expiry.sh ROUNDS HOLDS NAME=BINARY[:SQL_DIR]..." >&2; exit 2; }
sql=$(cd "$(dirname "$0")/../sql" && pwd)
work=$(mktemp -d /tmp/ledgerd-bench-expiry.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
declare -A seconds
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); $holds holds, $rounds rounds"
for round in $(seq 1 "$rounds"); do
  for form in "$@"; do
    name=${form%%=*}
    spec=${form#*=}
    bin=${spec%%:*}
    dir=$sql
    [ "$spec" = "$bin" ] || dir=${spec#*:}
    bin=$(realpath "$bin")
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$(cd "$work" && LEDGERD_MIGRATIONS_DIR=$dir "$bin" bench expiry --holds "$holds" --data-dir "$work/cluster" | tail -1)
    rm -rf "$work/cluster"
    s=$(sed -n 's/.* in \([0-9.]*\) s = .*/\1/p' <<<"$line")
    [ -n "$s" ] || { echo "$name: no figure in: $line" >&2; exit 1; }
    seconds[$name]="${seconds[$name]:-} $s"
    echo "round $round $name (load $load): $line"
  done
done
for form in "$@"; do
  name=${form%%=*}
  median=$(tr ' ' '\n' <<<"${seconds[$name]}" | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  echo "$name: median $median s of${seconds[$name]}"
done
