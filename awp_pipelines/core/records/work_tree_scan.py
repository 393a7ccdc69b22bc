"""The work tree as AWP itself reads it, against a base tree: what changed, computed without git's index.

One walk of the tree beside the base tree (a commit's tree, or none): each entry read with lstat, never
followed; a regular file hashed as a blob by streaming it (a file as large as it likes is never loaded whole),
with its executable bit; a link as its text; a FIFO, device or socket skipped and reported, never opened. What
git would ignore (`.gitignore`, `info/exclude`: libgit2's rules) is left out unless the base tracks it.

What the walk never enters: any `.git` (the tree's own, and a nested repository's: its other files are work
like any other, its git dir is not), and the folder of a submodule the base tree records (a gitlink stays what
the base says: AWP moves no submodule). A `.gitignore` or `.gitattributes` that is not a small regular file is
refused before libgit2 reads it (a link would be followed, a FIFO would block it).

Nothing here writes to the repository: hashing is done in Python (`blob <size>\\0` + bytes), so the object store
receives nothing before the secret scan has passed (tree_writer.py).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from awp_pipelines.core.records.git_repository import WorkspaceError

CHUNK = 1 << 20
RULE_FILES = (".gitignore", ".gitattributes")
RULE_FILE_CAP = 4 * 1024 * 1024
_GITLINK = int(FileMode.COMMIT)
_TREE = int(FileMode.TREE)
_LINK = int(FileMode.LINK)
_BLOB = int(FileMode.BLOB)
_EXEC = int(FileMode.BLOB_EXECUTABLE)

# (device, inode, size, mtime, ctime) → blob id: a file hashed once per process is not read again while it is
# unchanged. ctime is set by the kernel on every change and cannot be set back by the agent.
_HASHED: dict[tuple[int, int, int, int, int], str] = {}
_HASHED_MAX = 200_000


@dataclass(frozen=True)
class Entry:
    """One work-tree path as AWP will store it: its mode (blob, executable, link) and blob id."""

    mode: int
    oid: str


@dataclass
class TreeScan:
    """The work tree against its base: `changes` maps a path to its new entry, or None where the base's
    entry (a file or a whole folder) is gone; `skipped` names what is not stored and why."""

    root: Path
    base: str | None  # the base tree's id
    changes: dict[str, Entry | None] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return sorted(self.changes)


class UnsafeTree(WorkspaceError):
    """The tree holds a rule file libgit2 would follow or block on: nothing is read past it."""


def blob_id(path: Path | str, info: os.stat_result) -> str:
    """The blob id of a regular file, streamed; opened without following and checked on the descriptor."""
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _HASHED.get(key)
    if known is not None:
        return known
    digest = hashlib.sha1(b"blob %d\0" % info.st_size)
    read = 0
    for chunk in stream_regular(path, info.st_size):
        digest.update(chunk)
        read += len(chunk)
    if read != info.st_size:
        raise WorkspaceError(path, ["hash"], "the file changed while AWP read it")
    oid = digest.hexdigest()
    if len(_HASHED) >= _HASHED_MAX:
        _HASHED.clear()
    _HASHED[key] = oid
    return oid


def stream_regular(path: Path | str, size: int) -> Iterator[bytes]:
    """The bytes of a regular file, at most `size` of them, a chunk at a time: O_NOFOLLOW | O_NONBLOCK, and the
    open descriptor must be a regular file (a swap between lstat and open never reads a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise WorkspaceError(path, ["read"], f"cannot open: {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WorkspaceError(path, ["read"], "not a regular file any more")
        left = size
        while left > 0:
            chunk = os.read(fd, min(left, CHUNK))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    finally:
        os.close(fd)


def link_id(target: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(target) + target).hexdigest()


def scan(repo: pygit2.Repository, root: Path | str, base: pygit2.Tree | None) -> TreeScan:
    """The work tree at `root` against the tree `base` (None: an empty tree)."""
    top = Path(os.path.abspath(root))
    found = TreeScan(root=top, base=str(base.id) if base is not None else None)
    _walk(repo, top, "", base, found)
    found.skipped.sort()
    return found


def _entries(tree: pygit2.Tree | None) -> dict[str, pygit2.Object]:
    return {obj.name: obj for obj in tree} if tree is not None else {}  # type: ignore[misc]


def _check_rules(folder: Path, rel: str) -> None:
    for name in RULE_FILES:
        try:
            info = os.lstat(folder / name)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > RULE_FILE_CAP:
            what = "a link" if stat.S_ISLNK(info.st_mode) else "not a regular file" if not stat.S_ISREG(
                info.st_mode) else f"over {RULE_FILE_CAP} bytes"
            raise UnsafeTree(folder / name, ["scan"], f"{rel + '/' if rel else ''}{name} is {what}: AWP does not "
                             "read it (git's rules would follow or block on it); make it a regular file or remove it")


def _walk(repo: pygit2.Repository, top: Path, rel: str, tree: pygit2.Tree | None, found: TreeScan) -> None:
    folder = top / rel if rel else top
    _check_rules(folder, rel)
    base = _entries(tree)
    try:
        listing = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as err:
        raise WorkspaceError(folder, ["scan"], f"cannot list: {err.strerror}") from None
    seen: set[str] = set()
    for item in listing:
        name = item.name
        path = f"{rel}/{name}" if rel else name
        if name.lower() == ".git":
            if rel:  # a nested repository's git dir: never entered, never stored (git refuses the name anyway)
                found.skipped.append(f"{path} (a nested repository's git dir: its files are stored, not its .git)")
            continue
        old = base.get(name)
        if old is not None and old.filemode == _GITLINK:  # an operator's submodule: kept as the base has it
            seen.add(name)
            continue
        info = item.stat(follow_symlinks=False)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            subtree = old if old is not None and old.filemode == _TREE else None
            if subtree is None and repo.path_is_ignored(path + "/"):
                continue
            if subtree is not None:
                seen.add(name)
            if old is not None and subtree is None:  # a file became a folder
                found.changes[path] = None
            _walk(repo, top, path, subtree, found)  # type: ignore[arg-type]
            continue
        if stat.S_ISLNK(mode):
            entry = Entry(_LINK, link_id(os.fsencode(os.readlink(item.path))))
        elif stat.S_ISREG(mode):
            entry = Entry(_EXEC if mode & stat.S_IXUSR else _BLOB, blob_id(item.path, info))
        else:
            found.skipped.append(f"{path} (a {_kind(mode)}: not stored)")
            continue
        if old is None and repo.path_is_ignored(path):
            continue
        seen.add(name)
        if old is None or old.filemode != entry.mode or str(old.id) != entry.oid:
            found.changes[path] = entry
    for name in base:
        if name not in seen:
            found.changes[f"{rel}/{name}" if rel else name] = None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "special file"
