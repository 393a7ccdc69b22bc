"""Reading a file the agent may have made, without following it: a link is its text, a FIFO, device or socket
is never opened (it could block forever or never end), a regular file is read up to a cap.

AWP reads the agent's work tree as root, outside the sandbox: a link to `/dev/zero`, to a FIFO or to a file
of the operator's must read as the link it is, never as what it points at.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

# Past this, a file's fingerprint is its size and modification time, not its content.
FINGERPRINT_CAP_BYTES = 64 * 1024 * 1024


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


def entry_fingerprint(path: Path | str, cap: int = FINGERPRINT_CAP_BYTES) -> bytes:
    """What an untracked entry is, for the work tree's digest: a link's text, a folder, a regular file's
    content hash (size and mtime past `cap`), the kind of anything else (never opened), or missing."""
    try:
        info = os.lstat(path)
    except OSError:
        return b"missing"
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return b"link\0" + os.fsencode(os.readlink(path))
    if stat.S_ISDIR(mode):
        return b"dir"
    if not stat.S_ISREG(mode):
        return b"special\0%o" % stat.S_IFMT(mode)
    if info.st_size > cap:
        return b"large\0%d\0%d" % (info.st_size, info.st_mtime_ns)
    data = read_regular(path, cap + 1)
    return b"missing" if data is None else b"file\0" + hashlib.sha256(data).digest()
