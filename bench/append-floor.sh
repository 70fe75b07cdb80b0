#!/usr/bin/env bash
# `ledgerd bench append` against the serial-append floor, run right after it on the same durable cluster (issue 28):
# the floor is ../shared/bench/serial-append-floor.sql with pgbench — batches of n events at the next positions under
# one head lock, the log's three unique indexes, no ledger — at as many clients as the benchmark's producers (64) for
# as long, with n = the ledger run's own median batch. Each round prints both rates and the ledger's share; the end
# prints the medians, with the load average at each round's start.
# Usage: bench/append-floor.sh [rounds] [seconds]   (LEDGERD_BIN: the binary; default this checkout's release build)
#   (needs pgbench: apt-get install -y postgresql-contrib or postgresql-15)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-10}
floor_sql=${FLOOR_SQL:-$(pwd)/../shared/bench/serial-append-floor.sql}
[ -f "$floor_sql" ] || { echo "no floor script at $floor_sql (set FLOOR_SQL)" >&2; exit 2; }
if [ -n "${LEDGERD_BIN:-}" ]; then bin=$LEDGERD_BIN; else
  [ -n "${LEDGERD_BENCH_SKIP_BUILD:-}" ] || swift build -c release --product ledgerd >/dev/null
  bin=.build/release/ledgerd
fi
work=$(mktemp -d /tmp/ledgerd-bench-append.XXXXXX)
chmod 755 "$work"
cp "$floor_sql" "$work/floor.sql"; chmod 644 "$work/floor.sql"
pg_ctl=$(ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1)
as_postgres() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi; }
trap 'as_postgres "$pg_ctl -D $work/d/pg -m fast -w stop" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores; $(date -u +%FT%TZ); $rounds rounds of ${seconds}s, 64 producers / clients"
: > "$work/lines"
for round in $(seq 1 "$rounds"); do
  rm -rf "$work/d"
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  out=$("$bin" bench append --data-dir "$work/d" --seconds "$seconds" 2>&1)
  rate=$(sed -n 's/^ledger append: .* = \([0-9]*\) events\/s.*/\1/p' <<<"$out")
  batch=$(sed -n 's/.*events per batch p50 \([0-9]*\),.*/\1/p' <<<"$out")
  [ -n "$rate" ] && [ -n "$batch" ] || { echo "no figures in: $out" >&2; exit 1; }
  # The floor on the same cluster, right after (the benchmark stopped it).
  as_postgres "$pg_ctl -D $work/d/pg -w -l $work/d/pg/floor.log start" >/dev/null
  pg=(-h "$work/d/run" -p 5432 -U postgres)
  psql "${pg[@]}" -qc "CREATE DATABASE floor" postgres
  psql "${pg[@]}" -q floor <<'SQL'
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE head(id int PRIMARY KEY, position bigint NOT NULL, hash bytea NOT NULL);
INSERT INTO head VALUES (1, 0, '\x00'::bytea);
CREATE TABLE log(position bigint PRIMARY KEY, event_id uuid NOT NULL UNIQUE, stream_id text NOT NULL,
  stream_version bigint NOT NULL, type text NOT NULL, data jsonb NOT NULL, data_text text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(), prev_hash bytea NOT NULL, hash bytea NOT NULL,
  UNIQUE (stream_id, stream_version));
SQL
  tps=$(pgbench "${pg[@]}" -n -c 64 -j 2 -T "$seconds" -D n="$batch" -f "$work/floor.sql" floor 2>/dev/null \
    | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
  as_postgres "$pg_ctl -D $work/d/pg -m fast -w stop" >/dev/null
  floor=$(awk -v t="$tps" -v n="$batch" 'BEGIN {printf "%.0f", t * n}')
  share=$(awk -v l="$rate" -v f="$floor" 'BEGIN {printf "%.1f", 100 * l / f}')
  echo "round $round (load $load): ledger $rate events/s, median batch $batch; floor (n=$batch) $floor events/s; share $share %"
  echo "$rate $floor $share" >> "$work/lines"
done
python3 - "$work/lines" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1]) if line.strip()]
m = [statistics.median(r[i] for r in rows) for i in range(3)]
print(f"medians of {len(rows)}: ledger {m[0]:.0f} events/s, floor {m[1]:.0f} events/s, share {m[2]:.1f} % "
      f"(shares {', '.join(f'{r[2]:.1f}' for r in rows)})")
PY
