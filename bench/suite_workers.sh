#!/usr/bin/env bash
# How many pytest-xdist workers the suite's end-to-end tests want on this machine: tests/daemon (and any pytest
# arguments given) at -n 2, 3 and 4, each with its wall time and how busy all CPUs were over it (/proc/stat).
# Needs AWP_TEST_PG_URL for the PostgreSQL cases (`bash tests/pg.sh start DIR` prints one); otherwise they skip.
#
#   bash bench/suite_workers.sh [pytest args...]      (default: tests/daemon)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(tests/daemon)
cpu() { read -r _ u n s i w x y z _ < /proc/stat; echo "$((u + n + s + x + y + z)) $((u + n + s + i + w + x + y + z))"; }
for workers in 2 3 4; do
  read -r busy0 all0 < <(cpu)
  start=$(date +%s.%N)
  .venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist worksteal "${args[@]}" >/dev/null 2>&1 \
    || echo "-n $workers: some tests failed"
  end=$(date +%s.%N)
  read -r busy1 all1 < <(cpu)
  printf -- "-n %s: %6.1f s, CPUs %d%% busy (load %s)\n" "$workers" "$(echo "$end - $start" | bc)" \
    "$((100 * (busy1 - busy0) / (all1 - all0)))" "$(cut -d' ' -f1 /proc/loadavg)"
done
