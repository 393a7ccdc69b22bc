#!/usr/bin/env bash
# The second CI leg (tests/run_tests.sh): what differs between Dagster releases, on the OLDEST release of the
# supported range, in its own venv (.venv-oldest, pinned by tests/oldest_dagster.txt): the fast tests of every
# module that imports Dagster or AWP's Dagster layer (`dagster_api`) and one scenario under a real daemon
# (`oldest`), both marked in tests/conftest.py. The first leg runs the whole suite on the newest release.
#
#   bash tests/oldest_dagster.sh [pytest args...]
#   bash tests/oldest_dagster.sh --install-only     only make .venv-oldest current (run_tests.sh, during the first leg)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
venv=.venv-oldest
pins=tests/oldest_dagster.txt

# Reinstalled when pyproject.toml or the pins changed since the last install (as `make install` does for .venv).
if [ ! -x "$venv/bin/python" ] || [ ! "$venv/.installed" -nt pyproject.toml ] || [ ! "$venv/.installed" -nt "$pins" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c "$pins" -e '.[dev,deploy]'
  touch "$venv/.installed"
fi

# The installed release must be the pinned one: a resolver that picked another would test the wrong end.
want=$(sed -n 's/^dagster==//p' "$pins")
have=$("$venv/bin/python" -c 'import dagster; print(dagster.__version__)')
if [ "$have" != "$want" ]; then
  echo "oldest_dagster.sh: FAILED: $venv has dagster $have, the pins say $want ($pins)." >&2
  exit 1
fi
if [ "${1:-}" = "--install-only" ]; then
  echo "oldest_dagster.sh: $venv holds dagster $have"
  exit 0
fi
echo "oldest_dagster.sh: the Dagster-facing fast tests and one daemon scenario on dagster $have"

rc=0
"$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider -m "(dagster_api and not slow and not postgres) or oldest" "$@" </dev/null || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "oldest_dagster.sh: FAILED: pytest collected no tests (exit 5)." >&2
  exit 1
fi
exit "$rc"
