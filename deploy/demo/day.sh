#!/usr/bin/env bash
# A demo day: a realistic day at the shop driven through the public API, on a rehearsal daemon of its own
# (its own data directory and port; your `ledgerd serve` is not touched).
#
#   deploy/demo/day.sh [--keep-running]
#
# Monday 2026-06-15, 09:00 UTC by the rehearsal clock (LEDGERD_CLOCK_START; the daemon says so in a warning):
# payments on every test card (the declining ones are refused with their codes and record nothing but the
# decline), a partial capture then a shipment, a full capture and a partial refund, a void, a hold left to lapse,
# and a card whose cardholder disputes the charge. The operator closes the day early (`ledgerd settle --today`):
# the batch is submitted to the acquirer model and reconciled with 0 breaks.
# The daemon is then stopped and started two days later (Wednesday 09:00, the rehearsal clock moved forward):
# the acquirer model raised the chargeback on the business day after the batch, the daemon reads it from the
# acquirer's dispute feed, and the hold left alone (Discover, a one-day lifetime here) expired; the sweeper
# records the expiry. The script prints where to look, checks the chain, and stops the daemon (or, with
# --keep-running, leaves it up for you).
#
# Environment: LEDGERD (the binary; default: `swift build --product ledgerd` and its path), DEMO_DIR (default
# ./.ledgerd-demo: replaced when it is an earlier demo's, refused otherwise), DEMO_PORT (default 12399).
# Needs curl and jq. Exits non-zero, saying why, at the first step that does not go as described.
set -euo pipefail

keep=0
[[ "${1:-}" == "--keep-running" ]] && keep=1
for tool in curl jq; do command -v $tool >/dev/null || { echo "day.sh: needs $tool" >&2; exit 2; }; done
if [[ -z "${LEDGERD:-}" ]]; then
    swift build --product ledgerd >&2
    LEDGERD="$(swift build --show-bin-path)/ledgerd"
fi
DIR=${DEMO_DIR:-$PWD/.ledgerd-demo}
PORT=${DEMO_PORT:-12399}
BASE=http://127.0.0.1:$PORT
if [[ -e "$DIR" ]]; then
    [[ -f "$DIR/.demo-day" ]] || { echo "day.sh: $DIR exists and is not an earlier demo's: choose another DEMO_DIR" >&2; exit 2; }
    rm -rf "$DIR"
fi
mkdir -p "$DIR" && touch "$DIR/.demo-day"

pid=
stop() {
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
}
trap 'stop' EXIT
fail() { echo "day.sh: $*" >&2; echo "--- daemon log (last 30 lines) ---" >&2; tail -30 "$DIR/daemon.log" >&2 || true; exit 1; }

start() {  # start CLOCK: the daemon on the demo's directory, its clock starting at CLOCK
    LEDGERD_CLOCK_START=$1 LEDGERD_EXPIRY_INTERVAL_SECONDS=1 LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS=1 \
        LEDGERD_HOLD_LIFETIMES=discover=86400 LEDGERD_LOG_LEVEL=warning \
        "$LEDGERD" serve --data-dir "$DIR" --port "$PORT" >>"$DIR/daemon.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        curl -sf "$BASE/health" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || fail "the daemon stopped while starting"
        sleep 0.1
    done
    fail "the daemon did not answer /health within 60 s"
}

OP=
post() {  # post PATH KEY BODY: prints the reply body; the status goes to $DIR/status
    curl -s -o "$DIR/reply" -w '%{http_code}' -H "$OP" -H 'Content-Type: application/json' -H "Idempotency-Key: $2" \
        -d "$3" "$BASE$1" >"$DIR/status"
    cat "$DIR/reply"
}
expect() {  # expect STATUS WHAT
    [[ "$(cat "$DIR/status")" == "$1" ]] || fail "$2: expected HTTP $1, got $(cat "$DIR/status"): $(cat "$DIR/reply")"
}
get() { curl -s --fail-with-body -H "$OP" "$BASE$1"; }
pay() {  # pay CARD AMOUNT KEY: the payment's reply
    post /payment "$3" "{\"gateway\": \"stripe\", \"source\": \"$1\", \"amount\": $2, \"currency\": \"USD\", \"description\": \"Clock\",
      \"shipping_contact\": \"Jane Appleseed\", \"shipping_email\": \"jane@example.com\", \"shipping_street\": \"1 Infinite Loop\",
      \"shipping_city\": \"Cupertino\", \"shipping_state\": \"CA\", \"shipping_zip\": \"95014\", \"shipping_method_name\": \"Standard\"}"
}

echo "== Monday 2026-06-15, 09:00 UTC (rehearsal clock): the shop opens"
start 2026-06-15T09:00:00Z
OP="Authorization: Bearer $(jq -r '.operator_keys[0]' "$DIR/api-keys.json")"

declare -A order
for card in tok_visa tok_visa_debit tok_mastercard tok_mastercard_prepaid tok_amex tok_discover tok_visa_chargeback_fraud; do
    order[$card]=$(pay $card 5900 "demo-$card" | jq -r .order_id)
    expect 200 "the payment on $card"
    echo "   $card: authorized, order ${order[$card]}"
done
declines=0
for card in tok_chargeDeclined tok_chargeDeclinedInsufficientFunds tok_chargeDeclinedExpiredCard \
    tok_chargeDeclinedProcessingError tok_chargeDeclinedSystemError tok_chargeDeclinedLostCard tok_chargeDeclinedStolenCard \
    tok_chargeDeclinedTransactionNotAllowed tok_chargeDeclinedRestrictedCard tok_chargeDeclinedExceedsAmountLimit \
    tok_chargeDeclinedVelocityExceeded; do
    code=$(pay $card 5900 "demo-$card" | jq -r .decline_code)
    # 402: the issuer declined; 502: the issuer (91) or the network (96) failed to answer.
    [[ "$(cat "$DIR/status")" == 402 || "$(cat "$DIR/status")" == 502 ]] || expect 402 "the payment on $card"
    echo "   $card: refused with HTTP $(cat "$DIR/status"), code $code"
    declines=$((declines + 1))
done

echo "== the back office works through the orders"
post "/orders/${order[tok_visa]}/capture" cap-visa '{"amount": "20.00"}' >/dev/null
expect 200 "a partial capture"
post "/orders/${order[tok_visa]}/ship" ship-visa '{"carrier": "UPS", "tracking": "1Z999AA10123456784"}' >/dev/null
expect 200 "shipping (captures the rest)"
echo "   visa: captured 20.00, then shipped (the rest captured with it)"
post "/orders/${order[tok_visa_debit]}/capture" cap-debit '{"amount": "35.00", "final": true}' >/dev/null
expect 200 "a final partial capture"
echo "   visa debit: captured 35.00 as final (the other 24.00 released)"
post "/orders/${order[tok_mastercard]}/capture" cap-mc '{}' >/dev/null
expect 200 "a full capture"
post "/orders/${order[tok_mastercard]}/refund" refund-mc '{"amount": "5.00", "reason": "scratched case"}' >/dev/null
expect 200 "a partial refund"
echo "   mastercard: captured 59.00, refunded 5.00"
post "/orders/${order[tok_mastercard_prepaid]}/capture" cap-prepaid '{}' >/dev/null
expect 200 "a full capture"
post "/orders/${order[tok_amex]}/void" void-amex '{}' >/dev/null
expect 200 "a void"
echo "   mastercard prepaid: captured; amex: voided"
post "/orders/${order[tok_visa_chargeback_fraud]}/capture" cap-fraud '{}' >/dev/null
expect 200 "the capture that will be disputed"
echo "   tok_visa_chargeback_fraud: captured (its cardholder will dispute it)"
echo "   discover: left authorized (its hold lapses tomorrow)"

echo "== 09:0x: the operator closes the day early"
"$LEDGERD" settle --today --url "$BASE" --api-key "${OP#Authorization: Bearer }"
BATCH=$(get /settlements | jq -r '.settlements[-1].batch_id')
breaks=$(get "/settlements/$BATCH/reconciliation" | jq '.breaks | length')
matched=$(get "/settlements/$BATCH/reconciliation" | jq '.matched')
[[ "$breaks" == 0 ]] || fail "the batch $BATCH reconciled with $breaks breaks"
echo "   batch $BATCH: settled, reconciled: $matched items matched, $breaks breaks"
stop

echo "== Wednesday 2026-06-17, 09:00 UTC: two days later"
start 2026-06-17T09:00:00Z
for _ in $(seq 1 300); do
    disputes=$(get /disputes | jq '.disputes | length')
    status=$(get "/orders/${order[tok_discover]}" | jq -r .order.status)
    [[ "$disputes" -ge 1 && "$status" == expired ]] && break
    sleep 0.1
done
[[ "$disputes" -ge 1 ]] || fail "no dispute was read from the acquirer"
[[ "$status" == expired ]] || fail "the discover hold did not expire (status $status)"
DISPUTE=$(get /disputes | jq -r '.disputes[0].dispute_id')
echo "   the acquirer raised a chargeback: dispute $DISPUTE ($(get /disputes | jq -r '.disputes[0] | "\(.network) \(.reason_code) \(.amount) \(.currency) \(.status), due \(.due_at)"'))"
echo "   the discover hold expired: order ${order[tok_discover]} is $status"
verified=$(get /audit/verify | jq -c .)
echo "   the chain verifies: $verified"

# Where to look, in a browser: the console's pages (the API's own URLs answer 401 there, with no bearer key). Each is
# opened here first, signed in as a browser is (the sign-in form's cookie and token, then the key), and must answer
# 200: a link printed below leads somewhere.
jar="$DIR/console-cookies"
form=$(curl -s -c "$jar" -b "$jar" "$BASE/console/sign-in")
csrf=$(sed -n 's/.*name="csrf_token" value="\([^"]*\)".*/\1/p' <<<"$form" | head -1)
KEY=$(jq -r '.operator_keys[0]' "$DIR/api-keys.json")
curl -s -o /dev/null -c "$jar" -b "$jar" --data-urlencode "csrf_token=$csrf" --data-urlencode "key=$KEY" "$BASE/console/sign-in"
for path in /console/today "/console/settlements/$BATCH" "/console/disputes/$DISPUTE" "/console/orders/${order[tok_visa]}" /console/audit; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -b "$jar" "$BASE$path")
    [[ "$code" == 200 ]] || fail "the console's $path answered $code, signed in"
done
rm -f "$jar"
cat <<WHERE
== where to look: the console, signed in with the operator key (jq -r '.operator_keys[0]' $DIR/api-keys.json)
   $BASE/console/sign-in
   $BASE/console/settlements/$BATCH   the batch: its items, downloads and reconciliation
   $BASE/console/disputes/$DISPUTE                  the dispute, with its deadline
   $BASE/console/orders/${order[tok_visa]}      an order: its references and timeline
   $BASE/console/audit                              the chain verified, checkpoints, the journal
   $declines refused payments are in the log too (Audit, the events export)
WHERE
if [[ $keep == 1 ]]; then
    trap - EXIT
    echo "the demo daemon keeps running (pid $pid, port $PORT, data $DIR); stop it with: kill $pid"
else
    echo "the demo daemon stops now: run deploy/demo/day.sh --keep-running to open these pages"
fi
