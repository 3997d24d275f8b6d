#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster on a free loopback port, then removes the cluster.
# The command sees PROMPTGATE_TEST_POSTGRES_URL (a superuser URL; tests create their own databases).
set -euo pipefail

# Where the server binaries are: $PG_BINDIR if set, else initdb on PATH, else what pg_config reports,
# else the newest of the distribution's versioned directories (compared as versions: 16 beats 9.6).
find_pgbin() {
  if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then
    echo "$PG_BINDIR"; return
  fi
  local found
  if found=$(command -v initdb 2>/dev/null) && [ -n "$found" ]; then
    dirname "$found"; return
  fi
  if command -v pg_config >/dev/null 2>&1; then
    found=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$found" ] && [ -x "$found/initdb" ]; then
      echo "$found"; return
    fi
  fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /usr/local/pgsql/bin \
                 /opt/homebrew/opt/postgresql@*/bin /usr/local/opt/postgresql@*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ]; then
      echo "$dir"; return
    fi
  done
}

pgbin=$(find_pgbin)
if [ -z "$pgbin" ]; then
  echo "with-postgres: no PostgreSQL server binaries (initdb, pg_ctl) found on PATH, through pg_config," >&2
  echo "  or under /usr/lib/postgresql; install them (Debian/Ubuntu: apt-get install postgresql;" >&2
  echo "  macOS: brew install postgresql@16) or set PG_BINDIR" >&2
  exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/promptgate-pg.XXXXXX")
# As an ordinary user the cluster simply belongs to that user.
as_pg() { "$@"; }
if [ "$(id -u)" = "0" ]; then
  # initdb refuses to run as root: the cluster belongs to the postgres system user.
  chown postgres:postgres "$scratch"
  as_pg() { runuser -u postgres -- "$@"; }
fi

if command -v python3 >/dev/null 2>&1; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
else
  # A port from the ephemeral range; pg_ctl fails loudly below in the rare case it is taken.
  port=$(( 20000 + RANDOM % 20000 ))
fi

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
