#!/usr/bin/env bash
# Failover drill on one machine (docs/high-availability.md): a primary and a synchronous streaming standby as
# local clusters on 127.0.0.1, `ledgerd serve` on a two-host URL with target_session_attrs=read-write, client
# loops that pay (and capture every third order) and record every acknowledged (2xx) answer, SIGKILL to the
# primary's postmaster mid-load, the scripted promotion of the standby, then the checks: every acknowledged payment
# and capture is on the new primary, the chain verifies in SQL (ledger.verify_chain), and service resumed.
# Last lines: "acknowledged payments lost: N" and "unavailable for: S s"; exits 1 when anything acknowledged is
# missing or a check fails. Cleans up after itself; every wait is bounded.
#
# Usage: deploy/ha/drill.sh [seconds of load before the kill] [seconds of load after the promotion] [clients]
#   DRILL_DAEMONS: how many `ledgerd serve` share the ledger behind one address (default 2: round robin by
#   deploy/ha/balance.py, which needs python3; 1: one daemon, no balancer).
#   LEDGERD_BIN: the ledgerd binary (default: the newer of .build/release/ledgerd and .build/debug/ledgerd, else built).
#   DRILL_SYNC=off: the same drill with an asynchronous standby (to compare; may lose payments — that is the point).
#   Needs the PostgreSQL 15 server binaries (initdb, pg_ctl, pg_basebackup, psql), curl and setpriv when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
before=${1:-4}
after=${2:-8}
clients=${3:-4}
sync=${DRILL_SYNC:-on}
daemons=${DRILL_DAEMONS:-2}

. deploy/ha/lib.sh
work=$(mktemp -d /tmp/ledgerd-drill.XXXXXX)
chmod 711 "$work"
trap ha_cleanup EXIT
ha_setup

# One client: pays in a loop until $work/stop exists; every third acknowledged order is captured (5.00).
# Each attempt: "start_ms end_ms kind status order_id" in $work/attempts.N; acknowledged ones also in acked.N.
client() {
  local n=$1 i=0 start end status body id
  local payment='{"gateway":"stripe","source":"tok_visa","amount":3200,"currency":"USD","description":"Pen","shipping_contact":"Jane Appleseed","shipping_email":"jane@example.com","shipping_street":"1 Infinite Loop","shipping_city":"Cupertino","shipping_state":"CA","shipping_zip":"95014","shipping_method_name":"Standard"}'
  while [ ! -e "$work/stop" ]; do
    i=$((i + 1))
    start=$(now_ms)
    body=$(curl -s -m 5 -w '\n%{http_code}' -H 'Content-Type: application/json' -H "Idempotency-Key: drill-$n-$i" \
      -d "$payment" "http://127.0.0.1:$http/payment" || echo $'\n000')
    end=$(now_ms)
    status=${body##*$'\n'}
    id=$(printf '%s' "$body" | sed -n 's/.*"order_id" *: *"\([^"]*\)".*/\1/p' | head -1)
    echo "$start $end pay $status ${id:--}" >>"$work/attempts.$n"
    if [ "${status:0:1}" = 2 ] && [ -n "$id" ]; then
      echo "$id" >>"$work/acked.$n"
      if [ $((i % 3)) = 0 ]; then
        status=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H "Authorization: Bearer $op" \
          -H "Idempotency-Key: drill-capture-$n-$i" -d '{"amount": "5.00"}' "http://127.0.0.1:$http/orders/$id/capture" || true)
        echo "$(now_ms) $(now_ms) capture $status $id" >>"$work/attempts.$n"
        [ "${status:0:1}" = 2 ] && echo "$id" >>"$work/captured.$n"
      fi
    fi
  done
}
client_pids=
for n in $(seq 1 "$clients"); do
  client "$n" &
  client_pids="$client_pids $!"
done
sleep "$before"

primary_pid=$(head -1 "$work/primary/postmaster.pid")
killed=$(now_ms)
kill -KILL "$primary_pid"
step "SIGKILL to the primary's postmaster (pid $primary_pid) under load"
# The scripted promotion (docs/high-availability.md): the primary has stopped answering three times in a row.
misses=0
for _ in $(seq 1 100); do
  if "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$p1" -t 1; then misses=0; else misses=$((misses + 1)); fi
  [ $misses -ge 3 ] && break
  sleep 0.1
done
as_pg "$pgbin/pg_ctl" -D "$work/standby" -w -t 60 promote >/dev/null
step "standby promoted ($(( $(now_ms) - killed )) ms after the kill)"
sleep "$after"
touch "$work/stop"
wait $client_pids 2>/dev/null || true

cat "$work"/attempts.* | sort -n >"$work/attempts"
cat "$work"/acked.* 2>/dev/null | sort -u >"$work/acked" || true
cat "$work"/captured.* 2>/dev/null | sort -u >"$work/captured" || true
acked=$(wc -l <"$work/acked")
captured=$(wc -l <"$work/captured")
# Every acknowledged payment's order, and every acknowledged capture, on the new primary.
psql -h 127.0.0.1 -p "$p2" -U postgres -d ledger -Xq <<SQL >"$work/check.txt"
CREATE TEMP TABLE acked (id text PRIMARY KEY);
CREATE TEMP TABLE captured (id text PRIMARY KEY);
\copy acked FROM '$work/acked'
\copy captured FROM '$work/captured'
\pset tuples_only on
\pset format unaligned
SELECT 'lost_payments ' || count(*) FROM acked a
  WHERE NOT EXISTS (SELECT 1 FROM ledger.events e WHERE e.stream_id = 'order-' || a.id AND e.type = 'OrderAuthorized');
SELECT 'lost_captures ' || count(*) FROM captured c
  WHERE NOT EXISTS (SELECT 1 FROM ledger.events e
                    WHERE e.stream_id LIKE 'hold-%' AND e.type = 'HoldCaptured' AND e.data->>'order_id' = c.id);
SELECT 'chain ' || ok || ' ' || checked || ' ' || coalesce(reason, '') FROM ledger.verify_chain();
SELECT 'in_recovery ' || pg_is_in_recovery();
SQL
lost=$(sed -n 's/^lost_payments //p' "$work/check.txt")
lost_captures=$(sed -n 's/^lost_captures //p' "$work/check.txt")
chain=$(sed -n 's/^chain //p' "$work/check.txt")
recovery=$(sed -n 's/^in_recovery //p' "$work/check.txt")
# Service resumed: a payment acknowledged after the kill, and /health now.
resumed_at=$(awk -v k="$killed" '$1 >= k && $3 == "pay" && $4 ~ /^2/ {print $2; exit}' "$work/attempts")
health=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$http/health" || echo 000)
after_kill=$(awk -v k="$killed" '$1 >= k && $3 == "pay"' "$work/attempts" | wc -l)
refused=$(awk -v k="$killed" '$1 >= k && $3 == "pay" && $4 !~ /^2/' "$work/attempts" | wc -l)
statuses=$(awk '$3 == "pay" {print $4}' "$work/attempts" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')
step "payments attempted: $(awk '$3 == "pay"' "$work/attempts" | wc -l) ($statuses), acknowledged: $acked, captures acknowledged: $captured"
step "after the kill: $after_kill attempts, $refused refused (503 or no answer); /health now: $health; new primary in recovery: $recovery"
step "chain on the new primary (ok, checked, reason): $chain"
# Every daemon served: the payments each one answered (its own /metrics).
served= idle=
for port in $ports; do
  count=$(curl -s -m 5 -H "Authorization: Bearer $op" "http://127.0.0.1:$port/metrics" | awk '/^http_requests_total\{/ && /route="\/payment"/ && /method="POST"/ {s += $NF} END {print s + 0}')
  served="$served${served:+, }:$port $count"
  [ "$count" -gt 0 ] || idle="$idle :$port"
done
step "payments answered by each daemon: $served"
failed=0
[ -z "$idle" ] || { echo "daemons that answered no payment:$idle (the load was not spread)"; failed=1; }
[ "${lost:-x}" = 0 ] || failed=1
[ "${lost_captures:-x}" = 0 ] || { echo "acknowledged captures lost: ${lost_captures:-unknown}"; failed=1; }
[ "${chain%% *}" = true ] || { echo "the chain does not verify: $chain"; failed=1; }
[ "$health" = 200 ] && [ -n "$resumed_at" ] || { echo "service did not resume"; tail -20 "$work"/serve-*.log; failed=1; }
[ "$recovery" = false ] || { echo "the new primary is still in recovery"; failed=1; }
if [ -n "$resumed_at" ]; then
  unavailable=$(awk -v a="$killed" -v b="$resumed_at" 'BEGIN {printf "%.2f", (b - a) / 1000}')
else
  unavailable=unbounded
fi
echo "acknowledged payments lost: ${lost:-unknown}"
echo "unavailable for: $unavailable s"
exit $failed
