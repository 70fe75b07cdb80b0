#!/usr/bin/env bash
# The published contracts, checked against a real daemon (.ci/run calls this after the Swift tests):
#  1. both OpenAPI documents pass openapi-spec-validator, and the Swift sources embed them as they are;
#  2. schemathesis against a real `ledgerd serve` (the built binary, its embedded PostgreSQL, the operator key from the
#     data directory's api-keys.json): first valid requests (examples, coverage, fuzzing and the stateful phase that
#     follows the document's links: payment → capture → refund …), then invalid ones, every check on that applies
#     (no server error, statuses, content types and bodies as documented, every schema-valid request taken —
#     positive_data_acceptance: the document states every rule the ledger refuses a request by — and invalid input
#     refused);
#  3. the invalid phase appended nothing (the log's head before and after it), and the chain verifies
#     (`ledgerd audit verify`);
#  4. the same two phases against the acquirer service that daemon supervises (its port in <data>/acquirer/endpoint,
#     its X-API-Key in <data>/acquirer/secrets.json), with its own document and the same checks (positive data
#     acceptance included), and the invalid phase journals nothing (acquirer.journal's length before and after).
# Bounded: FUZZ_MAX_EXAMPLES per operation and FUZZ_MAX_SECONDS per phase (CI defaults: 25 and 120 s).
#
#   deploy/openapi/fuzz.sh                     # .build/debug/ledgerd, a venv in .build/openapi-venv
#   LEDGERD_BIN=.build/release/ledgerd FUZZ_MAX_EXAMPLES=200 FUZZ_MAX_SECONDS=900 deploy/openapi/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

ledgerd=${LEDGERD_BIN:-.build/debug/ledgerd}
venv=${OPENAPI_VENV:-.build/openapi-venv}
max_examples=${FUZZ_MAX_EXAMPLES:-25}
max_seconds=${FUZZ_MAX_SECONDS:-120}
seed=${FUZZ_SEED:-31}
# Pinned: a new release may add checks or change generation; bump deliberately.
schemathesis_version=4.32.5
validator_version=0.9.0

started=$(date +%s)
# Python 3.12 or later when there is one: under 3.11 hypothesis's description of a filter re-parses schemathesis's
# source and CPython 3.11 failed there now and then ("AST constructor recursion depth mismatch", a runtime error
# that fails the run without a finding of ours).
python=${PYTHON:-}
if [ -z "$python" ]; then
  python=python3
  for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    # A pyenv shim answers `command -v` for a version it will not run: ask the interpreter itself.
    if "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then python=$candidate; break; fi
  done
fi
if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/schemathesis" --version | grep -q "$schemathesis_version"; then
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q "schemathesis==$schemathesis_version" "openapi-spec-validator==$validator_version"
fi

"$venv/bin/openapi-spec-validator" Sources/LedgerAPI/openapi.yaml Sources/LedgerAcquirerAPI/openapi.yaml
"$venv/bin/python" deploy/openapi/generate.py --check

[ -x "$ledgerd" ] || { echo "no $ledgerd: swift build --product ledgerd first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-fuzz.XXXXXX")
chmod 755 "$work"
data="$work/data"
# Below the ephemeral range, checked free (deploy/free_port.py says why).
port=$("$venv/bin/python" deploy/free_port.py)
base="http://127.0.0.1:$port"
"$ledgerd" serve --data-dir "$data" --port "$port" >"$work/ledgerd.log" 2>&1 &
daemon=$!
stop() {
  kill "$daemon" 2>/dev/null || true
  wait "$daemon" 2>/dev/null || true
}
trap 'stop; echo "daemon log: $work/ledgerd.log" >&2' EXIT

for _ in $(seq 1 180); do
  curl -sf "$base/health" >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$work/ledgerd.log" >&2; echo "ledgerd serve exited" >&2; exit 1; }
  sleep 1
done
curl -sf "$base/health" >/dev/null || { echo "ledgerd did not answer /health" >&2; exit 1; }
operator=$("$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["operator_keys"][0])' "$data/api-keys.json")

head_position() { curl -sf "$base/health" | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["database"]["last_position"])'; }

# One schemathesis run, bounded alike for both services: fuzz CONFIG REPORTS ARGS… (CONFIG's .toml in this directory;
# ARGS: the document and how to reach the service, then the phase's mode, phases and checks).
fuzz() {
  local config=$1 reports=$2
  shift 2
  "$venv/bin/schemathesis" --config-file "deploy/openapi/$config.toml" run \
    --max-examples "$max_examples" --max-time "$max_seconds" --seed "$seed" \
    --request-timeout 30 --workers 2 --no-color \
    --report junit --report-dir "$work/$reports" \
    "$@"
}
# The two phases, the same on both services; each adds its own data check to these.
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,unsupported_method
valid=(--mode positive --phases examples,coverage,fuzzing,stateful)
# Invalid path parameters are mostly unrepresentable (an empty segment is another route), so hypothesis filters most
# of what it draws for them: that is not a defect of the API, and its health check would call it an error.
invalid=(--mode negative --phases coverage,fuzzing --suppress-health-check filter_too_much)

# The live feed (`text/event-stream`) never ends, so no request to it can complete: it is left to the suite's tests.
ledger=("$base/openapi.json" -H "Authorization: Bearer $operator" --exclude-operation-id streamEvents)
echo "== schemathesis: valid requests (examples, coverage, fuzzing, stateful links)"
fuzz schemathesis-valid reports "${ledger[@]}" "${valid[@]}" --checks "$checks,positive_data_acceptance"

before=$(head_position)
echo "== schemathesis: invalid requests (head at position $before)"
fuzz schemathesis-invalid reports "${ledger[@]}" "${invalid[@]}" --checks "$checks,negative_data_rejection"
after=$(head_position)
if [ "$before" != "$after" ]; then
  echo "the invalid requests appended events: the head moved from $before to $after" >&2
  curl -sf -H "Authorization: Bearer $operator" "$base/events?after=$before" >&2 || true
  exit 1
fi
echo "invalid requests appended nothing (head still at $after)"

echo "== the chain"
"$ledgerd" audit verify --data-dir "$data"

# The acquirer service the daemon started (a supervised child on the same embedded cluster): its address and key as
# the daemon wrote them; the journal counted through its own database role. The key and the URL stay in variables.
acquirer_base=$(cat "$data/acquirer/endpoint")
secret() { "$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$data/acquirer/secrets.json" "$1"; }
acquirer_key=$(secret apiKey)
acquirer_database=$(secret databaseURL)
journal_length() { psql "$acquirer_database" -XAtqc 'SELECT count(*) FROM acquirer.journal'; }
acquirer=(Sources/LedgerAcquirerAPI/openapi.yaml --url "$acquirer_base" -H "X-API-Key: $acquirer_key")

echo "== schemathesis, acquirer service: valid requests (examples, coverage, fuzzing, stateful links)"
fuzz schemathesis-acquirer-valid reports-acquirer "${acquirer[@]}" "${valid[@]}" --checks "$checks,positive_data_acceptance"

journal_before=$(journal_length)
echo "== schemathesis, acquirer service: invalid requests (journal at $journal_before entries)"
fuzz schemathesis-acquirer-invalid reports-acquirer "${acquirer[@]}" "${invalid[@]}" --checks "$checks,negative_data_rejection"
journal_after=$(journal_length)
if [ "$journal_before" != "$journal_after" ]; then
  echo "the invalid requests journaled entries: acquirer.journal went from $journal_before to $journal_after" >&2
  exit 1
fi
echo "invalid requests journaled nothing (acquirer.journal still at $journal_after entries)"
"$ledgerd" audit verify --data-dir "$data" >/dev/null
echo "schemathesis and the chain: $(( $(date +%s) - started )) s"
# Passed: the daemon's data (its embedded cluster) and the reports go; a failure keeps them for the log it names.
trap - EXIT
stop
rm -rf "$work"
