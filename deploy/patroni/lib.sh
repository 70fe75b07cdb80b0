# Shared by deploy/patroni/drill.sh (sourced, not run): a Patroni cluster on 127.0.0.1 — three etcd members, three
# PostgreSQL 15 nodes under Patroni (synchronous_mode, synchronous_mode_strict), HAProxy routing by Patroni's REST
# checks — and `ledgerd serve` daemons behind HAProxy. Everything runs as the postgres OS user when root, except
# HAProxy and ledgerd (ledgerd's own rule: it runs its children as LEDGERD_PG_USER).
# pha_setup needs: repo, work (an empty directory, 0711), strict (true|false), route (haproxy|url), daemons.
# It sets: bin, pgbin, pg_port[1..2], rest_port[1..2], etcd_client[1..3], http (the one address clients use),
# pg_primary (HAProxy's leader port), op, au (operator and auditor keys), ports (the daemons' own).
# pha_cleanup stops everything it started (bounded waits) and removes $work.

. "$repo/deploy/ha/lib.sh"  # as_pg, step, now_ms, ha_find_binaries

PHA_TTL=${PHA_TTL:-10}
PHA_LOOP_WAIT=${PHA_LOOP_WAIT:-2}
PHA_RETRY_TIMEOUT=${PHA_RETRY_TIMEOUT:-4}
nodes=${PHA_NODES:-1 2 3}  # three: after a failover the third node is the new synchronous standby at once

secret() { head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24; }
psql_at() {  # psql_at PORT DATABASE STATEMENT: one value, unaligned, as the superuser (password in the environment)
  psql -h 127.0.0.1 -p "$1" -U postgres -d "$2" -XAtqc "$3"
}
if [ "$(id -u)" = 0 ]; then run_as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --); else run_as_pg=(); fi

# --- etcd: three members, so the store survives one member's loss ---
etcd_start() {  # etcd_start N: start member N (its data directory is kept between starts)
  local n=$1 cluster= m
  for m in 1 2 3; do cluster="$cluster${cluster:+,}e$m=http://127.0.0.1:${etcd_peer[$m]}"; done
  "${run_as_pg[@]}" /usr/bin/etcd --name "e$n" --data-dir "$work/etcd$n/data" \
    --listen-client-urls "http://127.0.0.1:${etcd_client[$n]}" --advertise-client-urls "http://127.0.0.1:${etcd_client[$n]}" \
    --listen-peer-urls "http://127.0.0.1:${etcd_peer[$n]}" --initial-advertise-peer-urls "http://127.0.0.1:${etcd_peer[$n]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "ledger-drill-$base" \
    --heartbeat-interval 100 --election-timeout 1000 --log-level warn >>"$work/etcd$n/etcd.log" 2>&1 &
  etcd_pid[$n]=$!
}
etcd_kill() { kill -KILL "${etcd_pid[$1]}" 2>/dev/null || true; wait "${etcd_pid[$1]}" 2>/dev/null || true; etcd_pid[$1]=; }
etcd_endpoints() { local m e=; for m in 1 2 3; do e="$e${e:+,}127.0.0.1:${etcd_client[$m]}"; done; echo "$e"; }

# --- Patroni nodes ---
patroni_start() {  # patroni_start N: start Patroni on node N (it starts, bootstraps or rejoins PostgreSQL itself)
  local n=$1
  (
    unset PGPASSWORD  # the drill's own (the superuser's): libpq would prefer it to Patroni's pgpass file
    export PATRONI_SUPERUSER_PASSWORD=$superuser_password PATRONI_REPLICATION_PASSWORD=$replication_password
    export LEDGER_APP_PASSWORD=$app_password LEDGERD_BIN=$bin LEDGERD_MIGRATIONS_DIR=$repo/sql
    exec "${run_as_pg[@]}" /usr/bin/patroni "$work/node$n/patroni.yml" >>"$work/node$n/patroni.log" 2>&1
  ) &
  patroni_pid[$n]=$!
}
postmaster_pid() { head -1 "$work/node$1/data/postmaster.pid" 2>/dev/null || true; }
patroni_kill_node() {  # SIGKILL to node N whole: Patroni, the postmaster and its children
  local n=$1 pm
  pm=$(postmaster_pid "$n")
  kill -KILL "${patroni_pid[$n]}" ${pm:+$pm $(pgrep -P "$pm" | tr '\n' ' ')} 2>/dev/null || true
  wait "${patroni_pid[$n]}" 2>/dev/null || true
  patroni_pid[$n]=
}
node_signal() {  # node_signal N SIGNAL: to node N whole (Patroni, the postmaster, its children): STOP freezes it
  local n=$1 pm
  pm=$(postmaster_pid "$n")
  kill -"$2" "${patroni_pid[$n]}" ${pm:+$pm $(pgrep -P "$pm" | tr '\n' ' ')} 2>/dev/null || true
}
cluster_json() {  # Patroni's view of the cluster, from the first node whose REST API answers
  local n
  for n in $nodes; do
    curl -sf -m 1 "http://127.0.0.1:${rest_port[$n]}/cluster" && return 0
  done
  return 1
}
leader_node() {  # the leader's node number, empty when there is none
  cluster_json 2>/dev/null | jq -r '.members[] | select(.role == "leader" and .state == "running") | .name' 2>/dev/null | sed 's/^node//' | head -1 || true
}
sync_node() {  # the synchronous standby's node number
  cluster_json 2>/dev/null | jq -r '.members[] | select(.role == "sync_standby" and .state == "running") | .name' 2>/dev/null | sed 's/^node//' | head -1 || true
}
replica_nodes() { local n; for n in $nodes; do [ "$n" = "$1" ] || printf '%s ' "$n"; done; }
healthy() {  # every node running: a leader, a synchronous standby, and every replica streaming (the leader's view)
  local l count
  l=$(leader_node)
  [ -n "$l" ] && [ -n "$(sync_node)" ] || return 1
  count=$(echo $nodes | wc -w)
  [ "$(psql_at "${pg_port[$l]}" postgres "SELECT count(*) FILTER (WHERE state = 'streaming') || ' ' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication" 2>/dev/null)" = "$((count - 1)) 1" ]
}
wait_healthy() {  # wait_healthy SECONDS
  local deadline=$(($(date +%s) + $1))
  while [ "$(date +%s)" -lt "$deadline" ]; do healthy && return 0; sleep 0.5; done
  return 1
}

pha_setup() {
  ha_find_binaries
  command -v patroni >/dev/null && command -v etcd >/dev/null && command -v haproxy >/dev/null && command -v jq >/dev/null || {
    echo "drill: needs patroni, etcd (etcd-server), haproxy, jq: apt-get install -y patroni etcd-server haproxy jq" >&2
    exit 2
  }
  # The whole block (base+1 … base+70, the webhook receiver's) below the Swift tests' ports (TestPorts: 20000-31999)
  # and Linux's ephemeral range (from 32768), each port checked free.
  base=$(python3 "$repo/deploy/free_port.py" --block 80 10000 19999) || { echo "drill: no free block of ports" >&2; exit 2; }
  local n
  for n in 1 2 3; do etcd_client[$n]=$((base + n)); etcd_peer[$n]=$((base + 10 + n)); done
  for n in $nodes; do pg_port[$n]=$((base + 20 + n)); rest_port[$n]=$((base + 30 + n)); done
  pg_primary=$((base + 40)) pg_replica=$((base + 41)) http=$((base + 42)) pg_sync=$((base + 43))  # nodes up to 9
  superuser_password=$(secret) replication_password=$(secret) app_password=$(secret)
  export PGPASSWORD=$superuser_password  # the drill's own psql, as the superuser, over TCP
  step "Patroni cluster in $work: etcd :${etcd_client[1]},:${etcd_client[2]},:${etcd_client[3]}; PostgreSQL $(for n in $nodes; do printf ':%s ' "${pg_port[$n]}"; done); REST $(for n in $nodes; do printf ':%s ' "${rest_port[$n]}"; done); synchronous_mode_strict: $strict; ttl $PHA_TTL, loop_wait $PHA_LOOP_WAIT, retry_timeout $PHA_RETRY_TIMEOUT"
  for n in 1 2 3; do mkdir -m 700 "$work/etcd$n"; done
  for n in $nodes; do mkdir -m 700 "$work/node$n" "$work/node$n/run"; done
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$work"/etcd? "$work"/node? "$work"/node?/run; fi
  for n in 1 2 3; do etcd_start "$n"; done
  for _ in $(seq 1 60); do
    ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints)" endpoint health >/dev/null 2>&1 && break
    sleep 0.5
  done
  ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints)" endpoint health >/dev/null 2>&1 || { echo "drill: etcd did not become healthy" >&2; tail -5 "$work"/etcd?/etcd.log >&2; exit 1; }
  local hosts
  hosts=$(etcd_endpoints)
  for n in $nodes; do
    sed -e "s|@NAME@|node$n|; s|@REST_PORT@|${rest_port[$n]}|g; s|@PG_PORT@|${pg_port[$n]}|g" \
        -e "s|@ETCD_HOSTS@|$hosts|; s|@TTL@|$PHA_TTL|; s|@LOOP_WAIT@|$PHA_LOOP_WAIT|; s|@RETRY_TIMEOUT@|$PHA_RETRY_TIMEOUT|" \
        -e "s|@STRICT@|$strict|; s|@SHARED_BUFFERS@|32MB|; s|@POST_BOOTSTRAP@|$repo/deploy/patroni/post_bootstrap.sh|" \
        -e "s|@DATA_DIR@|$work/node$n/data|; s|@PG_BINDIR@|$pgbin|; s|@RUN_DIR@|$work/node$n/run|g; s|@WATCHDOG@|off|" \
        "$repo/deploy/patroni/patroni.yml.in" >"$work/node$n/patroni.yml"
    chmod 600 "$work/node$n/patroni.yml"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$work/node$n/patroni.yml"
  done
  printf 'scope: ledger\netcd3:\n  hosts: %s\n' "$hosts" >"$work/patronictl.yml"
  # Node 1 bootstraps (initdb, post_bootstrap: the ledger database, migrations, ledger_app), then the others join.
  patroni_start 1
  for _ in $(seq 1 240); do [ "$(leader_node)" = 1 ] && break; sleep 0.5; done
  [ "$(leader_node)" = 1 ] || { echo "drill: node1 did not bootstrap" >&2; tail -30 "$work/node1/patroni.log" >&2; exit 1; }
  for n in $(replica_nodes 1); do patroni_start "$n"; done
  wait_healthy 180 || { echo "drill: the replicas did not join" >&2; for n in $(replica_nodes 1); do tail -20 "$work/node$n/patroni.log" >&2; done; exit 1; }
  step "Patroni: node1 leader, node$(sync_node) synchronous standby, replicas: $(replica_nodes 1)(bootstrap $(( $(date +%s) - setup_started )) s)"
  # A scratch table for the fencing probes (drill only; not the ledger's schema).
  psql_at "${pg_port[1]}" ledger "CREATE TABLE public.drill_fence (id bigserial PRIMARY KEY, node text, at timestamptz DEFAULT now())" >/dev/null

  # HAProxy: the leader, a replica and the daemons, each behind one port.
  local primary_servers= replica_servers= http_servers= port
  for n in $nodes; do
    primary_servers="$primary_servers    server node$n 127.0.0.1:${pg_port[$n]} check port ${rest_port[$n]}\n"
  done
  replica_servers=$primary_servers
  ports=
  for n in $(seq 1 "$daemons"); do
    port=$((base + 50 + n))
    ports="$ports $port"
    http_servers="$http_servers    server ledgerd$n 127.0.0.1:$port check\n"
  done
  sed -e "s|@PG_PRIMARY_PORT@|$pg_primary|g; s|@PG_REPLICA_PORT@|$pg_replica|g; s|@PG_SYNC_PORT@|$pg_sync|g; s|@HTTP_PORT@|$http|g" \
      -e "s|@PG_PRIMARY_SERVERS@|$primary_servers|; s|@PG_REPLICA_SERVERS@|$replica_servers|; s|@HTTP_SERVERS@|$http_servers|" \
      "$repo/deploy/patroni/haproxy.cfg.in" >"$work/haproxy.cfg"
  haproxy -c -q -f "$work/haproxy.cfg" || { echo "drill: haproxy.cfg does not check" >&2; exit 1; }
  haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
  haproxy_pid=$!
  # HAProxy counts every server up until its first checks fail (fall 2 × 500 ms): until then its leader port
  # may reach a replica. Wait for them, then until the port answers from the leader.
  sleep 1.5
  for _ in $(seq 1 60); do [ "$(psql_at "$pg_primary" postgres 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ] && break; sleep 0.5; done

  # ledgerd: the multi-host URL (route=url) or HAProxy's leader port (route=haproxy); auditors' reads on a replica.
  local db_hosts read_url
  if [ "$route" = url ]; then
    db_hosts=$(for n in $nodes; do printf '127.0.0.1:%s,' "${pg_port[$n]}"; done)
    db_hosts=${db_hosts%,}
    read_url="postgres://ledger_app:$app_password@$db_hosts/ledger?sslmode=disable&target_session_attrs=standby"
  else
    db_hosts="127.0.0.1:$pg_primary"
    read_url="postgres://ledger_app:$app_password@127.0.0.1:$pg_sync/ledger?sslmode=disable&target_session_attrs=standby"
  fi
  export LEDGERD_DATABASE_URL="postgres://ledger_app:$app_password@$db_hosts/ledger?sslmode=disable&target_session_attrs=read-write"
  # Auditors' reads (/events, history, verify) on the synchronous standby (HAProxy's GET /sync port; with the
  # multi-host URL, any standby): DRILL_READS=primary keeps them on the leader, mixed splits the daemons (below).
  export LEDGERD_MIGRATIONS_DIR="$repo/sql" LEDGERD_LOG_LEVEL=notice LEDGERD_ACQUIRER_CREDIT_LIMIT=1000000000.00
  export LEDGERD_DB_STATEMENT_TIMEOUT_SECONDS=3
  # Webhooks (the drill's consumer, webhook_receiver.py on 127.0.0.1): one sealing key shared by both daemons (either
  # may deliver), the receiver's loopback address allowed, and retries quick enough to follow a failover.
  export LEDGERD_WEBHOOK_SECRETS_KEY=$(head -c 32 /dev/urandom | base64) LEDGERD_WEBHOOK_ALLOWED_ADDRESSES=127.0.0.1
  export LEDGERD_WEBHOOK_RETRY_BASE_MS=200 LEDGERD_WEBHOOK_RETRY_MAX_SECONDS=2
  op=drill-operator-$(secret) au=drill-auditor-$(secret)
  export LEDGERD_OPERATOR_KEYS=$op LEDGERD_AUDITOR_KEYS=$au
  unset LEDGERD_MIGRATION_DATABASE_URL
  serve_pids=
  for n in $(seq 1 "$daemons"); do
    port=$((base + 50 + n))
    # DRILL_READS=mixed (the default): the first daemon reads on the standby, the others on the leader, where their
    # feeds are bounded by the durable head (HeadWatcher).
    if [ "${reads:-mixed}" = replica ] || { [ "${reads:-mixed}" = mixed ] && [ "$n" = 1 ]; }; then
      export LEDGERD_READ_DATABASE_URL=$read_url
    else
      unset LEDGERD_READ_DATABASE_URL
    fi
    if [ "$n" -gt 1 ]; then
      printf '%s' "$(sed -n 's/.*"apiKey" *: *"\([^"]*\)".*/\1/p' "$work/ledgerd-1/acquirer/secrets.json")" >"$work/acquirer.key"
      chmod 600 "$work/acquirer.key"
      LEDGERD_ACQUIRER_URL=$(cat "$work/ledgerd-1/acquirer/endpoint") LEDGERD_ACQUIRER_API_KEY_FILE="$work/acquirer.key" \
        LEDGERD_DATA_DIR="$work/ledgerd-$n" "$bin" serve --host 127.0.0.1 --port "$port" >"$work/serve-$n.log" 2>&1 &
    else
      # The first daemon supervises the acquirer model (a test double standing in for the real acquirer), which
      # creates its own schema, `acquirer`, at start: that needs the owner's URL. The ledger's schema came from
      # the Patroni bootstrap; this daemon finds nothing of it pending.
      LEDGERD_MIGRATION_DATABASE_URL="postgres://postgres:$superuser_password@$db_hosts/ledger?sslmode=disable&target_session_attrs=read-write" \
        LEDGERD_DATA_DIR="$work/ledgerd-$n" "$bin" serve --host 127.0.0.1 --port "$port" >"$work/serve-$n.log" 2>&1 &
    fi
    serve_pids="$serve_pids $!"
    for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.25; done
    curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "drill: ledgerd $n did not start:" >&2; tail -20 "$work/serve-$n.log" >&2; exit 1; }
  done
  for _ in $(seq 1 40); do curl -sf "http://127.0.0.1:$http/health" >/dev/null && break; sleep 0.25; done
  curl -sf "http://127.0.0.1:$http/health" >/dev/null || { echo "drill: nothing answers on :$http" >&2; exit 1; }
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
  step "$daemons ledgerd behind HAProxy :$http (ports$ports), database via $([ "$route" = url ] && echo "the multi-host URL" || echo "HAProxy :$pg_primary (GET /primary)")"
}

pha_cleanup() {
  set +e
  [ -n "$(jobs -p)" ] && kill $(jobs -p) 2>/dev/null
  local pid n
  for pid in $serve_pids $embedded_pid $haproxy_pid; do
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if { [ "${failed:-1}" != 0 ] || [ -n "${DRILL_KEEP_LOGS:-}" ]; } && [ -d "$work" ]; then
    rm -rf /tmp/ledgerd-patroni-drill-last && mkdir -p /tmp/ledgerd-patroni-drill-last
    cp "$work"/serve*.log "$work"/attempts* "$work"/check*.txt "$work"/haproxy.log "$work"/fence* "$work"/feed* "$work"/webhook* "$work"/stranded /tmp/ledgerd-patroni-drill-last/ 2>/dev/null
    for n in $nodes; do cp "$work/node$n/patroni.log" "/tmp/ledgerd-patroni-drill-last/patroni$n.log" 2>/dev/null; done
    echo "drill: logs kept in /tmp/ledgerd-patroni-drill-last" >&2
  fi
  for n in $nodes; do  # Patroni stops its PostgreSQL on SIGTERM
    pid=${patroni_pid[$n]:-}
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
  done
  for n in $nodes; do
    pid=${patroni_pid[$n]:-}
    [ -n "$pid" ] || continue
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  for n in $nodes; do
    [ -f "$work/node$n/data/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" -D "$work/node$n/data" -m immediate -w -t 20 stop >/dev/null 2>&1
  done
  for n in 1 2 3; do
    pid=${etcd_pid[$n]:-}
    [ -n "$pid" ] || continue
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  for _ in $(seq 1 50); do
    pgrep -f "$work/node" >/dev/null 2>&1 || break
    sleep 0.1
  done
  rm -rf "$work"
}
