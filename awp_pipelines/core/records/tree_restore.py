"""Writing a tree object into an agent-shaped work tree without following a link: AWP's `reset --hard` and
`clean -fd`, and the replay of a checkpoint.

libgit2's checkout writes through a folder the agent replaced by a link (a tracked `src/a.py` lands in wherever
`src` points), so AWP writes the tree itself, one path at a time, from a descriptor of the tree's top: each
folder on the way opened with O_NOFOLLOW | O_DIRECTORY, and anything else in its place (a link, a file, a FIFO)
unlinked — the link itself, never what it names — and made a folder; each file created with O_EXCL | O_NOFOLLOW.
A removal unlinks the entry it names, under folders opened the same way. Ignored files stay, as `git clean -fd`
leaves them; so does a nested repository's `.git`, which AWP never enters.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from awp_pipelines.core.records.git_repository import WorkspaceError
from awp_pipelines.core.records.work_tree_scan import scan

_LINK = int(FileMode.LINK)
_TREE = int(FileMode.TREE)
_EXEC = int(FileMode.BLOB_EXECUTABLE)
_GITLINK = int(FileMode.COMMIT)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def materialize(repo: pygit2.Repository, root: Path | str, tree: pygit2.Tree) -> list[str]:
    """Make the work tree at `root` hold `tree` (plus its ignored files): the paths written or removed."""
    top = Path(os.path.abspath(root))
    found = scan(repo, top, tree)
    for path, entry in sorted(found.changes.items(), reverse=True):  # removals, deepest first
        if entry is not None and _lookup(tree, path) is None:
            _remove(top, path)
    for path in sorted(found.changes):
        wanted = _lookup(tree, path)
        if wanted is not None:
            _write(repo, top, path, wanted)
    return sorted(found.changes)


def _lookup(tree: pygit2.Tree, path: str) -> pygit2.Object | None:
    try:
        return tree[path]
    except KeyError:
        return None


@contextmanager
def _folder(top: Path, parts: list[str], create: bool) -> Iterator[int | None]:
    """A descriptor of the folder `parts` under `top`, each step opened without following; with `create`, a
    non-folder in the way is unlinked and a folder made. None (without `create`) when the way is not folders."""
    fds = [os.open(top, _DIR_FLAGS)]
    try:
        for name in parts:
            try:
                fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
                continue
            except OSError as err:
                if not create:
                    yield None
                    return
                if err.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    raise
                missing = err.errno == errno.ENOENT
            if not missing:
                os.unlink(name, dir_fd=fds[-1])  # a link, file or FIFO where a folder belongs: itself, not its target
            os.mkdir(name, 0o777, dir_fd=fds[-1])
            fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
        yield fds[-1]
    finally:
        for fd in reversed(fds):
            os.close(fd)


def _clear(top: Path, parts: list[str], fd: int, name: str) -> None:
    """Remove whatever is at `name` in the folder `fd`: a link or file unlinked, a real folder removed whole."""
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(top.joinpath(*parts, name))  # a real folder (lstat): rmtree unlinks links inside, never follows
    else:
        os.unlink(name, dir_fd=fd)


def _remove(top: Path, path: str) -> None:
    *parts, name = path.split("/")
    with _folder(top, parts, create=False) as fd:
        if fd is not None:
            _clear(top, parts, fd, name)
    _prune_empty(top, parts)


def _prune_empty(top: Path, parts: list[str]) -> None:
    """Folders left empty by a removal go, as `git clean -fd` removes untracked folders."""
    while parts:
        *parent, name = parts
        with _folder(top, parent, create=False) as fd:
            if fd is None:
                return
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                return
        parts = parent


def _write(repo: pygit2.Repository, top: Path, path: str, obj: pygit2.Object) -> None:
    *parts, name = path.split("/")
    if obj.filemode == _GITLINK:  # a submodule's folder: AWP moves no submodule
        return
    if obj.filemode == _TREE:
        for child in repo[obj.id]:  # type: ignore[attr-defined]
            _write(repo, top, f"{path}/{child.name}", child)
        return
    blob = repo[obj.id]
    with _folder(top, parts, create=True) as fd:
        assert fd is not None
        _clear(top, parts, fd, name)
        if obj.filemode == _LINK:
            os.symlink(blob.data, name, dir_fd=fd)  # type: ignore[attr-defined]
            return
        mode = 0o777 if obj.filemode == _EXEC else 0o666
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        try:
            with pygit2.BlobIO(blob) as stream:  # type: ignore[arg-type]
                while chunk := stream.read(1 << 20):
                    os.write(out, chunk)
        except OSError as err:
            raise WorkspaceError(top / path, ["reset"], f"cannot write: {err.strerror}") from None
        finally:
            os.close(out)
