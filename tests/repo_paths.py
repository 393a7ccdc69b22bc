"""Where the repository and its tests are, for a test module at any depth under tests/: a module never counts
its way up from its own `__file__`, so moving it to another folder changes nothing."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
