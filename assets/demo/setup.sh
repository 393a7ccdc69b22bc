#!/usr/bin/env bash
# Make a fresh ./workspace git repo for the demo packet (the packet's `docs` repo).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$here/workspace"
mkdir -p "$here/workspace"
cd "$here/workspace"
git init --quiet --initial-branch=main
git config user.name "AWP Demo"
git config user.email "demo@awp.invalid"
echo "# Demo docs" > README.md
git add README.md
git commit --quiet -m "Add README"
echo "demo workspace ready: $here/workspace"
