#!/usr/bin/env bash
# One Attempt's bookkeeping and storage, before (REF, main by default) and after (this working tree), in one
# command: REF checked out in a throwaway worktree and put ahead on PYTHONPATH, the two sides alternating
# ROUNDS times (machine drift hits both), each `bench/attempt_overhead.py --repeat REPEAT --json`; then one
# `--by-event` of each side. Prints the rows `make bench` builds (bench/suite.py) for every run, then where the
# time goes by phase and owner (bench/attempt_phases.py, this tree's script on each side's code, alternating).
#   bash bench/attempt_before_after.sh [REF] [ROUNDS] [REPEAT]      (main, 2, 3)
set -euo pipefail
ref="${1:-main}"; rounds="${2:-2}"; repeat="${3:-3}"
here="$(cd "$(dirname "$0")/.." && pwd)"; py="$here/.venv/bin/python"
tmp="$(mktemp -d)"; trap 'git -C "$here" worktree remove --force "$tmp/before" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$here" worktree add --detach --quiet "$tmp/before" "$ref"
side() { if [ "$1" = before ]; then echo "$tmp/before"; else echo "$here"; fi; }
for round in $(seq "$rounds"); do
  for s in before after; do
    src="$(side $s)"
    (cd "$src" && PYTHONPATH="$src" "$py" bench/attempt_overhead.py --repeat "$repeat" --json > "$tmp/$s.$round.json")
  done
done
for s in before after; do
  src="$(side $s)"
  dirty=""; [ "$s" = after ] && ! git -C "$here" diff --quiet HEAD && dirty=" + uncommitted changes"
  echo "== $s: $(git -C "$src" rev-parse --short HEAD)$dirty"
  for round in $(seq "$rounds"); do
    "$py" - "$tmp/$s.$round.json" "$here/bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from suite import _attempt_rows
for row in _attempt_rows(json.load(open(sys.argv[1]))):
    print(f"  {row.benchmark}: {row.figure} ({row.baseline}, {row.ratio})")
PY
  done
  (cd "$src" && PYTHONPATH="$src" "$py" bench/attempt_overhead.py --repeat 1 --warmup 0 --by-event | sed -n '/^event-log rows/,$p')
done

for round in $(seq "$rounds"); do
  for s in before after; do
    src="$(side $s)"
    (cd "$src" && PYTHONPATH="$src" "$py" "$here/bench/attempt_phases.py" --repeat "$(( repeat < 2 ? repeat : 2 ))" --json > "$tmp/phases.$s.$round.json")
  done
done
list() { local IFS=,; echo "${*}"; }
echo "== by phase and owner (bench/attempt_phases.py, ms per Attempt, mean of $rounds rounds a side)"
"$py" "$here/bench/attempt_phases.py" --compare "$(list "$tmp"/phases.before.*.json)" "$(list "$tmp"/phases.after.*.json)"
