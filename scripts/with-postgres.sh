#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster on a free loopback port, then removes the cluster.
# The command sees PROMPTGATE_TEST_POSTGRES_URL (a superuser URL; tests create their own databases).
set -euo pipefail

pgbin=""
for dir in /usr/lib/postgresql/*/bin; do
  [ -x "$dir/initdb" ] && pgbin="$dir"
done
if [ -z "$pgbin" ]; then
  echo "with-postgres: no PostgreSQL server binaries found (apt-get install postgresql)" >&2
  exit 1
fi

scratch=$(mktemp -d /tmp/promptgate-pg.XXXXXX)
as_pg() { "$@"; }
if [ "$(id -u)" = "0" ]; then
  # initdb refuses to run as root: the cluster belongs to the postgres system user.
  chown postgres:postgres "$scratch"
  as_pg() { runuser -u postgres -- "$@"; }
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

cleanup() {
  as_pg "$pgbin/pg_ctl" -D "$scratch/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

as_pg "$pgbin/initdb" -D "$scratch/data" --auth=trust -U postgres -E UTF8 >"$scratch/initdb.log" 2>&1 \
  || { cat "$scratch/initdb.log" >&2; exit 1; }
as_pg "$pgbin/pg_ctl" -D "$scratch/data" -l "$scratch/server.log" -w \
  -o "-p $port -k $scratch -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
  start >/dev/null || { cat "$scratch/server.log" >&2; exit 1; }

export PROMPTGATE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
# Tests that stop and start a cluster of their own (database outages) use the same binaries.
export PROMPTGATE_TEST_PG_BIN="$pgbin"
echo "with-postgres: throwaway cluster on 127.0.0.1:$port" >&2
"$@"
