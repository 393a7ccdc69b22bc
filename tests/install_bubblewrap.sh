#!/usr/bin/env bash
# Debian's bubblewrap (`bwrap`): the sandbox every CLI and `command` agent runs in (awp_pipelines/core/isolation).
# Idempotent; installs only as root. Without it, each sandboxed Attempt fails at provisioning naming the fix.
set -euo pipefail
if command -v bwrap >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "install_bubblewrap: bwrap is missing: install bubblewrap (Debian/Ubuntu: sudo apt-get install -y" \
       "bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap); macOS has none:" \
       "run agents on Linux, or write \`isolation: none\` (unsandboxed) on the provider" >&2
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
echo "install_bubblewrap: installed Debian's bubblewrap ($(bwrap --version))"
