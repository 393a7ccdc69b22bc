#!/usr/bin/env bash
# Install the pinned real agent CLIs from the npm registry into a cache outside the repo, for
# tests/providers/test_real_cli.py. Idempotent: a cache that already holds the pinned versions is kept.
#
#   bash tests/providers/install_real_clis.sh        (AWP_NPM_CACHE overrides ~/.cache/awp/npm)
#
# Fails loudly (non-zero) when npm cannot install them, e.g. the registry refuses.
set -euo pipefail

cache=${AWP_NPM_CACHE:-$HOME/.cache/awp/npm}
packages=("@anthropic-ai/claude-code@2.1.197" "@openai/codex@0.171.0" "opencode-ai@1.18.33"
          "@google/gemini-cli@0.61.0" "@sourcegraph/amp@0.0.1790142911-g7618fb")

installed() {  # name@version -> 0 when that version is in the cache
  local spec=$1 name version
  name=${spec%@*}
  version=${spec##*@}
  [ -f "$cache/node_modules/$name/package.json" ] &&
    grep -q "\"version\": *\"$version\"" "$cache/node_modules/$name/package.json"
}

missing=()
for spec in "${packages[@]}"; do
  installed "$spec" || missing+=("$spec")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_real_clis: cached in $cache: ${packages[*]}"
  exit 0
fi
command -v npm >/dev/null || { echo "install_real_clis: FAILED: npm is not installed" >&2; exit 1; }
mkdir -p "$cache"
if ! npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "${missing[@]}"; then
  echo "install_real_clis: FAILED: npm could not install ${missing[*]} into $cache" >&2
  exit 1
fi
echo "install_real_clis: installed ${missing[*]} into $cache"
