#!/usr/bin/env bash
# The failover drill on Patroni (docs/high-availability.md): three etcd members, three PostgreSQL 15 nodes under
# Patroni (synchronous_mode + synchronous_mode_strict, use_pg_rewind, the ledger bootstrapped by post_bootstrap),
# HAProxy routing by Patroni's REST checks, two `ledgerd serve` behind HAProxy, curl clients paying (and capturing
# every third order) with every acknowledged (2xx) answer logged, and an auditor's feed reader logging every
# position and hash it is served. Then, one scenario after another, each under that load:
#   throughput    payments/s through one daemon on Patroni vs the embedded single node (wrk, alternating, 3 rounds)
#   node-kill     SIGKILL to the leader's whole node (Patroni, the postmaster, its children); restarted: rejoins
#   pg-kill       SIGKILL to the leader's postmaster only (Patroni alive: fails over at once, rejoins it itself)
#   switchover    patronictl switchover to the synchronous standby
#   standby-loss  SIGKILL to every standby's node; commits wait (strict) or go on alone (DRILL_STRICT=off)
#   cancelled-commit  every standby's node frozen, the commits waiting for one terminated (kept on the leader alone,
#                 visible there), then every node SIGKILLed and the standbys restarted: the synchronous one is promoted
#                 without those commits, which are lost; none was acknowledged, no feed reader was served one
#   etcd-one      SIGKILL to one etcd member: no effect
#   etcd-quorum   SIGKILL to two etcd members: the leader demotes itself, writes stop (503), resume with quorum
#   soak:N        N failovers in a row (pg-kill, switchover, node-kill in turn)
# After each failover the old leader is probed with direct writes (fencing) until it has rejoined as a replica.
# After each scenario: "acknowledged payments lost: N", "unavailable for: S s" (the longest time without an
# acknowledged payment from the fault on), the chain verified on the leader, every acknowledged capture present.
# At the end: the acknowledged-payments log and every position the feed readers got, diffed against the final chain.
# Exits 1 when anything acknowledged is missing or a check fails; cleans up after itself; every wait is bounded.
#
# Usage: deploy/patroni/drill.sh [SCENARIO ...]   (default: all but soak; `ci`: pg-kill switchover, the short form)
#   LEDGERD_BIN   the ledgerd binary (default: the newer of .build/release and .build/debug)
#   DRILL_STRICT  on (default) | off: synchronous_mode_strict (off: the standby-loss scenario shows the trade-off)
#   DRILL_ROUTE   haproxy (default): ledgerd's URL is HAProxy's leader port | url: the two-host URL, read-write
#   DRILL_READS   mixed (default): the first daemon's auditor reads on the standby (LEDGERD_READ_DATABASE_URL), the
#                 others' on the leader (their feeds bounded by the durable head); one feed reader per daemon |
#                 replica: every daemon's on the standby | primary: every daemon's on the leader
#   DRILL_CLIENTS (4), DRILL_DAEMONS (2), DRILL_MAX_SECONDS (2400: the clients stop by then whatever happens)
#   DRILL_KEEP_LOGS  set: keep the logs in /tmp/ledgerd-patroni-drill-last after a passing run too (a failed one always)
#   PHA_TTL, PHA_LOOP_WAIT, PHA_RETRY_TIMEOUT: Patroni's timing (10, 2, 4)
# Needs: PostgreSQL 15 server binaries, patroni, etcd-server, etcd-client, haproxy, jq, curl, setpriv when root;
# wrk for `throughput`.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
strict=$([ "${DRILL_STRICT:-on}" = off ] && echo false || echo true)
route=${DRILL_ROUTE:-haproxy}
reads=${DRILL_READS:-mixed}
clients=${DRILL_CLIENTS:-4}
daemons=${DRILL_DAEMONS:-2}
max_seconds=${DRILL_MAX_SECONDS:-2400}
scenarios=${*:-throughput node-kill pg-kill switchover standby-loss cancelled-commit etcd-one etcd-quorum}
[ "$scenarios" = ci ] && scenarios="pg-kill switchover cancelled-commit"

. deploy/patroni/lib.sh
work=$(mktemp -d /tmp/ledgerd-patroni-drill.XXXXXX)
chmod 711 "$work"
failed=1
serve_pids= embedded_pid= haproxy_pid=
trap pha_cleanup EXIT
trap 'exit 143' TERM INT
setup_started=$(date +%s)
pha_setup
failed=0  # from here on a failed check sets it; the logs of a failed run are kept (pha_cleanup)
started=$(date +%s)
load() { cut -d' ' -f1 /proc/loadavg; }

# --- the load: payment clients and a feed reader, each bounded in time and count ---
client() {
  local n=$1 i=0 start end status body id deadline=$((started + max_seconds))
  local payment='{"gateway":"stripe","source":"tok_visa","amount":3200,"currency":"USD","description":"Pen","shipping_contact":"Jane Appleseed","shipping_email":"jane@example.com","shipping_street":"1 Infinite Loop","shipping_city":"Cupertino","shipping_state":"CA","shipping_zip":"95014","shipping_method_name":"Standard"}'
  while [ ! -e "$work/stop" ] && [ "$i" -lt 500000 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    if [ -e "$work/pause" ]; then sleep 0.2; continue; fi
    i=$((i + 1))
    start=$(now_ms)
    body=$(curl -s -m 10 -w '\n%{http_code}' -H 'Content-Type: application/json' -H "Idempotency-Key: drill-$n-$i" \
      -d "$payment" "http://127.0.0.1:$http/payment" || echo $'\n000')
    end=$(now_ms)
    status=${body##*$'\n'}
    id=$(printf '%s' "$body" | sed -n 's/.*"order_id" *: *"\([^"]*\)".*/\1/p' | head -1)
    echo "$start $end pay $status ${id:--}" >>"$work/attempts.$n"
    if [ "${status:0:1}" = 2 ] && [ -n "$id" ]; then
      echo "$id" >>"$work/acked.$n"
      if [ $((i % 3)) = 0 ]; then
        status=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H "Authorization: Bearer $op" \
          -H "Idempotency-Key: drill-capture-$n-$i" -d '{"amount": "5.00"}' "http://127.0.0.1:$http/orders/$id/capture" || true)
        echo "$(now_ms) $(now_ms) capture $status $id" >>"$work/attempts.$n"
        [ "${status:0:1}" = 2 ] && echo "$id" >>"$work/captured.$n"
      fi
    fi
  done
}
feed_reader() {  # feed_reader PORT: GET /events of one daemon (an auditor's feed): "position hash" of every event served
  local port=$1 after=0 page next deadline=$((started + max_seconds)) i=0
  while [ ! -e "$work/stop" ] && [ "$i" -lt 200000 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    i=$((i + 1))
    # Pages of 200 with 15 s each: a page answered later than curl's limit is asked again from the same position, so
    # one that is always too slow (1,000 events within 5 s on a loaded machine) would keep the reader at position 0.
    page=$(curl -sf -m 15 -H "Authorization: Bearer $au" "http://127.0.0.1:$port/events?after=$after&limit=200" || true)
    next=$(printf '%s' "$page" | jq -r '.events // [] | last | .position // empty' 2>/dev/null || true)
    if [ -n "$next" ]; then
      # Each reader its own file: two readers appending pages to one file interleaved their lines (a run once
      # recorded 0 positions served because the diff could not read a line cut in two).
      printf '%s' "$page" | jq -r '.events[] | "\(.position) \(.hash)"' | sed "s/^/$(now_ms) /" >>"$work/feed.$port"
      after=$next
    else
      sleep 0.3
    fi
  done
}

# --- measuring ---
fed() {  # "position hash" of every event a feed reader was served (each reader's file: "ms position hash")
  local port
  for port in $ports; do { cat "$work/feed.$port" 2>/dev/null || true; } | awk 'NF == 3 {print $2, $3}'; done
}
delivered() {  # "position hash" of every delivery the webhook consumer took
  { cat "$work/webhook" 2>/dev/null || true; } | awk 'NF == 3 {print $2, $3}'
}
all_attempts() { { cat "$work"/attempts.* 2>/dev/null || true; } | sort -n -k2; }
unavailable_since() {  # unavailable_since T0_MS [T1_MS]: the longest time without an acknowledged payment in [T0, T1]
  # (T1: now by default; a stretch from the last acknowledgement to T1 counts, so a service that never came back shows)
  all_attempts | awk -v t0="$1" -v t1="${2:-$(now_ms)}" '
    $3 == "pay" && $4 ~ /^2/ && $2 > t0 && $2 <= t1 { if ($2 - last > gap) gap = $2 - last; last = $2 }
    BEGIN { last = t0; gap = 0 }
    END { if (t1 - last > gap) gap = t1 - last; printf "%.2f", gap / 1000 }'
}
gap_window() {  # gap_window T0_MS: "start end" (ms) of the longest time without an acknowledged payment from T0 on
  all_attempts | awk -v t0="$1" '
    $3 == "pay" && $4 ~ /^2/ && $2 > t0 { if ($2 - last > gap) { gap = $2 - last; from = last; to = $2 }; last = $2 }
    BEGIN { last = t0; gap = 0; from = t0; to = t0 }
    END { print from, to }'
}
acks_between() {  # payments whose request started after T0 and was acknowledged before T1
  all_attempts | awk -v t0="$1" -v t1="$2" '$3 == "pay" && $4 ~ /^2/ && $1 > t0 && $2 < t1' | wc -l
}
statuses_between() {  # the answers to the payments begun in [T0, T1] (000: no answer within curl's 10 s)
  all_attempts | awk -v t0="$1" -v t1="$2" '$3 == "pay" && $1 > t0 && $1 < t1 {print $4}' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'
}
wait_acks_after() {  # wait (bounded) until a payment is acknowledged after T_MS
  local t=$1 deadline=$(($(date +%s) + $2))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    all_attempts | awk -v t="$t" '$3 == "pay" && $4 ~ /^2/ && $1 > t {found = 1} END {exit !found}' && return 0
    sleep 0.5
  done
  return 1
}

# A loss of 0 proves something only if payments were being acknowledged when the fault came (test audit 3, item 7):
# before each fault the drill waits for a fresh acknowledgement, and after it counts what was acknowledged in the 5 s
# before the fault and what was in flight as it struck (begun before the end of its first second, answered after it
# struck: four curl clients spend part of each loop between requests, so at one instant all four can be idle); both
# must be more than 0. A switchover strikes when the old leader stops serving, not at the command (it first runs a
# checkpoint while still leading): there the fault's moment is the start of the longest stretch without an
# acknowledgement.
pre_fault() {  # pre_fault LABEL: wait (bounded) until a payment begun from now on is acknowledged
  wait_acks_after "$(now_ms)" 30 || { echo "$1: no payment acknowledged before the fault"; failed=1; }
}
at_fault() {  # at_fault LABEL FAULT_MS: FAULT_MS, the moment the fault struck
  local label=$1 t0=$2 before inflight
  before=$(all_attempts | awk -v t="$t0" '$3 == "pay" && $4 ~ /^2/ && $2 > t - 5000 && $2 <= t' | wc -l)
  inflight=$(all_attempts | awk -v t="$t0" '$3 == "pay" && $1 <= t + 1000 && $2 > t' | wc -l)
  step "$label: at the fault: $before payments acknowledged in the 5 s before it, $inflight in flight as it struck (their answers: $(all_attempts | awk -v t="$t0" '$3 == "pay" && $1 <= t + 1000 && $2 > t {print $4}' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'))"
  [ "$before" -gt 0 ] || { echo "$label: no payment acknowledged in the 5 s before the fault (a loss of 0 would prove little)"; failed=1; }
  [ "$inflight" -gt 0 ] || { echo "$label: no payment in flight as the fault struck"; failed=1; }
}

# When payments do not come back: what the acquirer's journal (in the same database) holds at its end, for the logs.
no_resume() {  # no_resume LABEL MESSAGE
  local l
  echo "$1: $2"
  failed=1
  l=$(leader_node)
  [ -n "$l" ] || return 0
  psql -h 127.0.0.1 -p "${pg_port[$l]}" -U postgres -d ledger -Xq \
    -c "SELECT seq, at_us, xmin::text, idempotency_key, status FROM acquirer.journal WHERE seq > (SELECT max(seq) - 40 FROM acquirer.journal) ORDER BY seq" \
    -c "SELECT count(*), min(seq), max(seq) FROM acquirer.journal" >"$work/check-journal-$1.txt" 2>&1 || true
}

# Every acknowledged payment and capture on the leader, and the chain verified there.
check_ledger() {  # check_ledger LABEL
  local label=$1 l
  l=$(leader_node)
  [ -n "$l" ] || { echo "$label: no leader to check on"; failed=1; return; }
  cat "$work"/acked.* 2>/dev/null | sort -u >"$work/acked" || true
  cat "$work"/captured.* 2>/dev/null | sort -u >"$work/captured" || true
  psql -h 127.0.0.1 -p "${pg_port[$l]}" -U postgres -d ledger -Xq <<SQL >"$work/check-$label.txt" 2>&1 || true
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
SQL
  [ -s "$work/check-$label.txt" ] || true
  local lost lost_captures chain
  lost=$(sed -n 's/^lost_payments //p' "$work/check-$label.txt")
  lost_captures=$(sed -n 's/^lost_captures //p' "$work/check-$label.txt")
  chain=$(sed -n 's/^chain //p' "$work/check-$label.txt")
  step "$label: on the leader node$l: $(wc -l <"$work/acked") payments and $(wc -l <"$work/captured") captures acknowledged so far; lost captures ${lost_captures:-?}; chain (ok, checked): ${chain:-?}"
  echo "acknowledged payments lost: ${lost:-unknown}"
  [ "${lost:-x}" = 0 ] || failed=1
  [ "${lost_captures:-x}" = 0 ] || { echo "$label: acknowledged captures lost: ${lost_captures:-unknown}"; failed=1; }
  [ "${chain%% *}" = true ] || { echo "$label: the chain does not verify: ${chain:-unknown}"; cat "$work/check-$label.txt"; failed=1; }
}

# Fencing: write to the old leader directly, every 200 ms, until it has rejoined as a replica (then once more).
fence_probe() {  # fence_probe NODE LABEL: "start_ms end_ms verdict" per attempt
  local n=$1 label=$2 out last=0 start
  while :; do
    [ -e "$work/fence-stop" ] && last=1
    start=$(now_ms)
    out=$(PGCONNECT_TIMEOUT=1 psql -h 127.0.0.1 -p "${pg_port[$n]}" -U postgres -d ledger -XAtq \
      -c "SET statement_timeout = '1s'" -c "INSERT INTO public.drill_fence (node) VALUES ('$label') RETURNING 'accepted'" 2>&1 || true)
    case $out in
      *"canceling wait for synchronous replication"*) echo "$start $(now_ms) accepted-locally" ;;
      *accepted*) echo "$start $(now_ms) accepted" ;;
      *"read-only transaction"*) echo "$start $(now_ms) read-only" ;;
      *"starting up"* | *"shutting down"* | *"not yet accepting"* | *"recovery mode"*) echo "$start $(now_ms) starting-or-stopping" ;;
      *"Connection refused"* | *"No such file"* | *"timeout expired"* | *"could not connect"*) echo "$start $(now_ms) refused" ;;
      *"closed the connection unexpectedly"* | *"terminating connection"*) echo "$start $(now_ms) cut-off" ;;
      *) echo "$start $(now_ms) other: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-120)" ;;
    esac
    [ "$last" = 1 ] && break
    sleep 0.2
  done >>"$work/fence-$label"
}
fence_start() { rm -f "$work/fence-stop"; fence_probe "$1" "$2" & fence_pid=$!; }
fence_finish() {  # fence_finish LABEL OLD_NODE T_NEW_MS: stop the probe, then the verdict on the attempts begun after T_NEW
  local label=$1 n=$2 t_new=$3 summary before accepted
  touch "$work/fence-stop"
  wait "$fence_pid" 2>/dev/null || true
  before=$(awk -v t="$t_new" '$1 < t && $3 ~ /^accepted/' "$work/fence-$label" | wc -l)
  summary=$(awk -v t="$t_new" '$1 >= t { $1 = ""; $2 = ""; sub(/^  /, ""); print }' "$work/fence-$label" | sort | uniq -c | awk '{c = $1; $1 = ""; printf "%s%s ×%s", sep, substr($0, 2), c; sep = ", "}')
  accepted=$(awk -v t="$t_new" '$1 >= t && $3 ~ /^accepted/' "$work/fence-$label" | wc -l)
  step "$label: fencing: node$n (the old leader) written to directly $(awk -v t="$t_new" '$1 >= t' "$work/fence-$label" | wc -l) times from the moment another node led until it had rejoined as a replica: $summary (before that, while it still led: $before accepted)"
  [ "$accepted" = 0 ] || { echo "$label: the old leader ACCEPTED a write after another node took over"; failed=1; }
  [ "$(tail -1 "$work/fence-$label" | cut -d' ' -f3)" = read-only ] || { echo "$label: the old leader's last answer was not read-only"; failed=1; }
}
until_true() {  # until_true SECONDS COMMAND…: run it every 0.5 s until it succeeds (0) or the time is up (1)
  local deadline=$(($(date +%s) + $1))
  shift
  while [ "$(date +%s)" -lt "$deadline" ]; do "$@" && return 0; sleep 0.5; done
  return 1
}
rejoined() {  # node N is back as a replica, and every node is running and streaming from the leader
  local l
  l=$(leader_node)
  [ -n "$l" ] && [ "$l" != "$1" ] && healthy
}

# --- the scenarios ---
failovers=0
declare -A unavailable_by
record() {  # record SCENARIO SECONDS
  unavailable_by[$1]="${unavailable_by[$1]:-}${unavailable_by[$1]:+ }$2"
  echo "unavailable for: $2 s"
}

scenario_kill() {  # scenario_kill node|pg LABEL
  local kind=$1 label=$2 l o t0 t_new
  wait_healthy 120 || { echo "$label: the cluster is not healthy before the scenario"; failed=1; return; }
  l=$(leader_node)
  pre_fault "$label"
  fence_start "$l" "$label"
  t0=$(now_ms)
  if [ "$kind" = node ]; then
    patroni_kill_node "$l"
    step "$label: SIGKILL to node$l whole (Patroni and PostgreSQL), the leader, under load (load $(load))"
  else
    kill -KILL "$(postmaster_pid "$l")" || true
    step "$label: SIGKILL to node$l's postmaster (the leader's PostgreSQL; Patroni alive), under load (load $(load))"
  fi
  for _ in $(seq 1 120); do o=$(leader_node); [ -n "$o" ] && [ "$o" != "$l" ] && break; sleep 0.25; done
  t_new=$(now_ms)
  [ -n "$o" ] && [ "$o" != "$l" ] || { echo "$label: no other node became the leader"; failed=1; }
  step "$label: node$o is the leader ($(( t_new - t0 )) ms after the kill)"
  wait_acks_after "$t_new" 60 || no_resume "$label" "no payment acknowledged after the failover"
  if [ "$kind" = node ]; then sleep 1; patroni_start "$l"; step "$label: Patroni restarted on node$l (it rejoins: pg_rewind)"; fi
  until_true 120 rejoined "$l" || { echo "$label: node$l did not rejoin as a replica"; failed=1; }
  step "$label: node$l rejoined as the synchronous standby ($(( $(now_ms) - t0 )) ms after the kill)"
  fence_finish "$label" "$l" "$t_new"
  failovers=$((failovers + 1))
  record "$3" "$(unavailable_since "$t0")"
  at_fault "$label" "$t0"
  check_ledger "$label"
}

scenario_switchover() {
  local label=$1 l o t0 t_new out
  wait_healthy 120 || { echo "$label: the cluster is not healthy before the scenario"; failed=1; return; }
  l=$(leader_node) o=$(sync_node)
  pre_fault "$label"
  fence_start "$l" "$label"
  t0=$(now_ms)
  out=$(patronictl -c "$work/patronictl.yml" switchover --leader "node$l" --candidate "node$o" --force 2>&1 || true)
  step "$label: patronictl switchover node$l → node$o (load $(load)): $(printf '%s' "$out" | grep -i 'switched over\|fail\|error' | head -1)"
  for _ in $(seq 1 120); do [ "$(leader_node)" = "$o" ] && break; sleep 0.25; done
  t_new=$(now_ms)
  [ "$(leader_node)" = "$o" ] || { echo "$label: node$o did not become the leader"; printf '%s\n' "$out"; failed=1; }
  wait_acks_after "$t_new" 60 || no_resume "$label" "no payment acknowledged after the switchover"
  until_true 120 rejoined "$l" || { echo "$label: node$l did not rejoin as a replica"; failed=1; }
  step "$label: node$l rejoined as the synchronous standby ($(( $(now_ms) - t0 )) ms after the command)"
  fence_finish "$label" "$l" "$t_new"
  failovers=$((failovers + 1))
  local five
  five=$(all_attempts | awk -v t0="$t0" '$1 > t0 && $4 == 500' | wc -l)
  step "$label: answers since the switchover: $(statuses_between "$t0" "$(now_ms)")(500s: $five; a 503 is an unknown outcome, safe to retry with its key)"
  [ "$five" = 0 ] || { echo "$label: 500 answers during the switchover"; failed=1; }
  local gap
  gap=$(gap_window "$t0")
  step "$label: timeline from the command: last payment acknowledged before the gap +$(( ${gap% *} - t0 )) ms, node$o leads (Patroni) +$(( t_new - t0 )) ms, first acknowledged after the gap +$(( ${gap#* } - t0 )) ms"
  record switchover "$(unavailable_since "$t0")"
  at_fault "$label" "${gap% *}"
  check_ledger "$label"
}

scenario_standby_loss() {
  local label=standby-loss l s t0 t_back alone hold=${DRILL_STANDBY_DOWN_SECONDS:-15}
  wait_healthy 120 || { echo "$label: the cluster is not healthy before the scenario"; failed=1; return; }
  l=$(leader_node)
  pre_fault "$label"
  t0=$(now_ms)
  for s in $(replica_nodes "$l"); do patroni_kill_node "$s"; done
  local t_dead
  t_dead=$(now_ms)  # every standby is dead from here on: a payment begun later cannot have been confirmed by one
  step "$label: SIGKILL to every standby's node ($(replica_nodes "$l")): node$l has none (synchronous_mode_strict: $strict; load $(load)); down for ${hold} s"
  sleep "$hold"
  t_back=$(now_ms)
  alone=$(acks_between "$t_dead" "$t_back")
  step "$label: while no standby ran: payments $(statuses_between "$t_dead" "$t_back")"
  for s in $(replica_nodes "$l"); do patroni_start "$s"; done
  until_true 120 healthy || { echo "$label: the standbys did not rejoin"; failed=1; }
  step "$label: standbys streaming again ($(( $(now_ms) - t_back )) ms after their restart)"
  wait_acks_after "$(now_ms)" 60 || no_resume "$label" "payments did not resume"
  if [ "$strict" = true ]; then
    echo "acknowledged by the primary alone: $alone (synchronous_mode_strict on: must be 0)"
    [ "$alone" = 0 ] || failed=1
  else
    echo "acknowledged by the primary alone: $alone (synchronous_mode_strict off: the documented trade-off — lost if the primary had died then)"
  fi
  record standby-loss "$(unavailable_since "$t0")"
  at_fault "$label" "$t0"
  check_ledger "$label"
}

# The invisible-commit hole (issue 30, item 4): commits the leader keeps alone, visible there, then lost by a failover.
scenario_cancelled_commit() {
  local label=cancelled-commit l o s t0 t_new head_before terminated visible lost served_lost
  wait_healthy 120 || { echo "$label: the cluster is not healthy before the scenario"; failed=1; return; }
  l=$(leader_node)
  pre_fault "$label"
  head_before=$(psql_at "${pg_port[$l]}" ledger 'SELECT position FROM ledger.head')
  t0=$(now_ms)
  # Frozen (SIGSTOP), not killed: the leader's Patroni still sees its synchronous standby connected, and keeps it the
  # one to promote; commits wait for an acknowledgement that does not come. The freeze stays well inside Patroni's ttl.
  for s in $(replica_nodes "$l"); do node_signal "$s" STOP; done
  step "$label: every standby's node frozen (SIGSTOP to $(replica_nodes "$l")); commits on node$l wait for one (head $head_before; load $(load))"
  sleep 2
  # What a pool reset, a failing-over client or an operator does to a commit that waits: its backend is terminated.
  # PostgreSQL keeps the commit on the leader, visible there, though no standby has it.
  terminated=0
  for _ in 1 2; do
    terminated=$((terminated + $(psql_at "${pg_port[$l]}" postgres "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")))
    sleep 1
  done
  psql -h 127.0.0.1 -p "${pg_port[$l]}" -U postgres -d ledger -XAtq -F ' ' \
    -c "SELECT position, encode(hash, 'hex') FROM ledger.events WHERE position > $head_before ORDER BY position" >"$work/stranded" 2>/dev/null || true
  visible=$(wc -l <"$work/stranded")
  step "$label: $terminated backends waiting for the standby terminated; on node$l alone now: $visible positions after $head_before; SIGKILL to every node (the standbys' unread WAL with them), the standbys restarted"
  fence_start "$l" "$label"
  patroni_kill_node "$l"
  for s in $(replica_nodes "$l"); do patroni_kill_node "$s"; done
  for s in $(replica_nodes "$l"); do patroni_start "$s"; done
  o=
  for _ in $(seq 1 160); do o=$(leader_node); [ -n "$o" ] && [ "$o" != "$l" ] && break; sleep 0.25; done
  t_new=$(now_ms)
  [ -n "$o" ] && [ "$o" != "$l" ] || { echo "$label: no other node became the leader"; failed=1; patroni_start "$l"; return; }
  step "$label: node$o is the leader ($(( t_new - t0 )) ms after the freeze)"
  wait_acks_after "$t_new" 60 || no_resume "$label" "no payment acknowledged after the failover"
  sleep 1; patroni_start "$l"
  until_true 120 rejoined "$l" || { echo "$label: node$l did not rejoin as a replica"; failed=1; }
  fence_finish "$label" "$l" "$t_new"
  failovers=$((failovers + 1))
  # The stranded positions against the new leader's chain, and against what every feed reader was served.
  { fed; delivered; } >"$work/feed.now"
  psql -h 127.0.0.1 -p "${pg_port[$o]}" -U postgres -d ledger -Xq <<SQL >"$work/check-$label.txt" 2>&1 || true
CREATE TEMP TABLE stranded (position bigint, hash text);
CREATE TEMP TABLE served (position bigint, hash text);
\copy stranded FROM '$work/stranded' WITH (DELIMITER ' ')
\copy served FROM '$work/feed.now' WITH (DELIMITER ' ')
\pset tuples_only on
\pset format unaligned
CREATE TEMP TABLE lost AS SELECT s.* FROM stranded s
  WHERE NOT EXISTS (SELECT 1 FROM ledger.events e WHERE e.position = s.position AND encode(e.hash, 'hex') = s.hash);
SELECT 'lost ' || count(*) FROM lost;
SELECT 'served_lost ' || count(*) FROM lost JOIN served USING (position, hash);
SQL
  lost=$(sed -n 's/^lost //p' "$work/check-$label.txt")
  served_lost=$(sed -n 's/^served_lost //p' "$work/check-$label.txt")
  step "$label: of the $visible positions node$l held alone, ${lost:-?} are not in the new leader's chain (lost with the failover; none was acknowledged); served to a feed reader or the webhook consumer: ${served_lost:-?}"
  [ "${served_lost:-x}" = 0 ] || { echo "$label: a feed or webhook served a commit the failover took back"; cat "$work/check-$label.txt"; failed=1; }
  record cancelled-commit "$(unavailable_since "$t0")"
  at_fault "$label" "$t0"
  check_ledger "$label"
}

scenario_etcd_one() {
  local label=etcd-one t0 gap
  wait_healthy 120 || { echo "$label: the cluster is not healthy before the scenario"; failed=1; return; }
  pre_fault "$label"
  t0=$(now_ms)
  etcd_kill 1
  step "$label: SIGKILL to etcd member e1 (load $(load)); 10 s"
  sleep 10
  local l1
  l1=$(leader_node)
  etcd_start 1
  gap=$(unavailable_since "$t0")
  step "$label: leader throughout: node${l1:-none}; payments $(statuses_between "$t0" "$(now_ms)")"
  for _ in $(seq 1 60); do ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints)" endpoint health >/dev/null 2>&1 && break; sleep 0.5; done
  record etcd-one "$gap"
  at_fault "$label" "$t0"
  check_ledger "$label"
}

scenario_etcd_quorum() {
  local label=etcd-quorum t0 t_demoted t_back l sampler r1 r2 both after hold=${DRILL_QUORUM_DOWN_SECONDS:-10}
  wait_healthy 120 || { echo "$label: the cluster is not healthy before the scenario"; failed=1; return; }
  l=$(leader_node)
  : >"$work/roles"
  rm -f "$work/roles-stop"
  (  # every 250 ms: is each node a primary (in recovery: f)? Two at once would be split brain.
    while [ ! -e "$work/roles-stop" ]; do
      line=$(now_ms)
      for n in $nodes; do line="$line $(psql_at "${pg_port[$n]}" postgres 'SELECT pg_is_in_recovery()' 2>/dev/null || echo down)"; done
      echo "$line"
      sleep 0.25
    done >>"$work/roles"
  ) &
  sampler=$!
  pre_fault "$label"
  t0=$(now_ms)
  etcd_kill 2
  etcd_kill 3
  step "$label: SIGKILL to etcd members e2 and e3: no quorum (load $(load))"
  t_demoted=
  for _ in $(seq 1 120); do
    if [ "$(psql_at "${pg_port[$l]}" postgres 'SELECT pg_is_in_recovery()' 2>/dev/null)" != f ]; then t_demoted=$(now_ms); break; fi
    sleep 0.25
  done
  [ -n "$t_demoted" ] || { echo "$label: the leader node$l did not demote itself without etcd"; failed=1; t_demoted=$(now_ms); }
  step "$label: node$l demoted itself $(( t_demoted - t0 )) ms after quorum was lost; holding ${hold} s"
  sleep "$hold"
  after=$(acks_between "$((t_demoted + 500))" "$(now_ms)")
  t_back=$(now_ms)
  etcd_start 2
  etcd_start 3
  step "$label: e2 and e3 restarted; payments while without quorum after the demotion: $after ($(statuses_between "$t_demoted" "$t_back"))"
  [ "$after" = 0 ] || { echo "$label: payments were acknowledged with no leader"; failed=1; }
  until_true 120 healthy || { echo "$label: no healthy cluster after quorum returned"; failed=1; }
  wait_acks_after "$t_back" 60 || no_resume "$label" "payments did not resume"
  touch "$work/roles-stop"; wait "$sampler" 2>/dev/null || true
  both=$(awk '{ p = 0; for (i = 2; i <= NF; i++) if ($i == "f") p++; if (p > 1) print }' "$work/roles" | wc -l)
  step "$label: leader again: node$(leader_node), service back $(( $(now_ms) - t_back )) ms after quorum returned; samples with two primaries: $both of $(wc -l <"$work/roles")"
  [ "$both" = 0 ] || { echo "$label: SPLIT BRAIN: two primaries at once"; failed=1; }
  [ "$(wc -l <"$work/roles")" -gt 0 ] || { echo "$label: the roles were never sampled"; failed=1; }
  record etcd-quorum "$(unavailable_since "$t0")"
  at_fault "$label" "$t0"
  check_ledger "$label"
}

# Payments/s through one daemon on Patroni (synchronous standby) vs the embedded single node, alternating.
scenario_throughput() {
  command -v wrk >/dev/null || { echo "throughput: wrk is not installed (apt-get install -y wrk): skipped"; return; }
  local seconds=${DRILL_BENCH_SECONDS:-10} round eport out rate p e
  eport=$((base + 60))
  env -u LEDGERD_DATABASE_URL -u LEDGERD_READ_DATABASE_URL LEDGERD_DATA_DIR="$work/embedded" \
    "$bin" serve --host 127.0.0.1 --port "$eport" >"$work/embedded.log" 2>&1 &
  embedded_pid=$!
  for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$eport/health" >/dev/null && break; sleep 0.25; done
  curl -sf "http://127.0.0.1:$eport/health" >/dev/null || { echo "throughput: the embedded daemon did not start"; tail -20 "$work/embedded.log"; failed=1; return; }
  env -u LEDGERD_DATABASE_URL -u LEDGERD_READ_DATABASE_URL LEDGERD_DATA_DIR="$work/embedded" "$bin" catalog import "$work/stock.json" >/dev/null
  for round in 1 2 3; do
    for target in patroni embedded; do
      port=$([ "$target" = patroni ] && echo $ports | cut -d' ' -f1 || echo "$eport")
      out=$(wrk -t2 -c8 -d"${seconds}s" --latency -s "$repo/bench/payments.lua" "http://127.0.0.1:$port" 2>&1 | grep '^payments/s' || true)
      # 2xx payments per second: the script's rate less its non-2xx share
      rate=$(printf '%s' "$out" | awk '{r = $2; n = $(NF - 2); t = $NF; printf "%.0f", (t > 0) ? r * (t - n) / t : 0}')
      echo "throughput round $round $target: ${rate:-0} payments/s ($out; load $(load))" | tee -a "$work/throughput"
    done
  done
  kill -TERM "$embedded_pid" || true; wait "$embedded_pid" 2>/dev/null || true; embedded_pid=
  p=$(awk '/ patroni: / {print $5}' "$work/throughput" | sort -n | sed -n 2p)
  e=$(awk '/ embedded: / {print $5}' "$work/throughput" | sort -n | sed -n 2p)
  echo "payments/s, median of 3: Patroni with a synchronous standby $p, embedded single node $e: $(awk -v p="$p" -v e="$e" 'BEGIN {printf "%.0f %%", (e > 0) ? 100 * p / e : 0}')"
}

# The throughput rounds run before the clients (they would share the two cores); the faults run under load.
case " $scenarios " in *" throughput "*) scenario_throughput ;; esac
load_pids=
# A webhook consumer (webhook_receiver.py): registered on the daemons for the money events, it checks every
# delivery's signature and logs "received_ms position hash"; at the end each position is diffed like the feeds'.
hook_port=$((base + 70))
(umask 077; secret >"$work/hook-secret"; printf '{"url": "http://127.0.0.1:%s/hook", "secret": "%s", "types": ["OrderAuthorized", "HoldCaptured"]}' \
  "$hook_port" "$(cat "$work/hook-secret")" >"$work/hook-registration.json")
/usr/bin/env python3 "$repo/deploy/patroni/webhook_receiver.py" "$hook_port" "$work/hook-secret" "$work/webhook" "$work/stop" "$max_seconds" &
load_pids="$load_pids $!"
for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$hook_port/" && break; sleep 0.25; done
hook=$(curl -s -m 10 -w '\n%{http_code}' -H "Authorization: Bearer $op" -H 'Content-Type: application/json' \
  -d @"$work/hook-registration.json" "http://127.0.0.1:$http/webhooks" || echo $'\n000')
rm -f "$work/hook-registration.json"
[ "${hook##*$'\n'}" = 201 ] || [ "${hook##*$'\n'}" = 200 ] || { echo "the drill's webhook was not registered: $hook"; failed=1; }
step "webhook consumer on :$hook_port registered ($(printf '%s' "$hook" | head -1 | jq -r '.id // .webhook.id // "?"' 2>/dev/null))"
for n in $(seq 1 "$clients"); do client "$n" & load_pids="$load_pids $!"; done
for port in $ports; do feed_reader "$port" & load_pids="$load_pids $!"; done
sleep 4
for s in $scenarios; do
  case $s in
    throughput) ;;
    node-kill) scenario_kill node node-kill node-kill ;;
    pg-kill) scenario_kill pg pg-kill pg-kill ;;
    switchover) scenario_switchover switchover ;;
    standby-loss) scenario_standby_loss ;;
    cancelled-commit) scenario_cancelled_commit ;;
    etcd-one) scenario_etcd_one ;;
    etcd-quorum) scenario_etcd_quorum ;;
    soak:*)
      for i in $(seq 1 "${s#soak:}"); do
        case $((i % 3)) in
          1) scenario_kill pg "soak-$i-pg-kill" pg-kill ;;
          2) scenario_switchover "soak-$i-switchover" ;;
          0) scenario_kill node "soak-$i-node-kill" node-kill ;;
        esac
        [ $(( $(date +%s) - started )) -lt $((max_seconds - 120)) ] || { echo "soak: stopped after $i failovers (DRILL_MAX_SECONDS)"; break; }
      done ;;
    *) echo "unknown scenario: $s"; failed=1 ;;
  esac
done

# --- the end: stop the load, then the whole log against the final chain ---
sleep 2
touch "$work/stop"
wait $load_pids 2>/dev/null || true
wait_healthy 60 || true
check_ledger final
l=$(leader_node)
[ -n "$l" ] || { echo "no leader at the end"; failed=1; l=1; }
# Every position a consumer got (the feed readers' and the webhook's "position hash" lines), against the final chain.
against_chain() {  # against_chain NAME [SQL]: stdin's lines diffed on the leader; sets seen missing other twice extra
  local name=$1 check="$work/check-$1.txt"
  sort -n -u >"$work/$name.sorted"
  psql -h 127.0.0.1 -p "${pg_port[$l]}" -U postgres -d ledger -Xq <<SQL >"$check" 2>&1 || true
CREATE TEMP TABLE seen (position bigint, hash text);
\copy seen FROM '$work/$name.sorted' WITH (DELIMITER ' ')
\pset tuples_only on
\pset format unaligned
SELECT 'seen ' || count(DISTINCT position) FROM seen;
SELECT 'missing ' || count(*) FROM seen s WHERE NOT EXISTS (SELECT 1 FROM ledger.events e WHERE e.position = s.position);
SELECT 'other ' || count(*) FROM seen s JOIN ledger.events e USING (position) WHERE encode(e.hash, 'hex') <> s.hash;
SELECT 'twice ' || count(*) FROM (SELECT position FROM seen GROUP BY position HAVING count(DISTINCT hash) > 1) x;
SELECT 'extra ' || (${2:-SELECT 0});
SQL
  seen=$(sed -n 's/^seen //p' "$check") missing=$(sed -n 's/^missing //p' "$check") other=$(sed -n 's/^other //p' "$check")
  twice=$(sed -n 's/^twice //p' "$check") extra=$(sed -n 's/^extra //p' "$check")
  ! grep -q ERROR "$check" || { echo "$name: the diff did not run"; cat "$check"; failed=1; }
  [ "${seen:-0}" -gt 0 ] || { echo "$name: nothing was received"; failed=1; }
  [ "${missing:-x}" = 0 ] && [ "${other:-x}" = 0 ] && [ "${twice:-x}" = 0 ] && [ "${extra:-x}" = 0 ] ||
    { echo "$name: positions the final chain does not hold as received"; cat "$check"; failed=1; }
}
against_chain feed < <(fed)  # not in a pipeline: its variables and verdict must reach this shell
step "feed readers (/events of each daemon, reads: ${reads}): ${seen:-?} positions served; not in the final chain: ${missing:-?}; other contents than the final chain: ${other:-?}; one position served twice differently: ${twice:-?}; final head $(psql_at "${pg_port[$l]}" ledger 'SELECT max(position) FROM ledger.events' 2>/dev/null || echo '?')"
# The webhook consumer's deliveries the same way, also: only the subscribed types, none refused for its signature or body.
against_chain webhook "SELECT count(*) FROM seen s JOIN ledger.events e USING (position) WHERE e.type NOT IN ('OrderAuthorized', 'HoldCaptured')" < <(delivered)
hbad=$({ cat "$work/webhook.bad" 2>/dev/null || true; } | wc -l)
step "webhook consumer: ${seen:-?} positions delivered ($(wc -l <"$work/webhook" 2>/dev/null || echo 0) deliveries, at least once); not in the final chain: ${missing:-?}; other contents: ${other:-?}; one position delivered twice differently: ${twice:-?}; of a type not subscribed: ${extra:-?}; refused (bad signature or body): $hbad"
[ "$hbad" = 0 ] || { echo "the webhook consumer refused $hbad deliveries (signature or body)"; failed=1; }
statuses=$(all_attempts | awk '$3 == "pay" {print $4}' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')
step "payments attempted: $(all_attempts | awk '$3 == "pay"' | wc -l) ($statuses); failovers: $failovers; load $(load); $(( $(date +%s) - started )) s"
five=$(all_attempts | awk '$4 == 500' | wc -l)
[ "$five" = 0 ] || { echo "500 answers: $five"; failed=1; }
for s in "${!unavailable_by[@]}"; do echo "unavailable for, $s: ${unavailable_by[$s]} s"; done
if [ "$failed" != 0 ]; then echo "drill: FAILED"; exit 1; fi
echo "drill: passed"
