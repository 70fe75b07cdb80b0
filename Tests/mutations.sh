#!/usr/bin/env bash
# Mutation check: applies deliberate bugs one at a time, builds, runs the tests that should notice, and prints for each
# whether the suite caught it and the first test that failed. Every file it touches is restored afterwards, also when
# it fails or is interrupted. docs/mutations.md holds the table of the last full run.
#
#   bash Tests/mutations.sh                      # all mutations (an incremental build and a test run each)
#   bash Tests/mutations.sh stock-version ...    # only the named ones
#   bash Tests/mutations.sh --list               # the names, one a line
#   MUTATIONS_CHECK=1 bash Tests/mutations.sh    # only check that every mutation still applies (no build: seconds)
#   MUTATIONS_SUBSET=2 bash Tests/mutations.sh   # CI's form: 2 mutations, the next 2 each day (rotating by the day
#                                                # of the year, so every mutation runs within a couple of weeks)
#   MUTATIONS_TIME_LIMIT=900 ...                 # start no mutation after that many seconds (the rest: "skipped")
#   SWIFTPM_FLAGS=--ignore-lock bash Tests/mutations.sh   # extra flags for swift build / swift test
#   MUTATIONS_SIMULATE=10 bash Tests/mutations.sh NAME ... # the simulator's score instead of the tests': builds
#                                                # `ledgerd` with the mutation and runs `ledgerd simulate --seed S` for
#                                                # S = 1 … 10 (MUTATIONS_SIMULATE_OPERATIONS each, 2,000 by default)
#                                                # until one fails: "caught (seed S)" or "NOT caught" in that many seeds
#
# A mutation is "caught" when its tests fail; "NOT caught" when they pass; "not applied" when its text was not found
# (the code changed: update this file; a file that moved is found again by the text); "build failed" when the mutant
# does not compile. Each is reported as it happens and the next mutation still runs.
# The exit status is 0 only when every mutation that ran was caught ("skipped" for time fails nothing).
set -uo pipefail
cd "$(dirname "$0")/.."

flags="${SWIFTPM_FLAGS:-}"
backup="$(mktemp -d)"
touched=()

restore() {
  for file in "${touched[@]}"; do cp "$backup/$(echo "$file" | tr / _)" "$file"; done
  touched=()
}
cleanup() {
  restore
  rm -rf "$backup"
}
trap cleanup EXIT
# A signal (CI's time limit) ends the build or test in flight too, then restores the files: bash runs a trap only once
# its foreground command ends, so each one runs in the background and is waited for (`wait` returns at a signal).
child=
trap '[[ -n "$child" ]] && kill "$child" 2>/dev/null; exit 130' INT TERM
in_background() {
  "$@" &
  child=$!
  wait "$child"
  local status=$?
  child=
  return $status
}

# The one file under Sources/ or sql/ holding $OLD (empty when none or several).
find_by_text() {
  python3 -c '
import os
old = os.environ["OLD"]
hits = []
for top in ("Sources", "sql"):
    for directory, _, files in os.walk(top):
        for name in files:
            path = os.path.join(directory, name)
            try:
                if old in open(path, encoding="utf-8").read():
                    hits.append(path)
            except (UnicodeDecodeError, OSError):
                pass
print(hits[0] if len(hits) == 1 else "")
'
}

# mutate FILE OLD NEW: replaces the first occurrence of OLD (literal text) with NEW; fails when absent. When FILE is
# gone (moved to another module), the one file under Sources/ or sql/ holding OLD is mutated instead.
mutate() {
  local file="$1" old="$2" new="$3"
  if [[ ! -f "$file" ]]; then
    local found
    found="$(OLD="$old" find_by_text)"
    [[ -n "$found" ]] || return 1
    echo "   ($file moved: mutating $found)" >&2
    file="$found"
  fi
  if [[ ! " ${touched[*]-} " == *" $file "* ]]; then
    cp "$file" "$backup/$(echo "$file" | tr / _)"
    touched+=("$file")
  fi
  OLD="$old" NEW="$new" python3 -c '
import os, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
old, new = os.environ["OLD"], os.environ["NEW"]
if old not in text:
    sys.exit(1)
open(path, "w", encoding="utf-8").write(text.replace(old, new, 1))
' "$file"
}

# describe NAME DESCRIPTION FILTER [ENV=VALUE …]: what a mutation says about itself, before it mutates.
describe() {
  name="$1" description="$2" filter="$3"
  shift 3
  environment=("$@")
}

# Each mutation is a function `mutation_<name with _>`: it describes itself, then mutates (status 0: applied).

# 1. The payment's plan appends to the product stream at any version: two payments decided on the
#    same stock both commit (an oversell across daemons).
mutation_stock_version() {
  describe stock-version "drop the stock version from the payment's plan" "PaymentFlowTests|StockInvariantPropertyTests|TwoDaemonsTests"
  mutate Sources/LedgerCore/Domain/PaymentFlow.swift \
    "expectedVersion: PlannedAppend.expectation(forVersion: product.version)," \
    "expectedVersion: .any,"
}

# 2. A final capture keeps the rest of the hold open instead of releasing it.
mutation_final_capture_remainder() {
  describe final-capture-remainder "keep the remainder open after a final capture" "HoldLifecyclePropertyTests" LEDGER_HOLD_SEQUENCES=5000
  mutate Sources/LedgerCore/Domain/HoldLifecycle.swift \
    "let released = response.isFinal ? hold.balance.open.minus(response.amount) : .zero(response.amount.currency)" \
    "let released = Money.zero(response.amount.currency)"
}

# 3. The Swift verifier no longer checks that prev_hash is the previous event's hash.
mutation_verifier_prev_hash() {
  describe verifier-prev-hash "skip the prev_hash check in the Swift chain verifier" "ImmutabilityTests|AuditQueriesTests"
  mutate Sources/LedgerPostgres/ChainVerifier.swift \
    "guard prevHash.elementsEqual(prev) else { return (position, .prevHashMismatch, end) }" \
    ""
}

# 4. The SQL verifier no longer checks prev_hash either (ledger.verify_chain as sql/0017 last defines it).
mutation_sql_verifier_prev_hash() {
  describe sql-verifier-prev-hash "skip the prev_hash check in the SQL chain verifier" "ImmutabilityTests|AuditQueriesTests"
  mutate sql/0017_chain_stored_text.sql \
    "WHEN l.prev_hash <> l.prev THEN 'prev_hash is not the hash of the previous event'" \
    "WHEN false THEN 'prev_hash is not the hash of the previous event'"
}

# 5. A replayed Apple Pay transaction is accepted: neither the early check nor the marker stream's
#    "no stream yet" expectation stops the second use.
mutation_applepay_replay() {
  describe applepay-replay "accept a replayed Apple Pay transaction" "ApplePayPaymentTests"
  mutate Sources/LedgerServices/Payments/PaymentService+ApplePay.swift \
    "if let earlier = try await aggregates.store.readStream(accepted.genuine.markerStream).first {" \
    "if let earlier = try await aggregates.store.readStream(accepted.genuine.markerStream).first, earlier.position < 0 {" &&
    mutate Sources/LedgerServices/Payments/PaymentService+ApplePay.swift \
      "            streamID: genuine.markerStream,
            expectedVersion: .noStream," \
      "            streamID: genuine.markerStream,
            expectedVersion: .any,"
}

# 6. A closed batch records its items but leaves them open: the next day's batch takes them again.
mutation_settlement_takes_settled() {
  describe settlement-takes-settled "let a second settlement take a settled capture" "SettlementRunTests|SettlementMembershipSQLTests"
  mutate sql/0010_create_rule_functions.sql \
    "        DELETE FROM ledger.settlement_open_items o
        WHERE ledger.settlement_batch_takes(o, v_opened ->> 'currency', (v_opened ->> 'pinned_position')::bigint,
                                            (v_opened ->> 'cut_off_at')::timestamptz)
        RETURNING o.position, o.kind, o.amount_minor" \
    "        SELECT o.position, o.kind, o.amount_minor FROM ledger.settlement_open_items o
        WHERE ledger.settlement_batch_takes(o, v_opened ->> 'currency', (v_opened ->> 'pinned_position')::bigint,
                                            (v_opened ->> 'cut_off_at')::timestamptz)"
}

# 7. The chain verifiers stop at ledger.head again (the blind spot sql/0011 closed), in Swift.
mutation_verifier_stops_at_head() {
  describe verifier-stops-at-head "the Swift verifier stops at the head (events beyond it unchecked)" "ImmutabilityTests"
  mutate Sources/LedgerPostgres/ChainVerifier.swift \
    "let end = max(head.position, lastStored)" \
    "let end = head.position"
}

# 8. The writer's batch decides each command on the states before the batch, not on what the commands ahead of
#    it left: ten payments for one product in one batch would be one sale and nine conflicts (the hot-product
#    throughput the batch decisions exist for), and the remembered states would skip sales.
mutation_batch_decisions_successive() {
  describe batch-decisions-successive "decide a batch's commands on the states before the batch" "CommandDecisionsTests|LedgerWriterTests"
  mutate Sources/LedgerEngine/Commands/CommandDecisions.swift \
    "            states.merge(after)" \
    "            _ = after"
}

# 9. A refusal decided on a remembered state stands: a product restocked by another process stays "out of stock"
#    here until something else refreshes it.
mutation_refusal_on_remembered_state() {
  describe refusal-on-remembered-state "let a refusal on a remembered state stand without a fresh read" "CommandDecisionsTests|LedgerWriterTests"
  mutate Sources/LedgerEngine/Commands/CommandDecisions.swift \
    "        let refreshable = untrusted.isEmpty ? nil : command.reads.filtered(Set(untrusted))" \
    "        let refreshable: AggregateKeys? = nil"
}

# 10. After a conflict the writer reads fresh only the streams the database named, and decides on the others as
#     remembered: a shipment decided on a fresh order beside a hold missing its refund (write skew on a stream
#     the command reads but does not append to).
mutation_command_reads_mixed() {
  describe command-reads-mixed "read fresh only the stale streams of a command, not all its reads" "LedgerWriterTests"
  mutate Sources/LedgerEngine/LedgerWriter.swift \
    "        let all = Set(streams)
        return (try await source.states(keys, fresh: all), keys, all)" \
    "        let stale = Set(zip(streams, zip(states.versions(of: keys), seen)).compactMap { (\$1.0 ?? 0) < (\$1.1 ?? 0) ? \$0 : nil })
        return (try await source.states(keys, fresh: stale), keys, stale)"
}

# 11. The dispute workflow forgets the order's other disputes when it says what is disputable: two chargebacks
#     could claim the same captured money.
mutation_dispute_claims_twice() {
  describe dispute-claims-twice "let a dispute claim money another dispute of the order already claims" "DisputeWorkflowTests|DisputeTests"
  mutate Sources/LedgerCore/Domain/DisputeWorkflow.swift \
    "        let claimed = others.filter { \$0.status != .won }" \
    "        let claimed = others.filter { _ in false }"
}

# 12. The payment workflow forgets to resolve an unknown outcome (91/96) on the spot: the shopper is answered
#     "not charged" while the acquirer may hold the money, until the recovery sweep comes round.
mutation_payment_unknown_unresolved() {
  describe payment-unknown-unresolved "answer an unknown authorization outcome without asking the acquirer" "PaymentWorkflowTests"
  mutate Sources/LedgerCore/Domain/PaymentWorkflow.swift \
    "        if response.responseCode.isUnknownOutcome { return .recover(order.id) }" \
    "        if response.responseCode.isUnknownOutcome && false { return .recover(order.id) }"
}

# 13. The hold workflow drops the call's note when the acquirer cannot be reached: an operation the acquirer applied
#     and the ledger never heard of is lost to recovery.
mutation_hold_note_dropped() {
  describe hold-note-dropped "drop a hold call's note when the acquirer gave no answer" "HoldWorkflowTests"
  mutate Sources/LedgerCore/Domain/HoldWorkflow.swift \
    "        case .unreachable: return .fail(.acquirerUnavailable)" \
    "        case .unreachable: return .abandon(.acquirerUnavailable)"
}

# 14. The runner gives a dispute command up after a moved stream instead of preparing it again on fresh reads.
mutation_dispute_no_retry() {
  describe dispute-no-retry "end a dispute command at its first version conflict" "DisputeRunTests|DisputeTests"
  mutate Sources/LedgerEngine/AggregateStore.swift \
    "                guard let outcome = try await attempt(command.command) else { continue }" \
    "                guard let outcome = try await attempt(command.command) else { throw Contended() }"
}

# 15. The transparency log stops building when another builder holds the tree: a checkpoint is signed below the head.
mutation_checkpoint_below_head() {
  describe checkpoint-below-head "sign a checkpoint without waiting for another builder of the tree" "TransparencyLogTests/aCheckpointWaitsForAnotherBuilder"
  mutate Sources/LedgerServices/Audit/TransparencyLog.swift \
    "            covered = try await tiles.extend(maximumTiles: batch, wait: true)" \
    "            covered = try await tiles.extend(maximumTiles: batch, wait: false); if covered < needed { break }"
}

# 16. The pool waits for ever for a statement's answer: one sent as its connection died is never answered (N5).
mutation_no_statement_deadline() {
  describe no-statement-deadline "wait for a statement's answer without the pool's deadline" "StatementDeadlineTests|OutageLoopTests"
  mutate Sources/LedgerPostgres/DatabaseClient.swift \
    "        guard let statementDeadline else {" \
    "        guard let statementDeadline, false else {"
}

# 17. A capture, increment, void or refund goes through without an Idempotency-Key: a retry applies it twice.
mutation_no_idempotency_requirement() {
  describe no-idempotency-requirement "apply a capture, increment, void or refund without an Idempotency-Key" "HoldTests/theOperationsThatMoveMoneyRequireAnIdempotencyKey"
  mutate Sources/LedgerHTTP/HoldRoutes.swift \
    "if key == nil, kind.requiresIdempotencyKey {" \
    "if key == nil, kind.requiresIdempotencyKey, false {"
}

# 18. The memory the last expensive request freed is kept (the process's footprint only grows).
mutation_no_memory_return() {
  describe no-memory-return "keep the memory the last expensive request freed" "ExpensiveRequestLimitTests"
  mutate Sources/LedgerHTTP/ExpensiveRequestLimit.swift \
    "                whenIdle()" \
    "                _ = whenIdle"
}

# 19. The console's POST routes take any CSRF token (or none): another site's form acts in an operator's session.
mutation_console_csrf() {
  describe console-csrf "accept a console POST whatever its CSRF token" "ConsoleRouteWalkTests"
  mutate Sources/LedgerHTTP/Console/ConsoleRoutes.swift \
    'guard let token = form["csrf_token"], ConsoleSessions.tokensEqual(token, signedIn.session.csrfToken) else {' \
    'guard let token = Optional(form["csrf_token"] ?? ""), ConsoleSessions.tokensEqual(token, token) else {'
}

# 20. The console's escaping lets `<` through: a product name or dispute reason becomes markup in an operator's page.
mutation_console_escape() {
  describe console-escape "write < unescaped into console pages" "ConsoleHostileDataTests"
  mutate Sources/LedgerHTTP/Console/ConsoleHTML.swift \
    'case 0x3C: out.append(contentsOf: "&lt;".utf8)' \
    'case 0x3C: out.append(byte)'
}

# 20b. A console session outlives its 8 hours: a stolen cookie works for ever.
mutation_console_session_expiry() {
  describe console-session-expiry "keep a console session past its 8 hours" "ConsoleRouteWalkTests"
  mutate Sources/LedgerHTTP/Console/ConsoleSessions.swift \
    "            guard session.expiresAt > now else {" \
    "            guard session.expiresAt > now || true else {"
}

# 21. Consumers are served the committed head, not the durable one: an event a failover takes back is seen.
mutation_durable_head() {
  describe durable-head "serve consumers the committed head instead of the durable one" "DurableHeadTests"
  mutate Sources/LedgerPostgres/Feeds/HeadWatcher.swift \
    "        return min(committed, head)" \
    "        return committed"
}

# 22. The webhook dispatcher claims an endpoint without its row lock: two daemons deliver the same events.
mutation_webhook_claim() {
  describe webhook-claim "claim a due webhook endpoint without locking it" "WebhookTests"
  mutate Sources/LedgerPostgres/Feeds/WebhookStore.swift \
    "ORDER BY w.next_attempt_at LIMIT 1 FOR UPDATE OF w SKIP LOCKED" \
    "ORDER BY w.next_attempt_at LIMIT 1"
}

# 23. The witness cosigns a checkpoint whatever its consistency proof: a fork or a rewritten log is cosigned.
mutation_witness_consistency() {
  describe witness-consistency "cosign a checkpoint without checking its consistency proof" "WitnessDeciderTests|WitnessTests"
  mutate Sources/LedgerCore/Transparency/Witness.swift \
    "            try MerkleProof.verifyConsistency(" \
    "            _ = try? MerkleProof.verifyConsistency("
}

# 24. The supervised acquirer service runs without the ledger's database deadline (its own default, 32 s): after a
#     PostgreSQL kill a statement sent as its connection died holds a payment far past the ledger's deadline.
mutation_acquirer_deadline() {
  describe acquirer-deadline "start the supervised acquirer without --database-deadline-milliseconds" "AcquirerOutageTests"
  mutate Sources/LedgerApp/AcquirerSupervisor.swift \
    "        if let databaseDeadline {" \
    "        if let databaseDeadline, false {"
}

# 26. A shipment sells nothing: the order ships and stops holding its stock, but the product keeps the reservation (issue
#     56's negative control: the simulator's stock check, which sums the orders' lines against the product's figures).
mutation_ship_keeps_reservation() {
  describe ship-keeps-reservation "a shipment leaves the product's reservation instead of selling it" "SimulatorTests"
  mutate Sources/LedgerCore/Domain/HoldLifecycle.swift \
    "            stock = .sell(order: order.id, quantity: nil)" \
    "            stock = nil"
}

# 27. A replayed hold operation is answered from the order and hold as they stand now, not as the first request left
#     them: a capture replayed after a refund answers the refund's balance (the simulator's replay check).
mutation_hold_replay_answers_now() {
  describe hold-replay-answers-now "answer a replayed hold operation from the order as it stands now" "SimulatorTests"
  mutate Sources/LedgerServices/Holds/HoldService.swift \
    "readStreams([orderID.streamID, orderID.holdStreamID], through: appended.upperBound)" \
    "readStreams([orderID.streamID, orderID.holdStreamID], through: Int64.max)"
}

all=(
  stock-version final-capture-remainder verifier-prev-hash sql-verifier-prev-hash applepay-replay settlement-takes-settled
  verifier-stops-at-head batch-decisions-successive refusal-on-remembered-state command-reads-mixed dispute-claims-twice
  payment-unknown-unresolved hold-note-dropped dispute-no-retry checkpoint-below-head no-statement-deadline
  no-idempotency-requirement no-memory-return console-csrf console-escape console-session-expiry durable-head webhook-claim witness-consistency
  acquirer-deadline ship-keeps-reservation hold-replay-answers-now
)

if [[ "${1-}" == "--list" ]]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi

selected=("$@")
if [[ ${#selected[@]} -eq 0 ]]; then
  selected=("${all[@]}")
  if [[ -n "${MUTATIONS_SUBSET:-}" ]]; then
    # The day of the year picks where today's subset starts: consecutive days take consecutive slices.
    size="$MUTATIONS_SUBSET" day=$((10#$(date -u +%j)))
    selected=()
    for ((i = 0; i < size && i < ${#all[@]}; i++)); do selected+=("${all[$(((day * size + i) % ${#all[@]}))]}"); done
  fi
fi

names=()
descriptions=()
results=()
caught_by=()
started=$(date +%s)
limit="${MUTATIONS_TIME_LIMIT:-0}"

record() {
  names+=("$name")
  descriptions+=("$description")
  results+=("$1")
  caught_by+=("$2")
  echo "== $name: $1${2:+ ($2)}" >&2
}

for wanted in "${selected[@]}"; do
  fn="mutation_${wanted//-/_}"
  if ! declare -F "$fn" >/dev/null; then
    name="$wanted" description="(no such mutation)"
    record "unknown" ""
    continue
  fi
  if [[ "$limit" -gt 0 && $(($(date +%s) - started)) -ge "$limit" ]]; then
    "$fn" >/dev/null 2>&1 || true
    restore
    record "skipped" "time limit"
    continue
  fi
  if ! "$fn"; then
    restore
    echo "ERROR: mutation $name no longer applies (its text was not found): update Tests/mutations.sh" >&2
    record "not applied" ""
    continue
  fi
  if [[ -n "${MUTATIONS_CHECK:-}" ]]; then
    restore
    record "applies" ""
    continue
  fi
  mutation_started=$(date +%s)
  if [[ -n "${MUTATIONS_SIMULATE:-}" ]]; then
    # The simulator's score: the first of seeds 1 … MUTATIONS_SIMULATE whose run fails a check (or traps).
    if ! in_background swift build $flags --product ledgerd >"$backup/build.log" 2>&1; then
      tail -20 "$backup/build.log" >&2
      result="build failed" by=""
    else
      result="NOT caught" by="${MUTATIONS_SIMULATE} seeds of ${MUTATIONS_SIMULATE_OPERATIONS:-2000} operations"
      for ((seed = 1; seed <= MUTATIONS_SIMULATE; seed++)); do
        if ! in_background .build/debug/ledgerd simulate --seed "$seed" --operations "${MUTATIONS_SIMULATE_OPERATIONS:-2000}" \
          >"$backup/simulate.log" 2>&1; then
          result="caught"
          by="seed $seed: $(grep -m 1 -iE 'fail|fatal|error' "$backup/simulate.log" | cut -c1-160)"
          break
        fi
      done
    fi
    restore
    record "$result" "${by:+$by, }$(($(date +%s) - mutation_started)) s"
    continue
  fi
  if ! in_background swift build $flags --build-tests >"$backup/build.log" 2>&1; then
    tail -20 "$backup/build.log" >&2
    echo "ERROR: mutation $name does not compile: update Tests/mutations.sh" >&2
    result="build failed" by=""
  elif in_background env "${environment[@]}" swift test $flags --skip-build --filter "$filter" >"$backup/test.log" 2>&1; then
    echo "ERROR: mutation $name was NOT caught by $filter" >&2
    result="NOT caught" by=""
  else
    result="caught"
    # The first failing test's name: Swift Testing's "✘ Test name() recorded an issue" (or XCTest's failure line).
    by="$(grep -m 1 -oE '✘ Test [A-Za-z0-9_]+\(' "$backup/test.log" | sed 's/^✘ Test //; s/($//')"
    [[ -n "$by" ]] || by="$(grep -m 1 -oE "error: [^ ]+ : Test Case '[^']+'" "$backup/test.log" | sed "s/.*Test Case '//; s/'$//")"
    # No test failed by name: the test process died (a trap, a fatal error); say how, and the test that was running.
    if [[ -z "$by" ]]; then
      running="$(grep -oE '◇ Test [A-Za-z0-9_]+\(' "$backup/test.log" | tail -1 | sed 's/^◇ Test //; s/($//')"
      by="the test process died ($(grep -m 1 -oE 'Fatal error: .{0,100}|[Ss]ignal code [0-9]+|Precondition failed.{0,80}' "$backup/test.log" || echo "no test named")${running:+; last started: $running})"
    fi
    grep -m 3 -E "✘ Test .*(recorded an issue|failed)" "$backup/test.log" | cut -c1-300 | sed 's/^/    /' >&2
  fi
  restore
  record "$result" "${by:+$by, }$(($(date +%s) - mutation_started)) s"
done

# Rebuild the unmutated tree, so that the next `swift test --skip-build` runs what is checked in.
restore
if [[ -n "${MUTATIONS_SIMULATE:-}" ]]; then
  swift build $flags --product ledgerd >"$backup/build.log" 2>&1 || echo "warning: the restored tree did not build" >&2
elif [[ -z "${MUTATIONS_CHECK:-}" ]]; then
  swift build $flags --build-tests >"$backup/build.log" 2>&1 || echo "warning: the restored tree did not build" >&2
fi

echo
echo "| mutation | bug | result | caught by |"
echo "|---|---|---|---|"
status=0
caught=0
ran=0
for i in "${!names[@]}"; do
  echo "| ${names[$i]} | ${descriptions[$i]} | ${results[$i]} | ${caught_by[$i]} |"
  case "${results[$i]}" in
    caught | applies) caught=$((caught + 1)) ran=$((ran + 1)) ;;
    skipped) ;;
    *) status=1 ran=$((ran + 1)) ;;
  esac
done
echo
if [[ -n "${MUTATIONS_CHECK:-}" ]]; then
  echo "${caught} of ${ran} apply (check only: nothing built), $(($(date +%s) - started)) s"
else
  echo "${caught} of ${ran} caught, $(($(date +%s) - started)) s"
fi
exit $status
