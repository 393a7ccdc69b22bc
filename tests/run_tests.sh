#!/usr/bin/env bash
# THE test command (`make test`, .ci/run): install if needed, start a throwaway PostgreSQL, run pytest.
#
#   bash tests/run_tests.sh [pytest args...]     e.g. bash tests/run_tests.sh -k deployment -x
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# 0. The machine's own parts, in the background while pip installs the venv (a fresh CI machine spends minutes on
# them): Debian's packages one after another (apt takes one lock), then the pinned real agent CLIs from npm. The
# sandbox's bwrap first, in the foreground: `make install` checks it too.
bash tests/install_bubblewrap.sh  # Debian's bubblewrap: the sandbox of every CLI and command agent
parts_log=$(mktemp /tmp/awp-test-parts.XXXXXX)
(
  bash tests/ui/install_browser.sh  # Debian chromium for the browser tests (tests/ui)
  bash tests/install_redis.sh  # Debian's redis-server: the Celery broker of tests/e2e/test_celery_runs.py
  bash tests/install_docker.sh  # Debian's docker.io: the test starts a private dockerd (tests/e2e/test_docker_runs.py)
  bash tests/providers/install_real_clis.sh  # the pinned real agent CLIs (npm), into a cache outside the repo
) >"$parts_log" 2>&1 &
parts_pid=$!

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
  [ -z "${oldest_pid:-}" ] || kill "$oldest_pid" 2>/dev/null || true  # an install still running when a leg failed
  bash "$root/tests/pg.sh" stop "$pg_dir" || true
  rm -rf "$pg_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

AWP_TEST_PG_URL=$(bash tests/pg.sh start "$pg_dir")
export AWP_TEST_PG_URL

parts_rc=0
wait "$parts_pid" || parts_rc=$?
cat "$parts_log"
rm -f "$parts_log"
if [ "$parts_rc" -ne 0 ]; then
  echo "run_tests.sh: FAILED: installing the test machine's parts (above) exited $parts_rc" >&2
  exit "$parts_rc"
fi

# The oldest Dagster's venv (step 5) is installed while the newest leg runs: pip waits on the network and disk
# more than on the CPU. Only for the whole suite.
oldest_pid=""
oldest_log=$(mktemp /tmp/awp-test-oldest.XXXXXX)
if [ "$#" -eq 0 ]; then
  bash tests/oldest_dagster.sh --install-only >"$oldest_log" 2>&1 &
  oldest_pid=$!
fi

# 4. pytest on the newest Dagster of the supported range. Exit code 5 = no tests collected: not green.
rc=0
started=$SECONDS
# Three workers on two cores: the end-to-end tests wait on daemons, sensors and agents (at -n 2 the CPUs were
# 62% busy under tests/daemon; -n 3 ran them in 22% less time, -n 4 no faster: bash bench/suite_workers.sh).
.venv/bin/python -m pytest -q -n 3 --dist worksteal --durations=40 "$@" </dev/null || rc=$?
echo "run_tests.sh: the newest leg took $((SECONDS - started)) s"
if [ "$rc" -eq 5 ]; then
  echo "run_tests.sh: FAILED: pytest collected no tests (exit 5); a run with no tests is not a pass." >&2
  exit 1
fi

# 5. The oldest Dagster of the range: the fast suite plus tests/daemon, in .venv-oldest (a few minutes). Only for
# the whole suite: a run narrowed by pytest arguments is someone's inner loop (`bash tests/oldest_dagster.sh ARGS`).
old_rc=0
if [ -n "$oldest_pid" ]; then
  wait "$oldest_pid" || old_rc=$?
  cat "$oldest_log"
  if [ "$old_rc" -eq 0 ]; then
    started=$SECONDS
    bash tests/oldest_dagster.sh || old_rc=$?
    echo "run_tests.sh: the oldest leg took $((SECONDS - started)) s"
  fi
fi
rm -f "$oldest_log"
[ "$rc" -ne 0 ] && exit "$rc"
exit "$old_rc"
