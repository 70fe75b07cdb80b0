#!/bin/sh
# Patroni's post_bootstrap (patroni.yml): runs once, on the node that ran initdb, as PostgreSQL's OS user, with
# the superuser's connection string as its argument and PGPASSFILE (0600, written by Patroni) holding its
# password. Creates the ledger database, applies the migrations with `ledgerd migrate` (which also creates the
# NOLOGIN roles ledger_app and ledger_auditor) and lets ledger_app log in with LEDGER_APP_PASSWORD.
# Needs in Patroni's environment: LEDGERD_BIN (or ledgerd on PATH), LEDGERD_MIGRATIONS_DIR, LEDGER_APP_PASSWORD.
set -eu
conn=$1
: "${LEDGER_APP_PASSWORD:?post_bootstrap: LEDGER_APP_PASSWORD is not set in Patroni's environment}"
bin=${LEDGERD_BIN:-ledgerd}
psql "$conn" -XAtq -v ON_ERROR_STOP=1 -c 'CREATE DATABASE ledger'
# The migrations' commits must not wait for a synchronous standby that cannot join before bootstrap ends.
psql "$conn" -XAtq -v ON_ERROR_STOP=1 -c 'ALTER DATABASE ledger SET synchronous_commit = local'
# ledgerd takes a URL: the superuser's password is the pgpass line Patroni wrote (host:port:db:user:password).
line=$(head -1 "$PGPASSFILE")
port=$(printf '%s' "$line" | cut -d: -f2)
password=$(printf '%s' "$line" | cut -d: -f5-)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
LEDGERD_DATA_DIR=$scratch LEDGERD_LOG_LEVEL=warning \
  LEDGERD_MIGRATION_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/ledger?sslmode=disable" \
  LEDGERD_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/ledger?sslmode=disable" \
  "$bin" migrate >/dev/null
psql "$conn dbname=ledger" -XAtq -v ON_ERROR_STOP=1 -v pw="$LEDGER_APP_PASSWORD" <<'SQL'
ALTER ROLE ledger_app LOGIN PASSWORD :'pw';
ALTER DATABASE ledger RESET synchronous_commit;
SQL
