"""`commands.regenerates`: move the old outputs aside, require fresh ones, put the old ones back on failure.

Moving (not copying) the old file aside is what makes "fresh" checkable: whatever exists afterwards was
written by the command. The backup sits next to the file so the move is an atomic rename, and a backup left
by a crash is recovered on the next run before anything else happens.

The command is the agent's code (it runs in the verifier's sandbox, with the tree read-write): afterwards
AWP touches an output only while its folder still lies inside the repository, so a folder swapped for a
symlink by the command never leads AWP's unlink or rename outside; and an output counts only as a regular
file of its own (never a link, a FIFO or a device).
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from ..paths import is_within

BACKUP_SUFFIX = ".awp-verifier-backup"


class StagingError(Exception):
    """The outputs could not be moved aside; the command must not run (a verifier fault)."""


@dataclass(frozen=True)
class Staged:
    path: Path
    backup: Path
    existed: bool
    root: Path  # the repository the output must stay in

    def inside(self) -> bool:
        """Its folder still resolves inside the repository (the command may have replaced it by a link)."""
        return is_within(self.path.parent, self.root)


def stage(paths: list[Path], root: Path) -> list[Staged]:
    staged: list[Staged] = []
    try:
        for path in dict.fromkeys(paths):
            staged.append(_stage_one(path, root))
    except StagingError:
        restore(staged)
        raise
    except OSError as exc:
        restore(staged)
        raise StagingError(f"could not move regenerated output aside: {exc}") from exc
    return staged


def _stage_one(path: Path, root: Path) -> Staged:
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if os.path.lexists(backup):
        if os.path.lexists(path):
            raise StagingError(f"both {path} and a leftover backup {backup} exist; resolve by hand")
        backup.rename(path)  # a crashed run's backup: the file it protected comes back first
    if path.is_dir() and not path.is_symlink():
        raise StagingError(f"regenerated output is a directory, expected a file: {path}")
    existed = os.path.lexists(path)
    if existed:
        path.rename(backup)
    return Staged(path, backup, existed, root)


def escaped(staged: list[Staged]) -> list[Path]:
    """Outputs whose folder the command turned into a way out of the repository."""
    return [s.path for s in staged if not s.inside()]


def missing_outputs(staged: list[Staged]) -> list[Path]:
    """Outputs that are not a regular, non-empty file of their own after the command."""
    return [s.path for s in staged if not _fresh(s.path)]


def _fresh(path: Path) -> bool:
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size > 0


def commit(staged: list[Staged]) -> None:
    """The command succeeded: the backups are no longer needed."""
    for record in staged:
        if record.inside() and os.path.lexists(record.backup):
            record.backup.unlink()


def restore(staged: list[Staged]) -> None:
    """Undo: remove what the command wrote and put each previous file back (never through a swapped folder)."""
    for record in staged:
        if not record.inside():
            continue
        if record.path.is_dir() and not record.path.is_symlink():
            shutil.rmtree(record.path)
        elif os.path.lexists(record.path):
            record.path.unlink()
        if record.existed and os.path.lexists(record.backup):
            record.backup.rename(record.path)
