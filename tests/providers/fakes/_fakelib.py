"""Shared by the fake CLIs: the scenario, prompt directives, an env dump, file writes, JSON lines.

The scenario comes from a prompt line `awp-fake-scenario: NAME`, else from the credential's value
(`...scenario-NAME...`): the agent's environment is an allowlist, so no test-only variable reaches us.
`awp-fake-scenario-on: PART = NAME` picks NAME when the model asked for contains PART.
Other prompt lines: `awp-fake-write: PATH = TEXT` writes a file under cwd; `awp-fake-env-dump: FILE`
writes this process's environment as JSON.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def directives(prompt: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in prompt.splitlines():
        match = re.match(r"\s*awp-fake-([a-z-]+):\s*(.*)$", line)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2).strip())
    return found


def scenario(prompt: str, credential: str | None, model: str | None = None) -> str:
    for spec in directives(prompt).get("scenario-on", []):  # `awp-fake-scenario-on: MODEL-PART = NAME`
        part, _, name = spec.partition("=")
        if model and part.strip() in model:
            return name.strip()
    given = directives(prompt).get("scenario")
    if given:
        return given[0]
    match = re.search(r"scenario-([a-z_]+)", credential or "")
    return match.group(1) if match else "success"


def side_effects(prompt: str) -> list[str]:
    """Apply env dumps and writes; return the paths written."""
    d = directives(prompt)
    for target in d.get("env-dump", []):
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(dict(os.environ), fh)
    written = []
    for spec in d.get("write", []):
        path, _, text = spec.partition("=")
        path = path.strip()
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text.strip() + "\n")
        written.append(path)
    return written


def hang() -> None:
    """No events, ever: a child that would outlive us unless the whole group is killed."""
    subprocess.Popen(["sleep", "300"])
    time.sleep(300)


def value_after(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None
