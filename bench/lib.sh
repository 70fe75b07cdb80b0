# bench/lib.sh: the CPU accounting every bench script reads the same way (sourced, after `cd` to the repository:
# `. bench/lib.sh`). The figures are clock ticks (getconf CLK_TCK a second).

# ticks PID: the process's user + system CPU (0 once it is gone, or when PID is empty: /proc//stat would be /proc/stat,
# the whole machine's).
ticks() { if [ -n "$1" ]; then awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; else echo 0; fi; }

# cluster_ticks POSTMASTER_PID: a PostgreSQL cluster's CPU: the postmaster's own and its reaped children's (backends that
# exited, counted once waited for), and each live child's.
cluster_ticks() {
  local t p
  [ -n "$1" ] || { echo 0; return; }
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0)
  for p in $(pgrep -P "$1"); do t=$((t + $(ticks "$p"))); done
  echo "$t"
}

# postmaster_pid DIR: the postmaster of the cluster whose data directory is DIR or below it.
# Empty when none is running (no pid file).
postmaster_pid() { local f; f=$(find "$1" -name postmaster.pid 2>/dev/null | head -1); [ -n "$f" ] && head -1 "$f"; true; }

# restart_with_pg_stat_statements DATA_DIR: loads pg_stat_statements into a running daemon's embedded cluster under
# DATA_DIR, which needs the cluster restarted: the daemon stops (the caller's $pid), the cluster too, and the caller's
# `start` starts both again; then the extension is created in the ledger's database. Uses the caller's `pg` (psql's
# connection arguments).
restart_with_pg_stat_statements() {
  psql "${pg[@]}" -qc "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" postgres
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
  su postgres -s /bin/sh -c "pg_ctl=\$(ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1); \$pg_ctl -D '$1/pg' -m fast -w stop" >/dev/null 2>&1 || true
  start
  psql "${pg[@]}" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" ledger
}
