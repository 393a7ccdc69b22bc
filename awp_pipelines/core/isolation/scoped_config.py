"""A config folder the agent may use but never change for anyone else: a scoped copy, discarded after.

A CLI's config folder (the operator's own `~/.claude`, or an account's folder shared by every packet that uses
the account) holds what the CLI later runs as the operator: hooks in `settings.json`, MCP servers, commands.
The Attempt gets a copy of it, bound at the original's place, read-write (the CLI writes its sessions and
caches there); after the session the copy is compared with the original (the changed names are reported) and
removed. The credential files are bound from the original on top of the copy: read-only for the operator's own
login, read-write for a named account (a refreshed token must outlive the Attempt; a credential is data, never
run). History folders (transcripts, logs, caches) are not copied: the agent needs none of it.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import stat
from pathlib import Path

from awp_pipelines.core.isolation.grants import GrantMode, PathGrant

# The files each CLI keeps its login in, relative to its config folder.
CREDENTIAL_FILES: dict[str, tuple[str, ...]] = {
    "claude_code": (".credentials.json",),
    "codex": ("auth.json",),
    "gemini": ("oauth_creds.json", "google_accounts.json"),
    "opencode": ("auth.json",),
}
# History, not configuration: never copied (large, and none of the agent's business).
NOT_COPIED = frozenset({"projects", "sessions", "logs", "log", "cache", "statsig", "todos", "shell-snapshots",
                        "file-history", "history.jsonl", "debug", "tmp", "ide", "snapshots", "storage"})
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_COPY_BYTES = 64 * 1024 * 1024


def _copy(original: Path, copy: Path, credentials: frozenset[str]) -> None:
    budget = [MAX_COPY_BYTES]

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            path = os.path.join(folder, name)
            if name in NOT_COPIED or (folder == str(original) and name in credentials):
                skipped.add(name)
            elif os.path.isfile(path) and not os.path.islink(path):
                size = os.path.getsize(path)
                if size > MAX_FILE_BYTES or size > budget[0]:
                    skipped.add(name)
                else:
                    budget[0] -= size
        return skipped

    shutil.copytree(original, copy, symlinks=True, ignore=ignore, dirs_exist_ok=True)


def scoped_config(original: Path, copy: Path, *, kind: str, credential_mode: GrantMode, why: str) -> list[PathGrant]:
    """Copy `original` to `copy` and grant the copy at `original`'s place, the credential files over it.
    A missing original is created empty in the copy only (the CLI may write its first login there, discarded)."""
    credentials = frozenset(CREDENTIAL_FILES.get(kind, ()))
    copy.mkdir(parents=True, exist_ok=True, mode=0o700)
    if original.is_dir():
        _copy(original, copy, credentials)
    grants = [PathGrant(path=str(original), source=str(copy), mode="rw", why=f"{why} (a scoped copy, discarded)")]
    for name in sorted(credentials):
        if (original / name).is_file():
            (copy / name).touch()  # the mount point
            grants.append(PathGrant(path=str(original / name), mode=credential_mode, why=f"{why}: its credential"))
    return grants


def changed_names(original: Path, copy: Path, *, kind: str) -> list[str]:
    """What the Attempt wrote in its copy (relative paths, sorted): files added or changed against the original,
    outside the credentials bound from the original (their place in the copy is an empty mount point)."""
    credentials = set(CREDENTIAL_FILES.get(kind, ()))
    changed = []
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), copy)
            if rel in credentials:
                continue
            ours, theirs = os.path.join(folder, name), original / rel
            # Never read through a link or a special file the agent made (a FIFO, /dev/zero): it is a change.
            if not stat.S_ISREG(os.lstat(ours).st_mode) or theirs.is_symlink() or not theirs.is_file() \
                    or not filecmp.cmp(ours, theirs, shallow=False):
                changed.append(rel)
    return sorted(changed)


def discard(copy: Path) -> None:
    shutil.rmtree(copy, ignore_errors=True)
