"""From a work-tree scan to a tree object: secrets first, then blobs, then trees, nothing else.

`check_secrets` reads everything the new tree would store that its base does not (each new blob whole, each
path name, each link's target) and raises SecretInWork before a single object is written: a refused credential
never stays behind in the object store, not even as an unreachable loose object. `write_tree` then stores the
new blobs (streamed from the files, each checked to hash as the scan said) and builds the tree from the base's
subtrees, rewriting only the folders on the way to a change.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from awp_pipelines.core.records.git_repository import WorkspaceError
from awp_pipelines.core.records.secret_scan import (
    SecretHit,
    SecretInWork,
    secret_values,
    secrets_in_bytes,
    secrets_in_name,
)
from awp_pipelines.core.records.work_tree_scan import Entry, TreeScan, stream_regular

_LINK = int(FileMode.LINK)
_TREE = int(FileMode.TREE)


def check_secrets(scan: TreeScan, secrets: Sequence[str], repo_name: str, message: str = "") -> None:
    """SecretInWork when anything the scan's changes would store holds one of `secrets` (nothing is written)."""
    values = secret_values(secrets)
    if not values:
        return
    hits: list[SecretHit] = []
    for path, entry in sorted(scan.changes.items()):
        if entry is None:
            continue
        hits += secrets_in_name(path, values)
        where = scan.root / path
        if entry.mode == _LINK:
            hits += secrets_in_bytes([os.fsencode(os.readlink(where))], values, path + " (its link target)")
        else:
            hits += secrets_in_bytes(stream_regular(where, os.lstat(where).st_size), values, path)
    if message:
        hits += [SecretHit("the commit message", hit.line) for hit in secrets_in_bytes([message.encode()], values, "")]
    if hits:
        raise SecretInWork(repo_name, hits)


def write_tree(repo: pygit2.Repository, scan: TreeScan) -> str:
    """Store the scan's new blobs and the tree they make with the base's unchanged parts: the tree's id."""
    for path, entry in scan.changes.items():
        if entry is not None:
            _write_blob(repo, scan.root / path, entry)
    base = repo[scan.base] if scan.base else None
    return str(_build(repo, base, _nested(scan.changes)))  # type: ignore[arg-type]


def _write_blob(repo: pygit2.Repository, where: Path, entry: Entry) -> None:
    if entry.mode == _LINK:
        oid = repo.create_blob(os.fsencode(os.readlink(where)))
    else:
        chunks = stream_regular(where, os.lstat(where).st_size)
        oid = repo.create_blob_fromiobase(_ChunkReader(chunks))
    if str(oid) != entry.oid:
        raise WorkspaceError(where, ["write-tree"], "the file changed while AWP stored it: nothing committed")


class _ChunkReader(io.RawIOBase):
    """A file-like reader over chunks: libgit2 streams a blob from it."""

    def __init__(self, chunks: object) -> None:
        self._chunks = iter(chunks)  # type: ignore[call-overload]
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._left:
            self._left = next(self._chunks, b"")
            if not self._left:
                return 0
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size


Nested = dict[str, "Entry | None | Nested"]


def _nested(changes: Mapping[str, Entry | None]) -> Nested:
    """`a/b/c` → {'a': {'b': {'c': entry}}}; a path set to None and with changes below (a file that became a
    folder) keeps only the changes below, built on no base."""
    root: Nested = {}
    for path, entry in sorted(changes.items()):
        node = root
        *folders, name = path.split("/")
        for folder in folders:
            child = node.get(folder)
            if not isinstance(child, dict):
                child = node[folder] = {}
            node = child
        if not (entry is None and isinstance(node.get(name), dict)):
            node[name] = entry
    return root


def _build(repo: pygit2.Repository, base: pygit2.Tree | None, changes: Nested) -> pygit2.Oid:
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    for name, change in changes.items():
        old = base[name] if base is not None and name in base else None
        if isinstance(change, dict):
            subtree = repo[old.id] if old is not None and old.filemode == _TREE else None
            oid = _build(repo, subtree, change)  # type: ignore[arg-type]
            if len(repo[oid]) == 0:  # type: ignore[arg-type]
                if old is not None:
                    builder.remove(name)
            else:
                builder.insert(name, oid, _TREE)
        elif change is None:
            if old is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=change.oid), change.mode)
    return builder.write()
