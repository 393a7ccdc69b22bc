#!/usr/bin/env bash
# THE test command (`make test`, .ci/run): install if needed, start a throwaway PostgreSQL, run pytest.
#
#   bash tests/run_tests.sh [pytest args...]     e.g. bash tests/run_tests.sh -k deployment -x
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# 1. The venv: same logic as `make install` (quick no-op when the stamp is newer than pyproject.toml).
if command -v make >/dev/null 2>&1; then
  make --no-print-directory -s install
elif [ ! -x .venv/bin/python ] || [ ! .venv/.installed -nt pyproject.toml ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  touch .venv/.installed
fi

# 2. Lint (ruff + mypy) before anything starts: a type error fails the run as a test failure would.
if command -v make >/dev/null 2>&1; then
  make --no-print-directory -s lint
else
  .venv/bin/ruff check . && .venv/bin/mypy
fi

# 3. PostgreSQL, always stopped and removed on the way out.
# Under /tmp, not $TMPDIR: the server's user (awp-pg when root) must reach it, and the socket path stays short.
pg_dir=$(mktemp -d /tmp/awp-test-pg.XXXXXX)
cleanup() {
  bash "$root/tests/pg.sh" stop "$pg_dir" || true
  rm -rf "$pg_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

AWP_TEST_PG_URL=$(bash tests/pg.sh start "$pg_dir")
export AWP_TEST_PG_URL

bash tests/install_bubblewrap.sh  # Debian's bubblewrap: the sandbox of every CLI and command agent
bash tests/ui/install_browser.sh  # Debian chromium for the browser tests (tests/ui)
bash tests/install_redis.sh  # Debian's redis-server: the Celery broker of tests/e2e/test_celery_runs.py
bash tests/install_docker.sh  # Debian's docker.io: the test starts a private dockerd (tests/e2e/test_docker_runs.py)
bash tests/providers/install_real_clis.sh  # the pinned real agent CLIs (npm), into a cache outside the repo

# 4. pytest on the newest Dagster of the supported range. Exit code 5 = no tests collected: not green.
rc=0
.venv/bin/python -m pytest -q -n 2 "$@" </dev/null || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run_tests.sh: FAILED: pytest collected no tests (exit 5); a run with no tests is not a pass." >&2
  exit 1
fi

# 5. The oldest Dagster of the range: the fast suite plus tests/daemon, in .venv-oldest (a few minutes). Only for
# the whole suite: a run narrowed by pytest arguments is someone's inner loop (`bash tests/oldest_dagster.sh ARGS`).
old_rc=0
if [ "$#" -eq 0 ]; then
  bash tests/oldest_dagster.sh || old_rc=$?
fi
[ "$rc" -ne 0 ] && exit "$rc"
exit "$old_rc"
