"""Helpers of test_workspace.py that test_git_hardening.py uses too: here at tests/ root, where a test module in any
folder imports them by name."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

MakeRepo = Callable[[Path], Path]


def sh_git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout
