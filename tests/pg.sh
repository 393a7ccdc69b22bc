#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests.
#
#   tests/pg.sh start DIR   initdb + start a server whose files all live in DIR; create database awp_test;
#                           print the SQLAlchemy URL on stdout (and write it to DIR/url)
#   tests/pg.sh stop DIR    stop that server and remove DIR
#   tests/pg.sh pause DIR   stop that server (pg_ctl stop -m fast: clients are disconnected) and keep DIR
#   tests/pg.sh resume DIR  start a paused server again, on the same port (a database outage, for tests)
#   tests/pg.sh backup DIR  copy the running server's data to DIR/backup (pg_basebackup: consistent, and the
#                           server goes on serving its clients meanwhile)
#   tests/pg.sh restore DIR crash the server (pg_ctl stop -m immediate), put DIR/backup in place of its data and
#                           start it: every commit after the backup is lost, though its clients were told it was
#                           stored (what `synchronous_commit=off` and a kill -9 do, made deterministic)
#
#   export AWP_TEST_PG_URL="$(tests/pg.sh start "$dir")"
#
# The server listens on 127.0.0.1 only, on a free port picked at start, with its unix socket in DIR/sock.
# Trust auth, fsync off: it is for tests, never for data. initdb/pg_ctl refuse to run as root, so as root
# the server runs as the system user awp-pg (created when absent) and DIR is handed to that user.
set -euo pipefail

PG_USER=awp-pg     # OS user (when root) and database superuser name
PG_DB=awp_test
MARKER=.awp-test-pg

log() { echo "pg.sh: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  echo "usage: $0 start DIR | stop DIR | pause DIR | resume DIR | backup DIR | restore DIR" >&2
  exit 2
}

is_root() { [ "$(id -u)" = 0 ]; }

# Directory holding initdb/pg_ctl/postgres: PATH's /usr/local/bin first, then Debian's versioned dirs
# (newest first), then anything on PATH.
find_pg_bin() {
  local d
  for d in /usr/local/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4 -rn); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

ensure_pg_bin() {
  if PG_BIN=$(find_pg_bin); then
    return 0
  fi
  if is_root && command -v apt-get >/dev/null 2>&1; then
    log "PostgreSQL binaries not found; installing Debian's postgresql package"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    PG_BIN=$(find_pg_bin) || die "postgresql installed but initdb/pg_ctl still not found"
    return 0
  fi
  die "PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/local/bin, /usr/lib/postgresql/*/bin or PATH.
  Install them, e.g. as root: apt-get update && apt-get install -y postgresql  (Debian/Ubuntu)
                              or: brew install postgresql@15                  (macOS)"
}

ensure_os_user() {
  id -u "$PG_USER" >/dev/null 2>&1 && return 0
  log "creating system user $PG_USER"
  if command -v useradd >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER" 2>/dev/null || true
  elif command -v adduser >/dev/null 2>&1; then
    adduser -S -H "$PG_USER" 2>/dev/null || true   # busybox/alpine
  fi
  # Another test run may have created it concurrently: only its absence is an error.
  id -u "$PG_USER" >/dev/null 2>&1 || die "could not create system user $PG_USER"
}

# Run a command as the server's owner: ourselves, or awp-pg when we are root.
as_pg() {
  if ! is_root; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$PG_USER" -- "$@"
  else
    su -s /bin/sh "$PG_USER" -c 'exec "$0" "$@"' "$@"
  fi
}

free_port() {
  local py
  py=$(command -v python3 || command -v python) || die "python3 is needed to pick a free port"
  "$py" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

start() {
  local dir=$1
  ensure_pg_bin
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ -e "$dir/data" ] && die "$dir/data already exists; stop it first: $0 stop $dir"
  touch "$dir/$MARKER"
  mkdir -p "$dir/sock"
  if is_root; then
    ensure_os_user
    chown -R "$PG_USER" "$dir"
    as_pg test -w "$dir" ||
      die "$PG_USER cannot write $dir (is a parent directory closed to other users?); use a directory under /tmp"
  fi
  cd "$dir"   # the server's user must be able to stay in the working directory

  as_pg "$PG_BIN/initdb" -D "$dir/data" -U "$PG_USER" --auth=trust -E UTF8 --no-locale --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }

  # Settings go into the server's own config file: paths with spaces need no shell quoting that way.
  local port attempt
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    cat >>"$dir/data/postgresql.conf" <<EOF

# tests/pg.sh (attempt $attempt)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
EOF
    if as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null; then
      break
    fi
    # Lost the race for the port to another process: pick another one. Anything else is fatal.
    if ! grep -q -i "address already in use\|could not bind\|could not create any TCP/IP sockets" \
        "$dir/server.log" 2>/dev/null || [ "$attempt" = 5 ]; then
      tail -n 30 "$dir/server.log" >&2 || true
      die "pg_ctl start failed (log: $dir/server.log)"
    fi
    log "port $port taken, retrying"
  done

  local createdb=createdb
  [ -x "$PG_BIN/createdb" ] && createdb="$PG_BIN/createdb"
  PGCONNECT_TIMEOUT=10 "$createdb" -h 127.0.0.1 -p "$port" -U "$PG_USER" -w "$PG_DB" ||
    die "createdb $PG_DB failed (log: $dir/server.log)"

  local url="postgresql+psycopg2://$PG_USER@127.0.0.1:$port/$PG_DB"
  echo "$url" >"$dir/url"
  log "PostgreSQL ($("$PG_BIN/pg_ctl" --version)) running as $( is_root && echo "$PG_USER" || id -un )" \
    "on 127.0.0.1:$port, socket dir $dir/sock"
  echo "$url"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  if [ ! -e "$dir/$MARKER" ]; then
    die "$dir was not made by '$0 start' (no $MARKER); refusing to remove it"
  fi
  if [ -f "$dir/data/postmaster.pid" ]; then
    PG_BIN=$(find_pg_bin) || die "pg_ctl not found; cannot stop the server in $dir"
    local pid i
    pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
    cd "$dir"
    # immediate: the data is thrown away anyway, so skip the shutdown checkpoint
    if ! as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 &&
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      log "pg_ctl stop failed; sending SIGQUIT to postmaster $pid"
      kill -QUIT "$pid" 2>/dev/null || true
    fi
    cd /
    # pg_ctl returns when the pid file is gone; wait for the postmaster itself to exit too.
    for i in $(seq 50); do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -rf "$dir"
}

server_dir() {
  local dir=$1
  [ -e "$dir/$MARKER" ] || die "$dir was not made by '$0 start' (no $MARKER)"
  cd "$dir" && pwd
}

pause() {
  local dir
  dir=$(server_dir "$1")
  PG_BIN=$(find_pg_bin) || die "pg_ctl not found"
  cd "$dir"
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
}

resume() {
  local dir
  dir=$(server_dir "$1")
  PG_BIN=$(find_pg_bin) || die "pg_ctl not found"
  cd "$dir"
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { tail -n 30 "$dir/server.log" >&2 || true; die "pg_ctl start failed (log: $dir/server.log)"; }
}

backup() {
  local dir port tool
  dir=$(server_dir "$1")
  PG_BIN=$(find_pg_bin) || die "pg_ctl not found"
  # Beside the server's own pg_ctl (PG_BIN may hold a link to it only): the backup tool of the server's version.
  tool="$(dirname "$(readlink -f "$PG_BIN/pg_ctl")")/pg_basebackup"
  [ -x "$tool" ] || die "$tool not found"
  port=$(sed -n 's|.*:\([0-9][0-9]*\)/.*|\1|p' "$dir/url")
  rm -rf "$dir/backup"
  cd "$dir"
  # -c fast: checkpoint at once; -X stream: the WAL of the copy's span goes with it, so it starts consistent.
  as_pg "$tool" -h 127.0.0.1 -p "$port" -U "$PG_USER" -w -D "$dir/backup" -X stream -c fast
}

restore() {
  local dir
  dir=$(server_dir "$1")
  [ -d "$dir/backup" ] || die "no backup in $dir: run '$0 backup $dir' first"
  PG_BIN=$(find_pg_bin) || die "pg_ctl not found"
  cd "$dir"
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null
  rm -rf "$dir/data"
  mv "$dir/backup" "$dir/data"
  resume "$dir"
}

[ $# -eq 2 ] || usage
unset PGHOST PGPORT PGUSER PGDATABASE PGDATA PGSERVICE PGOPTIONS
case "$1" in
  start) start "$2" ;;
  stop) stop "$2" ;;
  pause) pause "$2" ;;
  resume) resume "$2" ;;
  backup) backup "$2" ;;
  restore) restore "$2" ;;
  *) usage ;;
esac
