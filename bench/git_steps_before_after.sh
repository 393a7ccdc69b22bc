#!/usr/bin/env bash
# AWP's git steps after a session (bench/git_steps.py), before (REF, main by default) and after (this working
# tree), in one command: REF checked out in a throwaway worktree and put ahead on PYTHONPATH, the two sides
# alternating ROUNDS times, each `git_steps.py --repeat REPEAT --json`; prints each side's medians per round.
#   bash bench/git_steps_before_after.sh [REF] [ROUNDS] [REPEAT]      (main, 3, 5)
set -euo pipefail
ref="${1:-main}"; rounds="${2:-3}"; repeat="${3:-5}"
here="$(cd "$(dirname "$0")/.." && pwd)"; py="$here/.venv/bin/python"
tmp="$(mktemp -d)"; trap 'git -C "$here" worktree remove --force "$tmp/before" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$here" worktree add --detach --quiet "$tmp/before" "$ref"
for round in $(seq "$rounds"); do
  for side in before after; do
    src="$here"; [ "$side" = before ] && src="$tmp/before"
    echo "$side $round $(cd "$src" && PYTHONPATH="$src" "$py" "$here/bench/git_steps.py" --repeat "$repeat" --json)"
  done
done
