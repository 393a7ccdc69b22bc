#!/usr/bin/env bash
# Debian's Docker engine (docker.io) and a private dockerd for tests/e2e/test_docker_runs.py.
#
#   tests/install_docker.sh             install docker.io when dockerd is missing (root only; else a note)
#   tests/install_docker.sh start DIR   start a dockerd whose files all live in DIR; wait until it answers;
#                                       print its socket's URL (unix://DIR/docker.sock)
#   tests/install_docker.sh stop DIR    stop that dockerd (its containers with it) and remove DIR
#
# The daemon is the test's own, never the package's service: its own data, exec root, pid file and socket in
# DIR, no bridge and no iptables (sandboxes have neither; the containers use the host network), the vfs
# storage driver (works on any filesystem, overlay included; the test's image is a few bytes).
set -euo pipefail

log() { echo "install_docker: $*" >&2; }

install() {
  if command -v dockerd >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    log "dockerd is missing and this is not root: the Docker test will say so"
    return 0
  fi
  # Once per CI run: skip the update when another install script just did it.
  find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -60 | grep -q . || apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null
  log "installed Debian's docker.io"
}

start() {
  local dir=$1 sock
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  sock="$dir/docker.sock"
  command -v dockerd >/dev/null || { log "dockerd is not installed"; exit 1; }
  [ "$(id -u)" -eq 0 ] || { log "dockerd needs root (this is uid $(id -u))"; exit 1; }
  setsid dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs \
    --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
    -H "unix://$sock" >"$dir/dockerd.log" 2>&1 </dev/null &
  echo $! >"$dir/launcher.pid"
  for _ in $(seq 1 60); do
    if [ -S "$sock" ] && DOCKER_HOST="unix://$sock" /usr/bin/docker version >/dev/null 2>&1; then
      echo "unix://$sock"
      return 0
    fi
    if ! kill -0 "$(cat "$dir/launcher.pid")" 2>/dev/null; then
      break
    fi
    sleep 1
  done
  log "dockerd did not start; its log ends:"
  tail -5 "$dir/dockerd.log" >&2 || true
  stop "$dir"
  exit 1
}

stop() {
  local dir=$1 pid
  [ -d "$dir" ] || return 0
  pid=$(cat "$dir/dockerd.pid" 2>/dev/null || cat "$dir/launcher.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  # vfs layers and container state are plain folders, but a mount may linger after a hard stop.
  grep -o " $dir/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$dir"
}

case "${1:-install}" in
  install) install ;;
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 [install | start DIR | stop DIR]" >&2; exit 2 ;;
esac
