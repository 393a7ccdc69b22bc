#!/usr/bin/env bash
# The browser tests drive Debian's chromium through playwright (executable_path=/usr/bin/chromium); they never
# download a browser (`playwright install` is not used). Install chromium when it is missing: as root with apt,
# otherwise say how. Never fails the test run: without chromium the UI tests skip with the same hint.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "install_browser.sh: installing Debian's chromium for the UI tests" >&2
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    exit 0
  fi
  echo "install_browser.sh: apt-get could not install chromium; the UI tests will skip" >&2
  exit 0
fi
echo "install_browser.sh: chromium is missing; install it with: sudo apt-get update && sudo apt-get install -y chromium" >&2
