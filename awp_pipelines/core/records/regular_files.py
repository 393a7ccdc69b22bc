"""Reading a file the agent may have made, without following it: a link is its text, a FIFO, device or socket
is never opened (it could block forever or never end), a regular file is read up to a cap.

AWP reads the agent's work tree as root, outside the sandbox: a link to `/dev/zero`, to a FIFO or to a file
of the operator's must read as the link it is, never as what it points at.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_regular(path: Path | str, cap: int) -> bytes | None:
    """The first `cap` bytes of `path` when it is a regular file (not a link); None for anything else. Opened
    with O_NOFOLLOW | O_NONBLOCK and checked again on the open descriptor, so a swap between the two never
    reads a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_at_most(fd, cap)
    finally:
        os.close(fd)


def read_at_most(fd: int, cap: int) -> bytes:
    """Up to `cap` bytes from an open descriptor, in chunks of a MiB: a file that grows while it is read stops at
    the cap."""
    chunks, left = [], cap
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
