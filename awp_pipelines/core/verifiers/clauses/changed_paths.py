"""`changed_paths_only`: in each repository the allowed entries name, every path that differs from HEAD
(modified, staged, deleted, renamed, untracked) is allowed. One item for the whole clause."""

from __future__ import annotations

import os

from awp_pipelines.core.packet.model.contract import Entry

from ..context import VerifyContext
from ..git import GitError, worktree_changes
from ..paths import locate
from ..report import cap_lines
from .outcome import Outcome

_MAX_LISTED = 40


def changed_paths_only(entries: list[Entry], ctx: VerifyContext) -> Outcome:
    allowed: dict[str, list[str]] = {}
    details: list[str] = []
    for entry in entries:
        # Lexical check only: an allowed name is compared with git's paths, never opened.
        where = locate(entry, ctx, follow_symlinks=False)
        if where.resolved is None:
            details.append(where.error or "")
        else:
            allowed.setdefault(where.repo, []).append(where.path)
    passed = not details

    for repo, paths in allowed.items():
        try:
            changed = worktree_changes(ctx.roots()[repo])
        except GitError as exc:
            passed = False
            details.append(f"{repo}: {exc}")
            continue
        disallowed = [path for path in changed if not is_allowed(path, paths)]
        if disallowed:
            passed = False
            details.append(f"{repo}: {len(disallowed)} changed path(s) not allowed:")
            details += cap_lines([f"  {path}" for path in disallowed], _MAX_LISTED)
        else:
            details.append(f"{repo}: {len(changed)} changed path(s), all allowed")
    only_repo = next(iter(allowed)) if len(allowed) == 1 else None
    return Outcome(passed, details, repo=only_repo)


def is_allowed(changed: str, allowed: list[str]) -> bool:
    """Exact path match; an allowed entry ending in `/` allows everything below that directory."""
    for entry in allowed:
        if entry.endswith("/"):
            prefix = os.path.normpath(entry) + "/"
            if prefix == "./" or changed.startswith(prefix):
                return True
        elif os.path.normpath(entry) == changed:
            return True
    return False
