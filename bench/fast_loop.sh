#!/usr/bin/env bash
# `make test-fast` against the same loop with the heavy tier kept (tests/suite_tiers.py HEAVY), in one run: each
# one's wall time, how busy all CPUs were over it (/proc/stat, other processes included) and the load average,
# then the ratio, and the tests of the fast loop that took 0.3 s or more (candidates for HEAVY). `--load N` adds N
# busy loops for the whole measurement, so "at load 2" is a load the script makes, not one it finds.
#
#   bash bench/fast_loop.sh [--load N] [pytest args...]     (default: no load added, the whole suite)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONDONTWRITEBYTECODE=  # as the Makefile's test-fast: asserts rewritten once, not in every worker
burners=()
trap 'rm -f "${durations:-}"; [ "${#burners[@]}" -eq 0 ] || kill "${burners[@]}" 2>/dev/null || true' EXIT
if [ "${1:-}" = --load ]; then
  for _ in $(seq "$2"); do (while :; do :; done) & burners+=($!); done
  echo "added load: $2 busy loops" >&2
  shift 2
fi
args=("$@")
cpu() { read -r _ u n s i w x y z _ < /proc/stat; echo "$((u + n + s + x + y + z)) $((u + n + s + i + w + x + y + z))"; }
durations=$(mktemp)
run() {  # run LABEL MARKERS: prints the wall seconds on stdout, a line for people on stderr
  read -r busy0 all0 < <(cpu)
  local start end
  start=$(date +%s.%N)
  .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 -m "$2" --durations=0 "${args[@]}" >"$durations" 2>&1 \
    || echo "$1: some tests failed" >&2
  end=$(date +%s.%N)
  read -r busy1 all1 < <(cpu)
  printf "%-34s %6.1f s  %s  CPUs %d%% busy, load %s\n" "$1" "$(echo "$end - $start" | bc)" \
    "$(tail -1 "$durations" | grep -o '[0-9]* passed' || echo '? passed')" \
    "$((100 * (busy1 - busy0) / (all1 - all0)))" "$(cut -d' ' -f1 /proc/loadavg)" >&2
  echo "$end - $start" | bc
}
with_heavy=$(run "fast loop with the heavy tier" "not slow and not postgres")
fast=$(run "make test-fast (no heavy tier)" "not slow and not heavy and not postgres")
printf "ratio: %.2f (make test-fast / with the heavy tier; the goal is make test-fast <= 30 s at load 2)\n" \
  "$(echo "$fast / $with_heavy" | bc -l)"
echo "tests of make test-fast at 0.3 s or more (setup + call + teardown), candidates for HEAVY:"
awk '$1 ~ /s$/ && ($2 == "call" || $2 == "setup" || $2 == "teardown") { t[$3] += substr($1, 1, length($1) - 1) }
     END { n = 0; for (k in t) if (t[k] >= 0.3) { printf "  %.2f s  %s\n", t[k], k; n++ } if (!n) print "  none" }' \
  "$durations" | sort -rn
