# Shared by deploy/ha/drill.sh and bench/replication.sh (sourced, not run): a primary and a streaming standby as
# local clusters on 127.0.0.1 and `ledgerd serve` on a two-host URL with target_session_attrs=read-write.
# ha_setup needs: repo, work (an empty directory), sync (on: the primary's synchronous_standby_names names the
# standby), daemons (how many `ledgerd serve`, default 1; more run behind deploy/ha/balance.py, which needs python3).
# It sets: bin, pgbin, p1, p2, http (the one address clients use), op, ports (the daemons' own), serve_pids, balancer_pid. ha_cleanup stops
# everything (bounded) and removes $work.

ha_find_binaries() {
  bin=${LEDGERD_BIN:-}
  if [ -z "$bin" ]; then  # the more recently built of the release and debug binaries
    bin=$(ls -t .build/release/ledgerd .build/debug/ledgerd 2>/dev/null | head -1 || true)
  fi
  if [ -z "$bin" ]; then swift build --product ledgerd >/dev/null; bin=.build/debug/ledgerd; fi
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  pgbin=$(pg_config --bindir 2>/dev/null || true)
  [ -x "$pgbin/pg_ctl" ] || pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$pgbin/pg_basebackup" ] || { echo "drill: PostgreSQL server binaries not found (apt-get install -y postgresql)" >&2; exit 2; }
}

as_pg() {  # PostgreSQL refuses to run as root: its programs run as the postgres OS user then.
  if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi
}
step() { printf '[%s] %s\n' "$(date -u +%T.%3N)" "$*"; }
now_ms() { date +%s%3N; }
sql() {  # sql PORT DATABASE STATEMENT: one value, unaligned
  psql -h 127.0.0.1 -p "$1" -U postgres -d "$2" -XAtqc "$3"
}

ha_cleanup() {
  set +e
  [ -n "$(jobs -p)" ] && kill $(jobs -p) 2>/dev/null
  for pid in $serve_pids $balancer_pid; do
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ "${failed:-1}" != 0 ] && [ -d "$work" ]; then  # what a failed drill leaves for a look
    rm -rf /tmp/ledgerd-drill-last && mkdir -p /tmp/ledgerd-drill-last
    cp "$work"/serve*.log "$work"/attempts* "$work"/check.txt /tmp/ledgerd-drill-last/ 2>/dev/null
    cp "$work"/run1/server.log /tmp/ledgerd-drill-last/primary.log 2>/dev/null
    cp "$work"/run2/server.log /tmp/ledgerd-drill-last/standby.log 2>/dev/null
    echo "drill: logs kept in /tmp/ledgerd-drill-last" >&2
  fi
  for node in primary standby; do
    [ -f "$work/$node/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" -D "$work/$node" -m immediate -w -t 20 stop >/dev/null 2>&1
  done
  # Backends of the killed postmaster notice its death and exit on their own; wait for them (bounded).
  for _ in $(seq 1 50); do
    pgrep -f "$work/primary" >/dev/null 2>&1 || break
    sleep 0.1
  done
  rm -rf "$work"
}

ha_setup() {
  ha_find_binaries
  local base=$((20000 + RANDOM % 20000))
  p1=$base p2=$((base + 1)) http=$((base + 2))
  serve_pids= balancer_pid=
  step "clusters in $work (primary :$p1, standby :$p2, synchronous_commit with a synchronous standby: $sync)"
  mkdir -m 700 "$work/run1" "$work/run2" "$work/primary" "$work/standby"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$work/run1" "$work/run2" "$work/primary" "$work/standby"; fi
  as_pg "$pgbin/initdb" -D "$work/primary" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  standby_names="'standby'"
  [ "$sync" = on ] || standby_names="''"
  cat >>"$work/primary/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $p1
unix_socket_directories = '$work/run1'
wal_level = replica
max_wal_senders = 4
synchronous_commit = on
synchronous_standby_names = $standby_names
max_connections = 100
log_min_messages = warning
CONF
  as_pg "$pgbin/pg_ctl" -D "$work/primary" -l "$work/run1/server.log" -w -t 60 start >/dev/null
  as_pg "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$p1" -U postgres -D "$work/standby" -X stream -c fast
  cat >>"$work/standby/postgresql.conf" <<CONF
port = $p2
unix_socket_directories = '$work/run2'
primary_conninfo = 'host=127.0.0.1 port=$p1 user=postgres application_name=standby'
# Promoted, this node runs alone: it must not wait for a standby it does not have.
synchronous_standby_names = ''
CONF
  as_pg touch "$work/standby/standby.signal"
  as_pg "$pgbin/pg_ctl" -D "$work/standby" -l "$work/run2/server.log" -w -t 60 start >/dev/null
  for _ in $(seq 1 100); do
    state=$(sql "$p1" postgres "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")
    [ "$state" = sync ] || { [ "$sync" != on ] && [ "$state" = async ]; } && break
    sleep 0.1
  done
  step "standby streaming: ${state:-not connected}"
  [ -n "$state" ] || { echo "drill: the standby never connected" >&2; exit 1; }
  sql "$p1" postgres "CREATE DATABASE ledger" >/dev/null

  hosts="127.0.0.1:$p1,127.0.0.1:$p2"
  url() { echo "postgres://$1@$hosts/ledger?sslmode=disable&target_session_attrs=read-write"; }
  # Statements bounded at 3 s (and the writer's transactions a little above): a transaction stranded on the killed
  # primary's connection is given up within seconds (answered 503, safe to retry with its key), not after 30.
  export LEDGERD_MIGRATIONS_DIR="$repo/sql" LEDGERD_LOG_LEVEL=notice LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00
  export LEDGERD_DB_STATEMENT_TIMEOUT_SECONDS=3
  op=drill-operator-$RANDOM$RANDOM
  export LEDGERD_MIGRATION_DATABASE_URL="$(url postgres)" LEDGERD_OPERATOR_KEYS=$op
  LEDGERD_DATA_DIR="$work/ledgerd-1" LEDGERD_DATABASE_URL="$(url postgres)" "$bin" migrate >/dev/null
  sql "$p1" ledger "ALTER ROLE ledger_app LOGIN" >/dev/null
  export LEDGERD_DATABASE_URL="$(url ledger_app)"
  # $daemons daemons on :$http+1… behind one address (:$http, deploy/ha/balance.py, round robin). The first
  # supervises the acquirer service; the others talk to that one, as daemons share a real acquirer.
  local n port
  ports= daemons=${daemons:-1}
  for n in $(seq 1 "$daemons"); do
    port=$((http + 10 + n))
    ports="$ports $port"
    if [ "$n" -gt 1 ]; then
      printf '%s' "$(sed -n 's/.*"apiKey" *: *"\([^"]*\)".*/\1/p' "$work/ledgerd-1/acquirer/secrets.json")" >"$work/acquirer.key"
      chmod 600 "$work/acquirer.key"
      LEDGERD_ACQUIRER_URL=$(cat "$work/ledgerd-1/acquirer/endpoint") LEDGERD_ACQUIRER_API_KEY_FILE="$work/acquirer.key" \
        LEDGERD_DATA_DIR="$work/ledgerd-$n" "$bin" serve --host 127.0.0.1 --port "$port" >"$work/serve-$n.log" 2>&1 &
    else
      LEDGERD_DATA_DIR="$work/ledgerd-$n" "$bin" serve --host 127.0.0.1 --port "$port" >"$work/serve-$n.log" 2>&1 &
    fi
    serve_pids="$serve_pids $!"
    for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
    curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "drill: ledgerd $n did not start:" >&2; tail -20 "$work/serve-$n.log" >&2; exit 1; }
  done
  if [ "$daemons" -gt 1 ]; then
    python3 "$repo/deploy/ha/balance.py" "$http" $ports &
    balancer_pid=$!
  else
    http=$((http + 11))
  fi
  for _ in $(seq 1 40); do curl -sf "http://127.0.0.1:$http/health" >/dev/null && break; sleep 0.25; done
  curl -sf "http://127.0.0.1:$http/health" >/dev/null || { echo "drill: nothing answers on :$http" >&2; exit 1; }
  # Ample stock of every demo product (the benchmark's wrk script buys any of them).
  local name price products=
  while read -r price name; do
    products="$products${products:+, }{\"name\": \"$name\", \"description\": \"\", \"price\": \"$price\", \"stock\": 10000000}"
  done <<'CATALOG'
50.00 Clock
25.00 Pen
0.50 Pencil
15.00 Stapler
20.00 Cup
12.00 Catpad
8.00 Chocolate Hearts
8.00 White Eraser
7.00 Hammer
8.00 Red Scarf
14.00 T-Ruler
5.00 Whiteboard Eraser
CATALOG
  printf '{"products": [%s]}' "$products" >"$work/stock.json"
  LEDGERD_DATA_DIR="$work/ledgerd-1" "$bin" catalog import "$work/stock.json" >/dev/null
  step "$daemons ledgerd serving behind :$http (ports$ports; $bin)"
}
