#!/usr/bin/env bash
# Debian's redis-server, the Celery broker of tests/e2e/test_celery_runs.py. Idempotent; installs only as root.
# The test starts its own server on a free port on 127.0.0.1 (no persistence) and stops it; the Debian
# package's own service is not used.
set -euo pipefail
if command -v redis-server >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install_redis: redis-server is missing and this is not root: the Celery test will say so" >&2
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
echo "install_redis: installed Debian's redis-server"
