#!/usr/bin/env bash
# Mutation smoke check (on demand and nightly, not in CI — twelve rebuilds take longer than the CI run itself): applies deliberate bugs one at a time, builds, runs the
# tests that should notice, and prints for each whether the suite caught it. Every file it touches is
# restored afterwards, also when it fails or is interrupted.
#
#   bash Tests/mutations.sh                 # all mutations
#   bash Tests/mutations.sh stock-version   # only the named ones
#   SWIFTPM_FLAGS=--ignore-lock bash Tests/mutations.sh   # extra flags for swift build / swift test
#
# A mutation is "caught" when its tests fail; "NOT caught" when they pass; "not applied" when its
# text was not found (the code moved: update this file); "build failed" when the mutant does not compile.
# The exit status is 0 only when every mutation was caught.
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
trap 'exit 130' INT TERM

# mutate FILE OLD NEW: replaces the first occurrence of OLD (literal text) with NEW; fails when absent.
mutate() {
  local file="$1" old="$2" new="$3"
  if [[ ! " ${touched[*]-} " == *" $file "* ]]; then
    cp "$file" "$backup/$(echo "$file" | tr / _)"
    touched+=("$file")
  fi
  OLD="$old" NEW="$new" python3 - "$file" <<'EOF'
import os, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
old, new = os.environ["OLD"], os.environ["NEW"]
if old not in text:
    sys.exit(1)
open(path, "w", encoding="utf-8").write(text.replace(old, new, 1))
EOF
}

names=()
descriptions=()
results=()

# run NAME DESCRIPTION FILTER [ENV=VALUE …] -- after the mutation was applied.
run() {
  local name="$1" description="$2" filter="$3"
  shift 3
  local result
  if ! swift build $flags --build-tests >"$backup/build.log" 2>&1; then
    result="build failed"
    tail -20 "$backup/build.log" >&2
  elif env "$@" swift test $flags --skip-build --filter "$filter" >"$backup/test.log" 2>&1; then
    result="NOT caught"
  else
    result="caught"
    grep -m 3 -E "✘ Test .*(recorded an issue|failed)" "$backup/test.log" | sed 's/^/    /' >&2
  fi
  names+=("$name")
  descriptions+=("$description")
  results+=("$result")
  echo "== $name: $result" >&2
}

selected=("$@")
want() {
  [[ ${#selected[@]} -eq 0 ]] && return 0
  local n
  for n in "${selected[@]}"; do [[ "$n" == "$1" ]] && return 0; done
  return 1
}

# skip_not_applied NAME DESCRIPTION: the mutation's text was not found.
skip_not_applied() {
  names+=("$1")
  descriptions+=("$2")
  results+=("not applied")
  echo "== $1: not applied (its text was not found)" >&2
  restore
}

# 1. The payment's plan appends to the product stream at any version: two payments decided on the
#    same stock both commit (an oversell across daemons).
if want stock-version; then
  d="drop the stock version from the payment's plan"
  if mutate Sources/LedgerCore/Domain/PaymentFlow.swift \
    "expectedVersion: PlannedAppend.expectation(forVersion: product.version)," \
    "expectedVersion: .any,"; then
    run stock-version "$d" "PaymentFlowTests|StockInvariantPropertyTests|TwoDaemonsTests"
    restore
  else skip_not_applied stock-version "$d"; fi
fi

# 2. A final capture keeps the rest of the hold open instead of releasing it.
if want final-capture-remainder; then
  d="keep the remainder open after a final capture"
  if mutate Sources/LedgerCore/Domain/HoldLifecycle.swift \
    "let released = response.isFinal ? hold.balance.open.minus(response.amount) : .zero(response.amount.currency)" \
    "let released = Money.zero(response.amount.currency)"; then
    run final-capture-remainder "$d" "HoldLifecyclePropertyTests" LEDGER_HOLD_SEQUENCES=5000
    restore
  else skip_not_applied final-capture-remainder "$d"; fi
fi

# 3. The Swift verifier no longer checks that prev_hash is the previous event's hash.
if want verifier-prev-hash; then
  d="skip the prev_hash check in the Swift chain verifier"
  if mutate Sources/LedgerPostgres/ChainVerifier.swift \
    "guard prevHash.elementsEqual(prev) else { return (position, .prevHashMismatch, end) }" \
    ""; then
    run verifier-prev-hash "$d" "ImmutabilityTests|AuditQueriesTests"
    restore
  else skip_not_applied verifier-prev-hash "$d"; fi
fi

# 4. The SQL verifier no longer checks prev_hash either (ledger.verify_chain as sql/0017 last defines it).
if want sql-verifier-prev-hash; then
  d="skip the prev_hash check in the SQL chain verifier"
  if mutate sql/0017_chain_stored_text.sql \
    "WHEN l.prev_hash <> l.prev THEN 'prev_hash is not the hash of the previous event'" \
    "WHEN false THEN 'prev_hash is not the hash of the previous event'"; then
    run sql-verifier-prev-hash "$d" "ImmutabilityTests|AuditQueriesTests"
    restore
  else skip_not_applied sql-verifier-prev-hash "$d"; fi
fi

# 5. A replayed Apple Pay transaction is accepted: neither the early check nor the marker stream's
#    "no stream yet" expectation stops the second use.
if want applepay-replay; then
  d="accept a replayed Apple Pay transaction"
  if mutate Sources/LedgerServices/Payments/PaymentService+ApplePay.swift \
    "if let earlier = try await loader.store.readStream(accepted.genuine.markerStream).first {" \
    "if let earlier = try await loader.store.readStream(accepted.genuine.markerStream).first, earlier.position < 0 {" &&
    mutate Sources/LedgerServices/Payments/PaymentService+ApplePay.swift \
      "            streamID: genuine.markerStream,
            expectedVersion: .noStream," \
      "            streamID: genuine.markerStream,
            expectedVersion: .any,"; then
    run applepay-replay "$d" "ApplePayPaymentTests"
    restore
  else skip_not_applied applepay-replay "$d"; fi
fi

# 6. A closed batch records its items but leaves them open: the next day's batch takes them again.
if want settlement-takes-settled; then
  d="let a second settlement take a settled capture"
  if mutate sql/0010_create_rule_functions.sql \
    "        DELETE FROM ledger.settlement_open_items o
        WHERE ledger.settlement_batch_takes(o, v_opened ->> 'currency', (v_opened ->> 'pinned_position')::bigint,
                                            (v_opened ->> 'cut_off_at')::timestamptz)
        RETURNING o.position, o.kind, o.amount_minor" \
    "        SELECT o.position, o.kind, o.amount_minor FROM ledger.settlement_open_items o
        WHERE ledger.settlement_batch_takes(o, v_opened ->> 'currency', (v_opened ->> 'pinned_position')::bigint,
                                            (v_opened ->> 'cut_off_at')::timestamptz)"; then
    run settlement-takes-settled "$d" "SettlementRunTests|SettlementMembershipSQLTests"
    restore
  else skip_not_applied settlement-takes-settled "$d"; fi
fi

# 7. The chain verifiers stop at ledger.head again (the blind spot sql/0011 closed), in Swift.
if want verifier-stops-at-head; then
  d="the Swift verifier stops at the head (events beyond it unchecked)"
  if mutate Sources/LedgerPostgres/ChainVerifier.swift \
    "let end = max(head.position, lastStored)" \
    "let end = head.position"; then
    run verifier-stops-at-head "$d" "ImmutabilityTests"
    restore
  else skip_not_applied verifier-stops-at-head "$d"; fi
fi

# 8. The writer's batch decides each command on the states before the batch, not on what the commands ahead of
#    it left: ten payments for one product in one batch would be one sale and nine conflicts (the hot-product
#    throughput the batch decisions exist for), and the remembered states would skip sales.
if want batch-decisions-successive; then
  d="decide a batch's commands on the states before the batch"
  if mutate Sources/LedgerEngine/Commands/CommandDecisions.swift \
    "            states.merge(after)" \
    "            _ = after"; then
    run batch-decisions-successive "$d" "CommandDecisionsTests|LedgerWriterTests"
    restore
  else skip_not_applied batch-decisions-successive "$d"; fi
fi

# 9. A refusal decided on a remembered state stands: a product restocked by another process stays "out of stock"
#    here until something else refreshes it.
if want refusal-on-remembered-state; then
  d="let a refusal on a remembered state stand without a fresh read"
  if mutate Sources/LedgerEngine/Commands/CommandDecisions.swift \
    "            guard !untrusted.isEmpty else {" \
    "            guard untrusted.isEmpty && false else {"; then
    run refusal-on-remembered-state "$d" "CommandDecisionsTests|LedgerWriterTests"
    restore
  else skip_not_applied refusal-on-remembered-state "$d"; fi
fi

# 10. After a conflict the writer reads fresh only the streams the database named, and decides on the others as
#     remembered: a shipment decided on a fresh order beside a hold missing its refund (write skew on a stream
#     the command reads but does not append to).
if want command-reads-mixed; then
  d="read fresh only the stale streams of a command, not all its reads"
  if mutate Sources/LedgerPostgres/LedgerWriter.swift \
    "        let all = Set(streams)
        return (try await source.states(keys, fresh: all), keys, all)" \
    "        let stale = Set(zip(streams, zip(states.versions(of: keys), seen)).compactMap { (\$1.0 ?? 0) < (\$1.1 ?? 0) ? \$0 : nil })
        return (try await source.states(keys, fresh: stale), keys, stale)"; then
    run command-reads-mixed "$d" "LedgerWriterTests"
    restore
  else skip_not_applied command-reads-mixed "$d"; fi
fi

# 11. The dispute workflow forgets the order's other disputes when it says what is disputable: two chargebacks
#     could claim the same captured money.
if want dispute-claims-twice; then
  d="let a dispute claim money another dispute of the order already claims"
  if mutate Sources/LedgerCore/Domain/DisputeWorkflow.swift \
    "        let claimed = others.filter { \$0.status != .won }" \
    "        let claimed = others.filter { _ in false }"; then
    run dispute-claims-twice "$d" "DisputeWorkflowTests|DisputeTests"
    restore
  else skip_not_applied dispute-claims-twice "$d"; fi
fi

# 12. The payment workflow forgets to resolve an unknown outcome (91/96) on the spot: the shopper is answered
#     "not charged" while the acquirer may hold the money, until the recovery sweep comes round.
if want payment-unknown-unresolved; then
  d="answer an unknown authorization outcome without asking the acquirer"
  if mutate Sources/LedgerCore/Domain/PaymentWorkflow.swift \
    "        if response.responseCode.isUnknownOutcome { return .recover(order.id) }" \
    "        if response.responseCode.isUnknownOutcome && false { return .recover(order.id) }"; then
    run payment-unknown-unresolved "$d" "PaymentWorkflowTests"
    restore
  else skip_not_applied payment-unknown-unresolved "$d"; fi
fi

# 13. The hold workflow drops the call's note when the acquirer cannot be reached: an operation the acquirer applied
#     and the ledger never heard of is lost to recovery.
if want hold-note-dropped; then
  d="drop a hold call's note when the acquirer gave no answer"
  if mutate Sources/LedgerCore/Domain/HoldWorkflow.swift \
    "        case .unreachable: return .fail(.acquirerUnavailable)" \
    "        case .unreachable: return .abandon(.acquirerUnavailable)"; then
    run hold-note-dropped "$d" "HoldWorkflowTests"
    restore
  else skip_not_applied hold-note-dropped "$d"; fi
fi

# 14. The dispute loop gives up after a moved stream instead of deciding again on fresh reads.
if want dispute-no-retry; then
  d="end a dispute command at its first version conflict"
  if mutate Sources/LedgerServices/Disputes/DisputeActions.swift \
    "            let facts = try await facts(of: orderID, fresh: attempt > 0)" \
    "            if attempt > 0 { break }; let facts = try await facts(of: orderID, fresh: attempt > 0)"; then
    run dispute-no-retry "$d" "DisputeRunTests|DisputeTests"
    restore
  else skip_not_applied dispute-no-retry "$d"; fi
fi

# 15. The transparency log stops building when another builder holds the tree: a checkpoint is signed below the head.
if want checkpoint-below-head; then
  d="sign a checkpoint without waiting for another builder of the tree"
  if mutate Sources/LedgerServices/Audit/TransparencyLog.swift \
    "            covered = try await tiles.extend(maximumTiles: batch, wait: true)" \
    "            covered = try await tiles.extend(maximumTiles: batch, wait: false); if covered < needed { break }"; then
    run checkpoint-below-head "$d" "TransparencyLogTests/aCheckpointWaitsForAnotherBuilder"
    restore
  else skip_not_applied checkpoint-below-head "$d"; fi
fi

# 16. The pool waits for ever for a statement's answer: one sent as its connection died is never answered (N5).
if want no-statement-deadline; then
  d="wait for a statement's answer without the pool's deadline"
  if mutate Sources/LedgerPostgres/DatabaseClient.swift \
    "        guard let statementDeadline else {" \
    "        guard let statementDeadline, false else {"; then
    run no-statement-deadline "$d" "StatementDeadlineTests|OutageLoopTests"
    restore
  else skip_not_applied no-statement-deadline "$d"; fi
fi

if want no-idempotency-requirement; then
  d="apply a capture, increment, void or refund without an Idempotency-Key"
  if mutate Sources/LedgerHTTP/HoldRoutes.swift \
    "if key == nil, kind.requiresIdempotencyKey {" \
    "if key == nil, kind.requiresIdempotencyKey, false {"; then
    run no-idempotency-requirement "$d" "HoldTests/theOperationsThatMoveMoneyRequireAnIdempotencyKey"
    restore
  else skip_not_applied no-idempotency-requirement "$d"; fi
fi

if want no-memory-return; then
  d="keep the memory the last expensive request freed"
  if mutate Sources/LedgerHTTP/ExpensiveRequestLimit.swift \
    "                whenIdle()" \
    "                _ = whenIdle"; then
    run no-memory-return "$d" "ExpensiveRequestLimitTests"
    restore
  else skip_not_applied no-memory-return "$d"; fi
fi

# Rebuild the unmutated tree, so that the next `swift test --skip-build` runs what is checked in.
restore
swift build $flags --build-tests >"$backup/build.log" 2>&1 || echo "warning: the restored tree did not build" >&2

echo
printf '| %-26s | %-66s | %-12s |\n' "mutation" "bug" "result"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..28})" "$(printf -- '-%.0s' {1..68})" "$(printf -- '-%.0s' {1..14})"
all=0
for i in "${!names[@]}"; do
  printf '| %-26s | %-66s | %-12s |\n' "${names[$i]}" "${descriptions[$i]}" "${results[$i]}"
  [[ "${results[$i]}" == "caught" ]] || all=1
done
exit $all
