"""Read a file the agent wrote, as untrusted input: a regular file only, never blocking, never unbounded.

The file clauses (`contains`, `matches`, `json`, `yaml`, `doc`) and `source_absent` read what the agent left
in its tree, in AWP's own process. A FIFO would block that read forever, a device (`/dev/zero`, reached
through a symlink) would never end, a socket cannot be read at all: each is refused with the reason. The
open itself cannot block (O_NONBLOCK: a FIFO with no writer would otherwise hang in open()), and the last
component is never followed (O_NOFOLLOW on the path that `paths.locate` already resolved and checked), so a
link swapped in after the check is refused rather than read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from awp_pipelines.core.records.regular_files import read_at_most

MAX_READ_BYTES = 10 * 1024 * 1024  # 10 MiB: far above any contract's text file, far below a runaway write

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"))


class Refused(Exception):
    """The file is not one the verifier reads; the message names the path and why."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path, cap: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file `path` (symlinks in it resolved first: `locate` has checked where they
    lead). Raises FileNotFoundError when it is missing, Refused for anything else a verifier must not read."""
    real = os.path.realpath(path)
    try:
        before = os.lstat(real)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Refused(f"unreadable file ({exc.strerror or exc}): {path}") from exc
    if not stat.S_ISREG(before.st_mode):
        raise Refused(f"not a regular file ({_kind(before.st_mode)}): {path}; a verifier reads regular files only")
    if before.st_size > cap:
        raise Refused(f"file too large ({before.st_size} bytes, over the {cap}-byte cap): {path}")
    try:
        fd = os.open(real, _FLAGS)
    except OSError as exc:  # ELOOP: a symlink swapped in after the check
        raise Refused(f"unreadable file ({exc.strerror or exc}): {path}") from exc
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # replaced between lstat and open
            raise Refused(f"not a regular file ({_kind(opened.st_mode)}): {path}; a verifier reads regular files "
                          "only")
        data = read_at_most(fd, cap + 1)  # one byte past the cap tells a file that grew while it was read
    finally:
        os.close(fd)
    if len(data) > cap:  # grew while it was read
        raise Refused(f"file too large (over the {cap}-byte cap): {path}")
    return data
